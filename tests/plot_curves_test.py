"""scripts/plot_curves.py draws PNG and SVG from metrics.jsonl and fails clearly without data."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "plot_curves.py")


class PlotCurves(unittest.TestCase):
    def test_writes_png_and_svg(self):
        with tempfile.TemporaryDirectory() as d:
            for name, base in (("linformer_k64", 60.0), ("transformer", 50.0)):
                run = os.path.join(d, name)
                os.makedirs(run)
                with open(os.path.join(run, "metrics.jsonl"), "w") as f:
                    for u in (100, 200, 300):
                        f.write(json.dumps({"kind": "train", "update": u, "tokens": u * 4096, "perplexity": base * 2 / u ** 0.3}) + "\n")
                        valid = {"kind": "valid", "update": u, "tokens": u * 4096, "perplexity": base / u ** 0.3,
                                 "unigram_perplexity": 90.0, "elapsed_seconds": u * 0.5}
                        if name == "transformer":  # trained with validation.shuffle_words
                            valid["shuffled_perplexity"] = valid["perplexity"] * 1.5
                        f.write(json.dumps(valid) + "\n")
            out = os.path.join(d, "plots", "curves")
            r = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "linformer_k64"), os.path.join(d, "transformer"),
                                "--out", out, "--train"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            for ext in ("png", "svg"):
                self.assertGreater(os.path.getsize(f"{out}.{ext}"), 1000)
            with open(out + ".png", "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            with open(out + ".svg") as f:
                svg = f.read()
            self.assertIn("transformer (words shuffled)", svg)
            self.assertNotIn("linformer_k64 (words shuffled)", svg)

    def test_marks_the_end_of_a_sequence_length_warm_up(self):
        with tempfile.TemporaryDirectory() as d:
            for name, recipe in (("warm", "[train]\nshort_seq_len = 128\nshort_seq_updates = 200\n"),
                                 ("plain", "[train]\nshort_seq_len = 0\nshort_seq_updates = 0\n")):
                run = os.path.join(d, name)
                os.makedirs(run)
                with open(os.path.join(run, "recipe.toml"), "w") as f:
                    f.write(recipe)
                with open(os.path.join(run, "metrics.jsonl"), "w") as f:
                    for u in (100, 200, 300):
                        f.write(json.dumps({"kind": "valid", "update": u, "tokens": u * 4096, "perplexity": 90 / u ** 0.3,
                                            "elapsed_seconds": u * 0.5}) + "\n")
            out = os.path.join(d, "curves")
            r = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "warm"), os.path.join(d, "plain"), "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out + ".svg") as f:
                svg = f.read()
            self.assertIn("warm: blocks of full length from update 200", svg)
            self.assertNotIn("plain: blocks of full length", svg)

    def test_every_run_of_a_large_sweep_has_its_own_colour(self):
        # Fourteen runs (the main-job sweep has more than ten): fourteen line colours, plus the black baseline.
        with tempfile.TemporaryDirectory() as d:
            runs = []
            for i in range(14):
                run = os.path.join(d, f"s{i:02d}")
                os.makedirs(run)
                with open(os.path.join(run, "metrics.jsonl"), "w") as f:
                    for u in (100, 200):
                        f.write(json.dumps({"kind": "valid", "update": u, "tokens": u * 4096, "perplexity": 90 + i - u / 100,
                                            "unigram_perplexity": 120.0, "elapsed_seconds": u * 0.5}) + "\n")
                runs.append(run)
            out = os.path.join(d, "curves")
            r = subprocess.run([sys.executable, SCRIPT, *runs, "--out", out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out + ".svg") as f:
                strokes = set(re.findall(r"stroke: (#[0-9a-f]{6})", f.read()))
            self.assertGreaterEqual(len(strokes - {"#000000", "#ffffff", "#cccccc", "#b0b0b0"}), 14, sorted(strokes))

    def test_past_twenty_runs_the_colours_repeat_with_another_marker(self):
        sys.path.insert(0, os.path.dirname(SCRIPT))
        import plot_curves
        styles = plot_curves.run_styles(25)
        self.assertEqual(len(set(styles)), 25)
        self.assertEqual(len({colour for colour, _ in styles}), 20)

    def test_labels_must_match_the_runs(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "metrics.jsonl"), "w") as f:
                f.write(json.dumps({"kind": "valid", "update": 1, "tokens": 1, "perplexity": 5.0}) + "\n")
            r = subprocess.run([sys.executable, SCRIPT, d, "--labels", "a,b", "--out", os.path.join(d, "c")],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("2 labels for 1 runs", r.stderr)

    def test_missing_metrics_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, SCRIPT, d], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("metrics.jsonl not found", r.stderr)


if __name__ == "__main__":
    unittest.main()
