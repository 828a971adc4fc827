#!/usr/bin/env bash
# The band recipe with an earlier binary (BEFORE) and build/linformer, alternating, fp32, on an idle
# machine, into OUTPUT (default before_after.txt: BEFORE the build of 4b1b11e, before the band's
# loops were vectorised; rows_before_after.txt: BEFORE the build of 7d288a3, whose band's last
# block still computed every row).
# Usage: [OUTPUT=NAME] BEFORE=/path/to/linformer results/2026-11-29_zen5_local_band/before_after.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-29_zen5_local_band
recipe=recipes/brown/warmup/linformer_n512_k64_band4_long_sinusoidal_warmup128.toml
for round in $(seq "${ROUNDS:-5}"); do
  for binary in "${BEFORE:?set BEFORE to the earlier binary}" build/linformer; do
    echo "round $round $($binary --version | head -1): $("$binary" bench train --recipe "$recipe" \
      --set train.precision=fp32 --steps 8 | grep -E '^throughput|own loops' | tr -s ' ' | tr '\n' ' ')"
  done
done | tee "$out/${OUTPUT:-before_after.txt}"
