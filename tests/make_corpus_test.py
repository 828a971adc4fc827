"""Tests scripts/make_corpus.py: the three formats, the size, determinism in the seed, Wikipedia-like
paragraph lengths, text that is not its source repeated, and that `linformer prepare` reads each format.

Usage: make_corpus_test.py LINFORMER_BINARY
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "make_corpus.py")
BROWN = os.path.join(ROOT, "data", "brown", "text")
BINARY = None
DOC = re.compile(r'<doc id="(\d+)" url="https://en\.wikipedia\.org/wiki\?curid=\1" title="([^"]*)">')


def documents(path, fmt):
    """The documents of a generated file as lists of lines (title first), parsed independently."""
    text = open(path, encoding="utf-8").read()
    if fmt == "jsonl":
        return [json.loads(line)["text"].split("\n") for line in text.splitlines()]
    if fmt == "text":
        assert "\n\n\n" not in text and text.endswith("\n")
        return [block.split("\n") for block in text.strip("\n").split("\n\n")]
    docs, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = DOC.fullmatch(lines[i])
        assert m, f"line {i + 1} is not a <doc> header: {lines[i][:80]}"
        end = lines.index("</doc>", i)
        assert lines[i + 1] == m.group(2).replace("&quot;", '"') and lines[i + 2] == ""
        docs.append([lines[i + 1]] + lines[i + 2:end])
        i = end + 1
    return docs


class MakeCorpus(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        # A small Brown-like source (one paragraph per line) so the test needs no download.
        rng = np.random.default_rng(0)
        words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
        self.source = os.path.join(self.dir, "source")
        os.makedirs(self.source)
        for f in range(3):
            with open(os.path.join(self.source, f"c{f}.txt"), "w") as out:
                for _ in range(200):
                    sentences = [" ".join(rng.choice(words, size=rng.integers(4, 15))).capitalize() + rng.choice([".", "?", "!"])
                                 for _ in range(rng.integers(1, 6))]
                    out.write(" ".join(sentences) + "\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def make(self, name, size, fmt, seed=1, source=None):
        path = os.path.join(self.dir, name)
        r = subprocess.run([sys.executable, SCRIPT, path, str(size), "--format", fmt, "--seed", str(seed),
                            "--brown", source or self.source], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return path

    def test_formats_size_and_determinism(self):
        for fmt in ("wikiextractor", "jsonl", "text"):
            with self.subTest(fmt=fmt):
                a = self.make(f"a.{fmt}", 300000, fmt)
                self.assertLessEqual(os.path.getsize(a), 300000)
                self.assertGreater(os.path.getsize(a), 300000 - 64)
                docs = documents(a, fmt)
                self.assertGreater(len(docs), 3)
                for d in docs:
                    self.assertTrue(d[0])  # a title
                    # Then a blank line (except in plain text, where blank lines separate documents) and paragraphs.
                    paragraphs = d[1:] if fmt == "text" else d[2:]
                    self.assertTrue(paragraphs and all(p.strip() == p and p for p in paragraphs), d[:3])
                b = self.make(f"b.{fmt}", 300000, fmt)
                c = self.make(f"c.{fmt}", 300000, fmt, seed=2)
                self.assertEqual(open(a, "rb").read(), open(b, "rb").read())
                self.assertNotEqual(open(a, "rb").read(), open(c, "rb").read())

    def test_size_suffixes_and_bad_size(self):
        path = self.make("k.txt", "20K", "text")
        self.assertEqual(os.path.getsize(path) // 1000, 19 if os.path.getsize(path) < 20000 else 20)
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "z"), "0"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("size must be positive", r.stderr)

    @unittest.skipUnless(os.path.isdir(BROWN), "data/brown/text is not there (scripts/get_brown.sh)")
    def test_wikipedia_like_lengths_and_not_brown_verbatim(self):
        path = self.make("w.txt", 2000000, "text", source=BROWN)
        docs = documents(path, "text")
        paragraphs = np.array([len(p.encode()) for d in docs for p in d[1:]])
        self.assertAlmostEqual(paragraphs.mean(), 575, delta=60)
        self.assertGreater(np.percentile(paragraphs, 99), 3 * 575)  # a long tail
        counts = np.array([len(d) - 1 for d in docs])
        self.assertTrue(1 <= np.median(counts) <= 60, np.median(counts))
        brown = set()
        for name in os.listdir(BROWN):
            brown.update(line.strip() for line in open(os.path.join(BROWN, name), encoding="utf-8"))
        long_ones = [p for d in docs for p in d[1:] if len(p) >= 100]
        verbatim = sum(p in brown for p in long_ones)
        self.assertLess(verbatim, 0.01 * len(long_ones))

    def test_prepare_reads_each_format(self):
        for fmt in ("wikiextractor", "jsonl", "text"):
            with self.subTest(fmt=fmt):
                path = self.make(f"p.{fmt}", 200000, fmt)
                expected = len(documents(path, fmt))
                out = os.path.join(self.dir, f"prepared_{fmt}")
                r = subprocess.run([BINARY, "prepare", "--recipe", os.path.join(ROOT, "recipes", "ci", "tiny.toml"),
                                    "--set", f'data.corpus=["{path}"]', "--set", f"data.prepared_dir={out}",
                                    "--set", "data.vocab_size=60"], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                with open(os.path.join(out, "meta.json")) as f:
                    self.assertEqual(json.load(f)["summary"]["documents"], expected)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main()
