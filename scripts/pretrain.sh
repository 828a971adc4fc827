#!/usr/bin/env bash
# The main job: build, fetch the Brown corpus, prepare it and pretrain the default recipe.
# Usage: scripts/pretrain.sh [recipe] [extra linformer train arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=${1:-recipes/brown/default.toml}
shift || true
scripts/build.sh
[ -f data/brown/.complete ] || scripts/get_brown.sh
build/linformer prepare --recipe "$recipe"
build/linformer train --recipe "$recipe" --resume auto "$@"
