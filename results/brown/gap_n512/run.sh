#!/usr/bin/env bash
# Issue 50's figure: validation perplexity against updates at n = 512 with the sequence-length
# warm-up, for the Transformer, the plain Linformer k = 64 (random E and F), and the remedies (k = 64
# with a local band of w = 4; k = 256 with E and F started local), each at every seed whose results
# are committed (results/brown/runs/<run>/). Lines: geometric mean over seeds; bands: lowest to
# highest seed; dashed: 1.25x the Transformer's final value (the goal). Reads committed metrics only.
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=results/brown/runs
seeds() {  # RUN: the run and its _seed2, _seed3 twins that have results
  for run in "$R/$1" "$R/$1_seed2" "$R/$1_seed3"; do
    if [[ -f $run/run.json ]]; then echo "$run"; fi
  done
}
mapfile -t transformer < <(seeds transformer_n512_long_sinusoidal_warmup128)
mapfile -t plain < <(seeds linformer_n512_k64_long_sinusoidal_warmup128)
mapfile -t band < <(seeds linformer_n512_k64_band4_long_sinusoidal_warmup128)
mapfile -t local256 < <(seeds linformer_n512_k256_local_long_sinusoidal_warmup128)
/usr/bin/python3 scripts/plot_seed_bands.py --model "Transformer" "${transformer[@]}" \
  --model "Linformer k = 64" "${plain[@]}" \
  --model "Linformer k = 64 + local band (w = 4)" "${band[@]}" \
  --model "Linformer k = 256, E and F started local" "${local256[@]}" \
  --goal 1.25 --out results/brown/gap_n512/curves \
  --title "n = 512, warm-up: validation perplexity (lines: geometric mean over seeds; bands: lowest to highest seed)"
