#!/usr/bin/env bash
# The default recipe's training run (300 updates, warm-ups scaled), idle and beside `yes > /dev/null`, by wait policy.
cd /work/main
B=${LINFORMER:-build/linformer}
A="--set train.max_updates=300 --set train.short_seq_updates=150 --set optim.warmup_updates=100 --set validation.every=1000"
for policy in ${POLICIES:-5000 passive 1000}; do
  case $policy in passive) env=(OMP_WAIT_POLICY=passive);; *) env=(GOMP_SPINCOUNT=$policy);; esac
  for load in idle busy; do
    rm -rf /tmp/q/tr_${policy}_$load
    [ $load = busy ] && { yes > /dev/null & YP=$!; }
    env "${env[@]}" $B train --recipe recipes/brown/default.toml --run-dir /tmp/q/tr_${policy}_$load $A > /dev/null 2>&1
    [ $load = busy ] && kill $YP
    echo "$policy $load: $(grep '^train' /tmp/q/tr_${policy}_$load/metrics.csv | tail -1 | awk -F, '{print "elapsed " $NF " s, loss " $6}')"
  done
done
