#!/usr/bin/env bash
# 1 process × 2 threads (batch 8) against 2 processes × 1 thread (batch 4 each) on config S
# (recipes/brown/base.toml with d 256, FFN 1024, k 128: the README's performance config),
# alternating, twice each; tokens/s and the allreduce share from the train log lines after the
# first interval. Run from the repository root on an otherwise idle machine.
set -euo pipefail
B=${BINARY:-build/linformer}
S=(--recipe recipes/brown/base.toml --set model.d_model=256 --set model.ffn_dim=1024 --set model.k=128
   --set train.max_updates=40 --set train.max_tokens=0 --set logging.every=10 --set validation.every=0
   --set validation.max_batches=1 --set checkpoint.every=0)
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
out=$(mktemp -d)
for round in 1 2; do
  OMP_NUM_THREADS=2 $B train "${S[@]}" --set train.batch_size=8 --run-dir "$out/one_$round" 2>&1 |
    grep -E "update (20|30|40)/" | sed "s/^/1 process x 2 threads, round $round: /"
  mpirun -np 2 --oversubscribe --bind-to none "${root[@]}" -x OMP_NUM_THREADS=1 \
    $B train "${S[@]}" --set train.batch_size=4 --run-dir "$out/two_$round" 2>&1 |
    grep -E "data parallel|update (20|30|40)/" | sed "s/^/2 processes x 1 thread, round $round: /"
done
rm -rf "$out"
