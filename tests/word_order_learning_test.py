"""The model learns word order when the data needs it, and eval --shuffle-words sees it.

A made-up corpus where every word is written twice ("kalo kalo mire mire ..."): a masked word
is given away by its twin beside it, which only a model that reads positions can use; a model
that knows only which words occur together can do no better than guess among the block's
words. A small full-attention encoder trained here for 1,200 updates (seconds) must learn the
pairs (masked accuracy above 0.4) and score far worse with its words shuffled (perplexity
ratio above 10; a bag-of-words model scores about 1, as the Brown runs in results/brown do).
This is the end-to-end check that positions reach attention and that training can use them.

Usage: word_order_learning_test.py LINFORMER_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = None
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from word_pairs import write_corpus  # noqa: E402


class WordOrderLearning(unittest.TestCase):
    def test_a_model_trained_on_word_pairs_uses_word_order(self):
        with tempfile.TemporaryDirectory() as d:
            write_corpus(os.path.join(d, "corpus"))
            recipe = os.path.join(d, "pairs.toml")
            with open(recipe, "w") as f:
                f.write(f'base = "{ROOT}/recipes/ci/tiny.toml"\nname = "pairs"\n'
                        f'[data]\ncorpus = ["{d}/corpus"]\nprepared_dir = "{d}/prepared"\nvocab_size = 180\n'
                        'seq_len = 32\nvalid_fraction = 0.05\ntest_fraction = 0.05\n'
                        '[model]\nattention = "full"\nnorm = "pre"\n'
                        '[optim]\nlr = 3e-3\nwarmup_updates = 50\n'
                        '[train]\nbatch_size = 16\nmax_updates = 1200\n'
                        '[validation]\nevery = 400\nmax_batches = 0\n[checkpoint]\nevery = 1200\n[logging]\nevery = 100\n')
            for command in (["prepare", "--recipe", recipe], ["train", "--recipe", recipe, "--run-dir", f"{d}/run"]):
                r = subprocess.run([BINARY, *command], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            out = os.path.join(d, "eval.json")
            r = subprocess.run([BINARY, "eval", "--checkpoint", f"{d}/run", "--split", "test", "--shuffle-words",
                                "--json", out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(out) as f:
                e = json.load(f)
            self.assertGreater(e["accuracy"], 0.4, f"the pairs were not learned: {e}")
            self.assertGreater(e["word_order_ratio"], 10.0, f"shuffling the words barely hurts: {e}")
            self.assertLess(e["shuffled_words"]["accuracy"], e["accuracy"] / 2, e)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
