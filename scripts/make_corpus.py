#!/usr/bin/env python3
"""Writes a large synthetic corpus shaped like an English Wikipedia dump, deterministic in a seed.

The words come from a word-bigram model estimated on the Brown corpus (data/brown/text: one
paragraph per line), sampled with numpy, so the text has English word frequencies and local
word order without repeating Brown verbatim. Paragraphs are cut at sentence ends near a length
drawn from a log-normal distribution (mean about 575 bytes, the mean paragraph of a WikiExtractor
dump; a long tail up to 20 kB); documents have a log-normal number of paragraphs (median 24,
from one to a thousand), each with a title of a few words.

Formats:
  wikiextractor  <doc id=".." url=".." title="..">, the title line, a blank line, one paragraph
                 per line, </doc>
  jsonl          one {"text": "title\\n\\nparagraph\\nparagraph..."} object per line
  text           the title and one paragraph per line, a blank line between documents

The file is SIZE bytes, give or take a few (the last paragraph is cut at a word to fit).

Usage: make_corpus.py OUTPUT SIZE [--format wikiextractor|jsonl|text] [--seed N] [--brown DIR]
  SIZE in bytes, or with a suffix: 10M, 1G (powers of 10: 1G = 10^9 bytes).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BROWN = os.path.join(HERE, "..", "data", "brown", "text")
PARAGRAPH_MEAN_BYTES = 575
PARAGRAPH_SIGMA = 0.9
PARAGRAPH_LIMITS = (40, 20000)
DOC_MEDIAN_PARAGRAPHS = 24
DOC_SIGMA = 1.0
DOC_LIMITS = (1, 1000)
BOUNDARY = 0  # the bigram model's paragraph start/end
CHAINS, STEPS = 1024, 256  # words drawn per batch: CHAINS chains of STEPS words


def parse_size(text):
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class BigramModel:
    """Every bigram of Brown as (word, next word), sorted by word: drawing a uniform occurrence
    among word w's rows is drawing w's successor with its bigram probability, at O(1) a draw."""

    def __init__(self, brown_dir):
        vocab = {"": BOUNDARY}
        ids = []
        names = sorted(f for f in os.listdir(brown_dir) if f.endswith(".txt"))
        if not names:
            sys.exit(f"make_corpus.py: no .txt files in {brown_dir} (scripts/get_brown.sh makes them)")
        for name in names:
            with open(os.path.join(brown_dir, name), encoding="utf-8") as f:
                for line in f:
                    words = line.split()
                    if words:
                        ids.append(BOUNDARY)
                        ids.extend(vocab.setdefault(w, len(vocab)) for w in words)
        ids.append(BOUNDARY)
        words = [""] * len(vocab)
        for w, i in vocab.items():
            words[i] = w
        seq = np.asarray(ids, dtype=np.int32)
        order = np.argsort(seq[:-1], kind="stable")
        self.successors = seq[1:][order]
        self.row_counts = np.bincount(seq[:-1], minlength=len(words)).astype(np.int64)
        self.row_starts = np.cumsum(self.row_counts) - self.row_counts
        # Rendering: every word followed by a space; the boundary renders as nothing.
        encoded = [w.encode("utf-8") + b" " if w else b"" for w in words]
        self.lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        self.starts = np.cumsum(self.lengths) - self.lengths  # in self.table
        self.table = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        ends = tuple(s + q for s in ".?!" for q in ("", '"', "'", ")"))
        self.ends_sentence = np.array([w == "" or w.endswith(ends) for w in words])

    def draw(self, state, rng):
        """STEPS words for each chain in `state` (updated): (CHAINS, STEPS) word ids."""
        out = np.empty((len(state), STEPS), dtype=np.int32)
        for t in range(STEPS):
            pick = (rng.random(len(state)) * self.row_counts[state]).astype(np.int64)
            state = self.successors[self.row_starts[state] + pick]
            out[:, t] = state
        return out, state


class TextStream:
    """Endless text from the bigram model, handed out as paragraphs cut at sentence ends."""

    def __init__(self, model, rng):
        self.model, self.rng = model, rng
        self.state = np.zeros(CHAINS, dtype=np.int32)
        self.paragraphs = []

    def _refill(self):
        m = self.model
        ids, self.state = m.draw(self.state, self.rng)
        ids = ids.ravel()
        lengths = m.lengths[ids]
        ends = np.cumsum(lengths)
        total = int(ends[-1])
        # Byte i of the text is byte (i - where its word starts in the text) of the word in the table.
        source = np.repeat((m.starts[ids] - (ends - lengths)).astype(np.int32), lengths)
        source += np.arange(total, dtype=np.int32)
        text = m.table[source].tobytes()
        sentence_ends = ends[m.ends_sentence[ids]]
        # The cut lands at the next sentence end: aim 0.1 (in log) below the mean to meet it.
        targets = self.rng.lognormal(np.log(PARAGRAPH_MEAN_BYTES) - PARAGRAPH_SIGMA**2 / 2 - 0.1, PARAGRAPH_SIGMA,
                                     size=total // 200 + 16)
        targets = np.clip(targets, *PARAGRAPH_LIMITS).astype(np.int64)
        cuts = sentence_ends[np.minimum(np.searchsorted(sentence_ends, np.cumsum(targets)), len(sentence_ends) - 1)]
        cuts = np.unique(cuts)
        begin = 0
        for cut in cuts.tolist():
            paragraph = text[begin:cut].strip()
            begin = cut
            if paragraph:
                self.paragraphs.append(paragraph.decode("utf-8"))
        self.paragraphs.reverse()  # pop() from the end hands them out in order

    def paragraph(self):
        while not self.paragraphs:
            self._refill()
        return self.paragraphs.pop()


def title_of(paragraph, rng):
    words = paragraph.split()[: int(rng.integers(1, 5))]
    title = " ".join(w.strip(".,;:?!\"'()") for w in words).strip()
    return (title[:1].upper() + title[1:]) if title else "Untitled"


def render(fmt, index, title, paragraphs):
    if fmt == "wikiextractor":
        quoted = title.replace('"', "&quot;")
        url = f"https://en.wikipedia.org/wiki?curid={index}"
        return f'<doc id="{index}" url="{url}" title="{quoted}">\n{title}\n\n' + "\n".join(paragraphs) + "\n</doc>\n"
    if fmt == "jsonl":
        return json.dumps({"text": title + "\n\n" + "\n".join(paragraphs)}, ensure_ascii=False) + "\n"
    return ("\n" if index > 1 else "") + title + "\n" + "\n".join(paragraphs) + "\n"


def fit_last(fmt, index, title, paragraphs, room):
    """The last document, cut to at most `room` bytes: whole paragraphs, then one cut at a word."""
    fits = lambda ps: len(render(fmt, index, title, ps).encode("utf-8")) <= room
    kept = []
    for p in paragraphs:
        if fits(kept + [p]):
            kept.append(p)
            continue
        words = p.split(" ")
        lo, hi = 0, len(words)  # the most words of p that fit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(kept + [" ".join(words[:mid])]) else (lo, mid - 1)
        if lo:
            kept.append(" ".join(words[:lo]))
        break
    return render(fmt, index, title, kept) if kept else ""


def write_corpus(path, size, fmt, seed, brown_dir):
    model = BigramModel(brown_dir)
    rng = np.random.default_rng(seed)
    stream = TextStream(model, rng)
    written, index, documents = 0, 0, 0
    tmp = path + ".tmp"
    with open(tmp, "wb") as out:
        while True:
            index += 1
            count = int(np.clip(round(rng.lognormal(np.log(DOC_MEDIAN_PARAGRAPHS), DOC_SIGMA)), *DOC_LIMITS))
            paragraphs = [stream.paragraph() for _ in range(count)]
            title = title_of(stream.paragraph(), rng)
            doc = render(fmt, index, title, paragraphs).encode("utf-8")
            last = written + len(doc) > size
            if last:
                doc = fit_last(fmt, index, title, paragraphs, size - written).encode("utf-8")
            out.write(doc)
            written += len(doc)
            documents += 1 if doc else 0
            if last:
                break
    os.replace(tmp, path)
    return written, documents


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output")
    parser.add_argument("size", type=parse_size)
    parser.add_argument("--format", choices=["wikiextractor", "jsonl", "text"], default="wikiextractor")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--brown", default=DEFAULT_BROWN)
    args = parser.parse_args()
    if args.size <= 0:
        parser.error(f"size must be positive, not {args.size}")
    start = time.time()
    written, docs = write_corpus(args.output, args.size, args.format, args.seed, args.brown)
    seconds = time.time() - start
    print(f"{args.output}: {written} bytes, {docs} documents ({args.format}, seed {args.seed}) in {seconds:.1f} s, "
          f"{written / 1e6 / max(seconds, 1e-9):.1f} MB/s", file=sys.stderr)


if __name__ == "__main__":
    main()
