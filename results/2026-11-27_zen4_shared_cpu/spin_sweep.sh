#!/usr/bin/env bash
# Shared-CPU share of idle throughput by OpenMP wait policy, base recipe, 2 rounds each, alternating.
cd /work/main
B=${LINFORMER:-build/linformer}
for round in 1 2; do
  for policy in default 3000 1000 300 passive; do
    case $policy in
      default) env=();;
      passive) env=(OMP_WAIT_POLICY=passive);;
      *) env=(GOMP_SPINCOUNT=$policy);;
    esac
    echo "round $round policy $policy: $(env "${env[@]}" $B bench train --recipe recipes/brown/base.toml --steps 12 --beside-busy-process 2>&1 | grep -E '^shared CPU|^throughput' | tr '\n' ' ')"
  done
done
