#!/usr/bin/env bash
# What the local band costs per update: issue 50's best remedy (Linformer k = 64 with a band of
# w = 4, recipes/brown/warmup/linformer_n512_k64_band4_long_sinusoidal_warmup128.toml, n = 512)
# against the same recipe without the band (model.local_window = 0, the plain Linformer of
# k_n512_warmup) and with full attention (the Transformer of the same shape), fp32 (the band runs
# in fp32 only), `bench train` on synthetic batches of the recipe's shape, alternating the three in
# each round, on an idle machine. Writes LABEL/ (before: the binary of 4b1b11e; after: with the
# band's loops vectorised; rows: with the band's last block on the masked rows only), medians over
# the rounds in LABEL/summary.txt.
# Usage: results/2026-11-29_zen5_local_band/run.sh LABEL   (runs build/linformer)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-29_zen5_local_band/${1:?usage: run.sh LABEL (before, after or rows)}
mkdir -p "$out"
recipe=recipes/brown/warmup/linformer_n512_k64_band4_long_sinusoidal_warmup128.toml
scripts/machine_info.sh > "$out/machine.txt"
build/linformer --version >> "$out/machine.txt"
rounds=${ROUNDS:-5}
steps=${STEPS:-8}
for round in $(seq "$rounds"); do
  for variant in band plain full; do
    case $variant in
      band) sets=() ;;
      plain) sets=(--set model.local_window=0) ;;
      full) sets=(--set model.local_window=0 --set model.attention=full) ;;
    esac
    build/linformer bench train --recipe "$recipe" "${sets[@]}" --set train.precision=fp32 \
      --steps "$steps" --json "$out/$variant.round$round.json" > "$out/$variant.round$round.txt"
    echo "round $round $variant: $(grep -E '^throughput' "$out/$variant.round$round.txt")"
  done
done | tee "$out/rounds.txt"
# Medians over the rounds, from the JSON files (summary.txt).
/usr/bin/python3 - "$out" "$rounds" > "$out/summary.txt" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print("variant  median tokens/s  median step ms  GFLOP/s (matmul)  of peak  last-block rows  peak RSS MB")
medians = {}
for variant in ("band", "plain", "full"):
    runs = [json.load(open(f"{out}/{variant}.round{r}.json")) for r in range(1, rounds + 1)]
    tps = statistics.median(r["tokens_per_second"] for r in runs)
    step = statistics.median(r["step_seconds"]["median"] * 1e3 for r in runs)
    gflops = statistics.median(r["train_gflops_per_second"] for r in runs)
    peak = statistics.median(r["fraction_of_measured_peak"] for r in runs)
    medians[variant] = tps
    print(f"{variant:7s} {tps:16.0f} {step:15.1f} {gflops:17.1f} {peak:8.1%} {runs[0]['last_block_rows']:16d}"
          f" {max(r['peak_rss_kb'] for r in runs) / 1024:12.0f}")
print(f"band / plain tokens/s: {medians['band'] / medians['plain']:.3f}; band / full: {medians['band'] / medians['full']:.3f}")
PY
cat "$out/summary.txt"
