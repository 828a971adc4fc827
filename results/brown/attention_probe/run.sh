#!/usr/bin/env bash
# What trained encoders' attention does (scripts/attention_probe.py), on the checkpoints these runs
# leave in runs/experiments/ (weights are not committed: re-create a run from its recipe with
# `scripts/run_experiments.sh EXPERIMENT` to measure it again). Reads weights and the valid split
# only; one thread, a few minutes.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=results/brown/attention_probe
R=runs/experiments
probe() {  # NAME RUN...
  local name=$1
  shift
  OMP_NUM_THREADS=1 /usr/bin/python3 scripts/attention_probe.py "$@" --prepared data/prepared/brown --blocks 16 \
    --json "$out/$name.json" > "$out/$name.txt"
}
# n = 128, the main job's shape: full attention with the warm-up (s26, seeds 2 and 3), without it
# (s20), and the frozen identity Linformer at k = n (s20_k128_identity: full attention's function
# with padding kept as keys).
probe n128 "$R/s26_s25_full_attention_seed2" "$R/s26_s25_full_attention_seed3" "$R/s20_full_attention" \
  "$R/s20_k128_identity"
# n = 512 with the warm-up: the Transformer (seeds 2 and 3) and the remedies (E and F started
# local at k = 128 and 256).
probe n512 "$R/transformer_n512_long_sinusoidal_warmup128_seed2" "$R/transformer_n512_long_sinusoidal_warmup128_seed3" \
  "$R/linformer_n512_k128_local_long_sinusoidal_warmup128" "$R/linformer_n512_k256_local_long_sinusoidal_warmup128"
# n = 512 with the warm-up, Linformer k = 64 with a local band of w = 4 (band_n512_warmup; seeds 2
# and 3 of seeds_n512_band once finished: their results committed): how much of each head's
# attention goes to the band, and its value mix.
band=()
for run in linformer_n512_k64_band4_long_sinusoidal_warmup128{,_seed2,_seed3}; do
  if [[ -f results/brown/runs/$run/run.json ]]; then band+=("$R/$run"); fi
done
probe n512_band "${band[@]}"
