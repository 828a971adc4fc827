"""scripts/make_classification_data.py on small made-up inputs: e-mail headers stripped (Subject
kept), HTML removed, duplicates kept once; splits stratified and fixed; Brown chunks split by
document (no document in two splits) with genre and group labels."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "make_classification_data.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import make_classification_data as m  # noqa: E402


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class EmailText(unittest.TestCase):
    def test_headers_go_subject_and_body_stay(self):
        raw = "From: a@b\nSubject: Cheap pills\nX-Spam: yes\n\n<p>Buy <b>now</b></p>\n\n  twice  spaced\n"
        self.assertEqual(m.email_text(raw), "Cheap pills\nBuy now\ntwice spaced")


class Spam(unittest.TestCase):
    def test_splits_are_stratified_fixed_and_without_duplicates(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            for group, count in (("spam-1", 40), ("easy-ham-1", 60)):
                os.makedirs(os.path.join(data, group))
                for i in range(count):
                    j = 0 if i == 1 else i  # e-mail 1 repeats e-mail 0 (other headers)
                    with open(os.path.join(data, group, f"{i:05d}.json"), "w") as f:
                        json.dump({"text": f"Subject: s{j}\nDate: {i}\n\nmessage {group} {j}"}, f)
            outs = []
            for name in ("a", "b"):
                out = os.path.join(tmp, name)
                subprocess.run([sys.executable, SCRIPT, "spam", data, out], check=True, capture_output=True)
                outs.append({s: rows(os.path.join(out, "spam", s + ".jsonl")) for s in ("train", "valid", "test")})
            self.assertEqual(outs[0], outs[1], "the split is not fixed")
            splits = outs[0]
            self.assertEqual(sum(len(r) for r in splits.values()), 98, "a duplicate e-mail was kept twice")
            for name, part in splits.items():
                spam = sum(r["label"] == "spam" for r in part)
                self.assertAlmostEqual(spam / len(part), 0.4, delta=0.1, msg=name)
            docs = [r["doc"] for part in splits.values() for r in part]
            self.assertEqual(len(docs), len(set(docs)))


class BrownGenres(unittest.TestCase):
    def test_chunks_of_a_document_stay_in_one_split(self):
        with tempfile.TemporaryDirectory() as tmp:
            brown = os.path.join(tmp, "brown")
            os.makedirs(os.path.join(brown, "text"))
            cats = []
            for i in range(30):
                doc, genre = f"c{i:02d}", ("news", "romance", "humor")[i % 3]
                cats.append(f"{doc} {genre}")
                with open(os.path.join(brown, "text", doc + ".txt"), "w") as f:
                    f.write("\n".join(" ".join(["word"] * 100) for _ in range(8)))
            with open(os.path.join(brown, "cats.txt"), "w") as f:
                f.write("\n".join(cats) + "\n")
            out = os.path.join(tmp, "out")
            subprocess.run([sys.executable, SCRIPT, "brown-genres", brown, out], check=True, capture_output=True)
            split_of = {}
            for s in ("train", "valid", "test"):
                part = rows(os.path.join(out, "brown_genres_15", s + ".jsonl"))
                self.assertTrue(part, s)
                for r in part:
                    self.assertEqual(split_of.setdefault(r["doc"], s), s, f"{r['doc']} is in two splits")
                groups = rows(os.path.join(out, "brown_genres_2", s + ".jsonl"))
                for r, g in zip(part, groups):
                    self.assertEqual(g["label"], "imaginative" if r["label"] in ("romance", "humor") else "informative")
            self.assertEqual(len(split_of), 30)


if __name__ == "__main__":
    unittest.main()
