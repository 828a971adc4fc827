#!/usr/bin/env bash
# What a measurement ran on, for results/*/machine.txt: the CPU, the ISA flags that decide
# oneDNN's kernels (amx_bf16, avx512_bf16 or only avx2), the binary's version and the commit.
# Usage: scripts/machine_info.sh [BINARY]   (default build/linformer)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-build/linformer}
grep -m1 "model name" /proc/cpuinfo
echo "ISA flags: $(grep -o 'avx512_bf16\|avx2\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
"$binary" --version
git log -1 --format='commit %h %s'
