#!/usr/bin/env bash
# S/M as recipes/bench/*.toml since 2026-11-28 (the same resolved recipe as the --set chain this was measured with)
# PyTorch's OpenMP waiting, and the comparison again with PyTorch's default:
#   1. scripts/bench_torch.py alone with OMP_WAIT_POLICY=passive (what bench_compare.sh forced
#      until 2026-11-28), active and unset (PyTorch's default), alternating, 3 rounds, for config S
#      (Linformer k = 128 and full attention) and M, bf16 autocast and fp32 -> waiting.txt;
#   2. scripts/bench_compare.sh with PyTorch's default waiting, 3 rounds a configuration ->
#      torch_{S_linformer,S_full,M}_{bf16,fp32}.txt.
# Usage: results/2026-11-28_zen4_torch_waiting/run.sh   (an idle machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-28_zen4_torch_waiting
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${SKIP_WAITING:-0}" != 1 ]; then
  common=(--steps 1)
  build/linformer bench train --recipe recipes/bench/S.toml "${common[@]}" --json "$tmp/s.json" > /dev/null
  build/linformer bench train --recipe recipes/bench/S_full.toml "${common[@]}" --json "$tmp/sf.json" > /dev/null
  build/linformer bench train --recipe recipes/bench/M.toml "${common[@]}" --json "$tmp/m.json" > /dev/null
  for cfg in m s sf; do
    steps=8; [ $cfg = m ] && steps=4
    for precision in bf16 fp32; do
      for round in 1 2 3; do
        for wait in passive active unset; do
          wait_env=(env OMP_WAIT_POLICY=$wait); [ $wait = unset ] && wait_env=(env -u OMP_WAIT_POLICY)
          "${wait_env[@]}" /usr/bin/python3 scripts/bench_torch.py --from "$tmp/$cfg.json" --steps $steps \
            --precision $precision --json "$tmp/${cfg}_${precision}_${wait}_$round.json" > /dev/null
        done
      done
    done
  done
  /usr/bin/python3 - "$tmp" > "$out/waiting.txt" <<'PY'
import json, statistics, sys
tmp = sys.argv[1]
names = {"s": "S Linformer", "sf": "S full attention", "m": "M"}
print("PyTorch tokens/s by OMP_WAIT_POLICY: median of 3 alternating rounds (the rounds)")
for cfg in ("s", "sf", "m"):
    for p in ("bf16", "fp32"):
        cells = []
        for w in ("passive", "active", "unset"):
            v = [json.load(open(f"{tmp}/{cfg}_{p}_{w}_{r}.json"))["tokens_per_second"] for r in (1, 2, 3)]
            cells.append(f"{w} {statistics.median(v):.0f} ({', '.join(f'{x:.0f}' for x in v)})")
        print(f"{names[cfg]:17s} {p}: " + " | ".join(cells))
PY
fi
for precision in bf16 fp32; do
  export PRECISION=$precision ROUNDS=3
  STEPS=8 scripts/bench_compare.sh recipes/bench/S.toml > "$out/torch_S_linformer_$precision.txt" 2>&1
  STEPS=8 scripts/bench_compare.sh recipes/bench/S_full.toml \
    > "$out/torch_S_full_$precision.txt" 2>&1
  STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml > "$out/torch_M_$precision.txt" 2>&1
done
# M again, 5 rounds each.
for precision in bf16 fp32; do
  PRECISION=$precision ROUNDS=5 STEPS=4 scripts/bench_compare.sh recipes/bench/M.toml \
    > "$out/torch_M_${precision}_again.txt" 2>&1
done
