"""scripts/plot_seed_bands.py: bands and the final table from made-up metrics, worked out here by
hand; files written; bad input refused naming it."""
import json
import math
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import plot_seed_bands as psb  # noqa: E402


def write_run(d, name, valid):
    run = os.path.join(d, name)
    os.makedirs(run)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        f.write(json.dumps({"kind": "train", "update": 1, "perplexity": 9999.0}) + "\n\n")
        for update, ppl in valid:
            f.write(json.dumps({"kind": "valid", "update": update, "perplexity": ppl}) + "\n")
    return run


class SeedBands(unittest.TestCase):
    def test_band_is_at_shared_updates_with_the_geometric_mean(self):
        curves = [{10: 100.0, 20: 50.0, 30: 40.0}, {10: 400.0, 20: 200.0}]
        got = psb.band(curves)
        self.assertEqual([(u, lo, hi) for u, _, lo, hi in got], [(10, 100.0, 400.0), (20, 50.0, 200.0)])
        self.assertAlmostEqual(got[0][1], 200.0)  # sqrt(100 · 400)
        self.assertAlmostEqual(got[1][1], 100.0)

    def test_writes_the_figure_and_a_table_of_final_values(self):
        with tempfile.TemporaryDirectory() as d:
            a1 = write_run(d, "a", [(10, 90.0), (20, 60.0)])
            a2 = write_run(d, "a_seed2", [(10, 110.0), (20, 40.0)])
            b = write_run(d, "b", [(10, 300.0), (20, 240.0)])
            out = os.path.join(d, "fig", "bands")
            self.assertEqual(psb.main(["--model", "A", a1, a2, "--model", "B", b, "--out", out, "--goal", "1.25"]), 0)
            with open(f"{out}.svg") as f:  # the goal's legend entry: 1.25 × 48.99
                self.assertIn(f"1.25 × A's final ({1.25 * math.sqrt(2400):.1f})", f.read())
            for ext in ("png", "svg", "md"):
                self.assertGreater(os.path.getsize(f"{out}.{ext}"), 100 if ext != "md" else 10, ext)
            with open(f"{out}.md") as f:
                text = f.read()
            # A: finals 60 and 40: mean 50, sd sqrt(200) = 14.1, geometric mean sqrt(2400) = 48.99;
            # B: 240, 240 / 48.99 = 4.90.
            self.assertIn("| A | 2 | 20 | 50.0 ± 14.1 | 40.0 | 60.0 | 1.00 |", text)
            self.assertIn(f"| B | 1 | 20 | 240.0 | 240.0 | 240.0 | {240 / math.sqrt(2400):.2f} |", text)

    def test_bad_input_is_refused_naming_it(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(SystemExit) as refused:
                psb.main(["--model", "A", f"{d}/missing", "--out", d])
            self.assertIn("missing/metrics.jsonl not found", str(refused.exception))
            with self.assertRaises(SystemExit) as refused:  # argparse: usage and exit 2
                psb.main(["--model", "label without runs", "--out", d])
            self.assertEqual(refused.exception.code, 2)
            empty = write_run(d, "empty", [])
            with self.assertRaises(SystemExit) as refused:
                psb.main(["--model", "E", empty, "--out", os.path.join(d, "x")])
            self.assertIn("has no validation rows", str(refused.exception))
            a = write_run(d, "a", [(10, 5.0)])
            b = write_run(d, "b", [(20, 6.0)])
            with self.assertRaises(SystemExit) as refused:
                psb.main(["--model", "AB", a, b, "--out", os.path.join(d, "x")])
            self.assertIn("AB: its runs share no validation update", str(refused.exception))


if __name__ == "__main__":
    unittest.main()
