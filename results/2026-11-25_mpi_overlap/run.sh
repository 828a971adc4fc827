#!/usr/bin/env bash
# The gradient allreduce overlapped with the backward pass (--overlap-allreduce on) against after
# it (off), config S, 2 processes x 1 thread of batch 4:
#  - on one machine (mpirun --oversubscribe, shared memory);
#  - on two emulated machines: two network namespaces hA and hB joined by a veth pair, each side's
#    egress limited by a token bucket (tc tbf) to 1 and 10 Gb/s or not limited, Open MPI over TCP
#    on that link, mpirun in hA and its daemon in hB started through an rsh agent that enters hB
#    (both "machines" still share this VM's 2 cores and memory: the network is emulated, the
#    compute is not).
# Tokens/s and the share of time waiting for the sums, from the train log lines after the first
# interval; off and on alternate, twice each. Run as root from the repository root, machine idle.
set -euo pipefail
B=$(realpath "${BINARY:-build/linformer}")
S=(--recipe recipes/brown/base.toml --set model.d_model=256 --set model.ffn_dim=1024 --set model.k=128
   --set train.max_updates=40 --set train.max_tokens=0 --set logging.every=10 --set validation.every=0
   --set validation.max_batches=1 --set checkpoint.every=0 --set train.batch_size=4)
out=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

report() {  # label, log: the rows of updates 20, 30 and 40
  grep -E "data parallel|update (20|30|40)/" "$2" | sed -E 's/^\[[^]]*\] \[rank 0\] \[info\] //' | sed "s/^/$1: /"
}

# One machine.
for round in 1 2; do
  for overlap in off on; do
    mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 \
      "$B" train "${S[@]}" --overlap-allreduce $overlap --run-dir "$out/one_${overlap}_$round" > "$out/log" 2>&1
    report "one machine, overlap $overlap, round $round" "$out/log"
  done
done

# Two emulated machines.
cleanup() { ip netns del hA 2>/dev/null || true; ip netns del hB 2>/dev/null || true; rm -rf "$out"; }
trap cleanup EXIT
cleanup; out=$(mktemp -d)
ip netns add hA && ip netns add hB
ip link add vAB type veth peer name vBA
ip link set vAB netns hA && ip link set vBA netns hB
ip netns exec hA sh -c "ip addr add 10.9.1.1/24 dev vAB && ip link set vAB up && ip link set lo up"
ip netns exec hB sh -c "ip addr add 10.9.1.2/24 dev vBA && ip link set vBA up && ip link set lo up"
cat > "$out/nsrsh" <<'END'
#!/bin/sh
# rsh agent: "nsrsh [options] HOST COMMAND..." runs COMMAND in network namespace HOST, named HOST.
while [ "${1#-}" != "$1" ]; do shift; done
host=$1; shift
exec ip netns exec "$host" unshare --uts sh -c "hostname $host; $*"
END
chmod +x "$out/nsrsh"
printf "hA slots=1\nhB slots=1\n" > "$out/hosts"
for rate in none 10gbit 1gbit; do
  for side in "hA vAB" "hB vBA"; do
    set -- $side
    ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
    [ "$rate" = none ] || ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 256kb latency 50ms
  done
  for round in 1 2; do
    for overlap in off on; do
      ip netns exec hA unshare --uts sh -c "hostname hA; mpirun -np 2 --hostfile $out/hosts --map-by ppr:1:node \
        --bind-to none --mca plm_rsh_agent $out/nsrsh --mca btl tcp,self --mca btl_tcp_if_include 10.9.1.0/24 \
        --mca oob_tcp_if_include 10.9.1.0/24 -x OMP_NUM_THREADS=1 -x OMPI_ALLOW_RUN_AS_ROOT \
        -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM $B train ${S[*]} --overlap-allreduce $overlap \
        --run-dir $out/two_${rate}_${overlap}_$round" > "$out/log" 2>&1
      report "two machines, link $rate, overlap $overlap, round $round" "$out/log"
    done
  done
done
