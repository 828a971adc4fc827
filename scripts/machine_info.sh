#!/usr/bin/env bash
# What a measurement ran on, for results/*/machine.txt: the CPU, the ISA flags that decide
# oneDNN's kernels (amx_bf16, avx512_bf16 or only avx2), the binary's version and the commit.
# Usage: scripts/machine_info.sh [BINARY]   (default build/linformer)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-build/linformer}
grep -m1 "model name" /proc/cpuinfo
# VMs often hide the model name ("AMD EPYC"); the family tells the generation apart.
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
model=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)
core=""
if grep -q -m1 AuthenticAMD /proc/cpuinfo; then
  case "$family" in
    25) grep -qw avx512f /proc/cpuinfo && core=" (AMD Zen 4)" || core=" (AMD Zen 3)" ;;
    26) core=" (AMD Zen 5)" ;;
  esac
fi
echo "cpu family $family, model $model$core"
echo "ISA flags: $(grep -o 'avx512_bf16\|avx2\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
"$binary" --version
git log -1 --format='commit %h %s'
