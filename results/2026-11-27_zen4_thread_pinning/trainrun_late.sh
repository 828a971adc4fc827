#!/usr/bin/env bash
# The default recipe's training run (300 updates), idle and with `yes > /dev/null` started 2 s after it, by OpenMP setting.
cd /work/main
B=${LINFORMER:-build/linformer}
A="--set train.max_updates=300 --set train.short_seq_updates=150 --set optim.warmup_updates=100 --set validation.every=1000"
for cfg in ${CFGS:-default bind}; do
  case $cfg in
    default) env=(X=1);;
    bind) env=(GOMP_SPINCOUNT=5000 OMP_PROC_BIND=true OMP_PLACES=cores);;
    bindpassive) env=(OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=passive);;
    passive) env=(OMP_WAIT_POLICY=passive);;
    spin) env=(GOMP_SPINCOUNT=5000);;
  esac
  for load in ${LOADS:-idle late}; do
    d=/tmp/q/late_${TAG}${cfg}_$load; rm -rf $d
    if [ $load = late ]; then (sleep 2; exec yes > /dev/null) & YP=$!; fi
    if [ $load = early ]; then yes > /dev/null & YP=$!; sleep 1; fi
    env "${env[@]}" $B train --recipe recipes/brown/default.toml --run-dir $d $A > $d.log 2>&1
    [ $load != idle ] && { pkill -P $YP 2>/dev/null; kill $YP 2>/dev/null; pkill -x yes; }
    echo "$cfg $load: $(grep '^train' $d/metrics.csv | tail -1 | awk -F, '{print "elapsed " $NF " s, loss " $6}')"
  done
done
