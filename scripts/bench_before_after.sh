#!/usr/bin/env bash
# Two builds of linformer on the same training step, side by side: `bench train` on config S
# (recipes/bench/S.toml: n 512, d 256, 4 heads, FFN 1024, 4 layers, batch 8, k 128, dropout 0),
# Linformer and full attention (recipes/bench/S_full.toml), the two binaries alternating for
# ROUNDS rounds (default 5), so that machine noise hits both. Writes OUT/before_after.txt (one
# line per run: throughput, and the softmax kernels' time and share of the step; then the after binary's last full-attention output with its split by
# stage and kernel family) and OUT/machine.txt.
# Run it on an idle machine.
# Usage: scripts/bench_before_after.sh BEFORE_BINARY AFTER_BINARY OUT_DIR [--set K=V ...]
#   (PRECISION=bf16|fp32, default bf16)
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: scripts/bench_before_after.sh BEFORE AFTER OUT_DIR [--set K=V ...]}
after=${2:?usage: scripts/bench_before_after.sh BEFORE AFTER OUT_DIR [--set K=V ...]}
out=${3:?usage: scripts/bench_before_after.sh BEFORE AFTER OUT_DIR [--set K=V ...]}
shift 3
rounds=${ROUNDS:-5}
S=(--set train.precision="${PRECISION:-bf16}" --steps 8 "$@")
mkdir -p "$out"
scripts/machine_info.sh > "$out/machine.txt"
last=$(mktemp -d)
trap 'rm -rf "$last"' EXIT
{
  echo "before: $("$before" --version | head -1); after: $("$after" --version | head -1)"
  for round in $(seq "$rounds"); do
    for attention in linformer full; do
      recipe=recipes/bench/S.toml; [ "$attention" = full ] && recipe=recipes/bench/S_full.toml
      for which in before after; do
        bin=$before; [ "$which" = after ] && bin=$after
        "$bin" bench train --recipe "$recipe" "${S[@]}" > "$last/$which.txt"
        echo "round $round $attention $which: $(grep '^throughput' "$last/$which.txt")" \
          "| softmax $(awk '$1 == "softmax" {print $3 " ms, " $4}' "$last/$which.txt")"
      done
    done
  done
  echo "--- the after binary's last full-attention step:"; cat "$last/after.txt"
} > "$out/before_after.txt"
