#!/usr/bin/env bash
# Replaces the recipe reference in docs/recipes.md (between its recipe-reference markers) with the
# output of `build/linformer options`; the test Readme.RecipeReferenceIsCurrent checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
reference=$(build/linformer options)
python3 - "$reference" <<'PY'
import sys
begin, end = "<!-- recipe-reference:begin -->\n", "<!-- recipe-reference:end -->\n"
text = open("docs/recipes.md").read()
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open("docs/recipes.md", "w").write(head + begin + sys.argv[1] + "\n" + end + tail)
PY
