"""scripts/compare_valid_ppl.py: the 1% criterion of scripts/bf16_check.sh, on made-up runs."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "compare_valid_ppl.py")


def write_run(root, name, valid):
    """valid: [(update, perplexity)], written with train records in between."""
    run = os.path.join(root, name)
    os.makedirs(run)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        for update, ppl in valid:
            f.write(json.dumps({"kind": "train", "update": update, "perplexity": 3 * ppl}) + "\n")
            f.write(json.dumps({"kind": "valid", "update": update, "perplexity": ppl}) + "\n")
    return run


def compare(a, b, *extra):
    return subprocess.run([sys.executable, SCRIPT, a, b, *extra], capture_output=True, text=True)


class CompareValidPpl(unittest.TestCase):
    def test_uses_the_last_validation_and_the_limit(self):
        with tempfile.TemporaryDirectory() as d:
            a = write_run(d, "fp32", [(100, 500.0), (300, 200.0)])
            close = write_run(d, "close", [(100, 900.0), (300, 201.9)])  # 0.95% apart at the end
            far = write_run(d, "far", [(100, 500.0), (300, 202.1)])      # 1.05%
            r = compare(a, close)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("0.95% apart", r.stdout)
            self.assertEqual(compare(a, far).returncode, 1)
            self.assertEqual(compare(a, far, "--max-relative", "0.02").returncode, 0)

    def test_last_n_compares_the_mean_of_the_last_validations(self):
        with tempfile.TemporaryDirectory() as d:
            a = write_run(d, "fp32", [(100, 900.0), (200, 210.0), (300, 200.0)])
            # 1.5% below at the end, 1.4% above before it: the means of the last two are 0.01% apart
            b = write_run(d, "bf16", [(100, 100.0), (200, 212.94), (300, 197.0)])
            r = compare(a, b)
            self.assertEqual(r.returncode, 1, r.stdout)
            r = compare(a, b, "--last", "2")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("1.50% apart", r.stdout)  # the final validations, printed too
            self.assertIn("mean of the last 2 validations (updates 200-300)", r.stdout)
            self.assertIn("205.000, ", r.stdout)
            self.assertIn("204.970: 0.01% apart, limit 1%", r.stdout)
            self.assertEqual(compare(a, b, "--last", "3").returncode, 1)  # the means: 436.7 against 170.0
            shifted = write_run(d, "shifted", [(150, 210.0), (300, 200.0)])
            r = compare(a, shifted, "--last", "2")
            self.assertEqual(r.returncode, 1)
            self.assertIn("different updates", r.stdout)
            r = compare(a, shifted, "--last", "3")
            self.assertEqual(r.returncode, 2)
            self.assertIn("has 2 validation records, fewer than the 3 to compare", r.stderr)
            self.assertEqual(compare(a, b, "--last", "0").returncode, 2)

    def test_pairs_are_judged_by_their_mean(self):
        with tempfile.TemporaryDirectory() as d:
            # seed 1: B 1.5% below A; seed 2: B 1.2% above: the means 300.0 and 299.7, 0.10% apart
            a1 = write_run(d, "a1", [(100, 900.0), (300, 200.0)])
            b1 = write_run(d, "b1", [(100, 900.0), (300, 197.0)])
            a2 = write_run(d, "a2", [(100, 900.0), (300, 400.0)])
            b2 = write_run(d, "b2", [(100, 900.0), (300, 402.7)])
            self.assertEqual(subprocess.run([sys.executable, SCRIPT, a1, b1], capture_output=True).returncode, 1)
            r = subprocess.run([sys.executable, SCRIPT, a1, b1, a2, b2], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("pair 1: final validation perplexity", r.stdout)
            self.assertIn("1.50% apart", r.stdout)
            self.assertIn("pair 2: final validation perplexity", r.stdout)
            self.assertIn("mean over the 2 pairs of the final validations: A 300.000, B 299.850: 0.05% apart, limit 1%",
                          r.stdout)
            r = subprocess.run([sys.executable, SCRIPT, a1, b1, a2, b2, "--last", "2"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("mean over the 2 pairs of the means of the last 2 validations: A 600.000, B 599.925", r.stdout)
            worse = write_run(d, "worse", [(100, 900.0), (300, 420.0)])  # 5% above: the means 2.83% apart
            self.assertEqual(subprocess.run([sys.executable, SCRIPT, a1, b1, a2, worse],
                                            capture_output=True).returncode, 1)
            shifted = write_run(d, "shifted", [(200, 400.0)])
            r = subprocess.run([sys.executable, SCRIPT, a1, b1, a2, shifted], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("pair 2: the runs were validated after different updates", r.stdout)
            r = subprocess.run([sys.executable, SCRIPT, a1, b1, a2], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("give runs in pairs (RUN_A RUN_B ...), not 3 run(s)", r.stderr)

    def test_different_final_updates_fail(self):
        with tempfile.TemporaryDirectory() as d:
            a = write_run(d, "a", [(300, 200.0)])
            b = write_run(d, "b", [(200, 200.0)])
            r = compare(a, b)
            self.assertEqual(r.returncode, 1)
            self.assertIn("different updates", r.stdout)

    def test_missing_metrics_or_validation_name_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            a = write_run(d, "a", [(300, 200.0)])
            empty = os.path.join(d, "empty")
            os.makedirs(empty)
            with open(os.path.join(empty, "metrics.jsonl"), "w") as f:
                f.write(json.dumps({"kind": "train", "update": 1, "perplexity": 9.0}) + "\n")
            r = compare(a, empty)
            self.assertEqual(r.returncode, 2)
            self.assertIn(os.path.join(empty, "metrics.jsonl"), r.stderr)
            self.assertIn("no validation record", r.stderr)
            r = compare(a, os.path.join(d, "absent"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("cannot read", r.stderr)


if __name__ == "__main__":
    unittest.main()
