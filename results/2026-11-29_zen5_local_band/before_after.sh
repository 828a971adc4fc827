#!/usr/bin/env bash
# The band recipe with the binary before its loops were vectorised (BEFORE, the build of 4b1b11e)
# and after (build/linformer), alternating, fp32, on an idle machine: before_after.txt.
# Usage: BEFORE=/path/to/linformer_4b1b11e results/2026-11-29_zen5_local_band/before_after.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=results/2026-11-29_zen5_local_band
recipe=recipes/brown/warmup/linformer_n512_k64_band4_long_sinusoidal_warmup128.toml
for round in $(seq "${ROUNDS:-5}"); do
  for binary in "${BEFORE:?set BEFORE to the earlier binary}" build/linformer; do
    echo "round $round $($binary --version | head -1): $("$binary" bench train --recipe "$recipe" \
      --set train.precision=fp32 --steps 8 | grep -E '^throughput|own loops' | tr -s ' ' | tr '\n' ' ')"
  done
done | tee "$out/before_after.txt"
