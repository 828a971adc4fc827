"""Tests scripts/brown_to_text.py on a small tagged sample written like the real corpus."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "brown_to_text.py")
SAMPLE = os.path.join(ROOT, "tests", "fixtures", "brown_sample_ca99")


class BrownToText(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.source = os.path.join(self.dir, "package")
        os.makedirs(self.source)
        shutil.copy(SAMPLE, os.path.join(self.source, "ca99"))
        shutil.copy(SAMPLE, os.path.join(self.source, "README"))  # not a document: ignored

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_converts_paragraphs_and_untokenises(self):
        out = os.path.join(self.dir, "text")
        subprocess.run([sys.executable, SCRIPT, self.source, out], check=True, capture_output=True)
        self.assertEqual(os.listdir(out), ["ca99.txt"])
        with open(os.path.join(out, "ca99.txt")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines, [
            'The Fulton jury said "no evidence" was found. It cost 1-1/2 dollars (about); fine!',
            "Second paragraph, here.",
        ])

    def test_fails_without_documents(self):
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        r = subprocess.run([sys.executable, SCRIPT, empty, os.path.join(self.dir, "o")], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no Brown documents", r.stderr)


if __name__ == "__main__":
    unittest.main()
