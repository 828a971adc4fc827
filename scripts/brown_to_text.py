#!/usr/bin/env python3
"""Converts the tagged Brown corpus (form C: `word/tag` tokens, one sentence per
line, paragraphs starting with a tab and separated by blank lines) into plain text.

Each Brown document becomes one file with one paragraph per line, so that a
file is a document and a line is the unit that break mode "complete" keeps
whole. Tags are stripped and the tokenisation is undone: `` and '' become ",
punctuation is attached to its word.

Usage: brown_to_text.py SOURCE_DIR OUTPUT_DIR
"""
import os
import re
import sys

DOCUMENT = re.compile(r"^c[a-r][0-9][0-9]$")
NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "}", "''", "'"}
NO_SPACE_AFTER = {"(", "[", "{", "``"}


def strip_tag(token):
    word, slash, _tag = token.rpartition("/")
    return word if slash else token


def detokenize(words):
    out = []
    glue = True  # no space before the first word
    for w in words:
        if not glue and w not in NO_SPACE_BEFORE:
            out.append(" ")
        out.append('"' if w in ("``", "''") else w)
        glue = w in NO_SPACE_AFTER
    return "".join(out)


def convert(text):
    """Returns the document's paragraphs, each one line of plain text."""
    paragraphs, current = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("\t") and current:  # a tab opens a new paragraph
            paragraphs.append(current)
            current = []
        current.extend(strip_tag(t) for t in line.split())
    if current:
        paragraphs.append(current)
    return [detokenize(p) for p in paragraphs]


def main(source, output):
    names = sorted(n for n in os.listdir(source) if DOCUMENT.match(n))
    if not names:
        sys.exit(f"brown_to_text: no Brown documents (ca01 … cr09) in {source}")
    os.makedirs(output, exist_ok=True)
    words = paragraphs = 0
    for name in names:
        with open(os.path.join(source, name), encoding="ascii", errors="replace") as f:
            lines = convert(f.read())
        with open(os.path.join(output, name + ".txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        paragraphs += len(lines)
        words += sum(len(l.split()) for l in lines)
    print(f"brown_to_text: {len(names)} documents, {paragraphs} paragraphs, {words} words -> {output}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
