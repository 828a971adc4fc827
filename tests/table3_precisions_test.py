"""scripts/table3_precisions.py: fp32 and bf16 `bench attention` grids side by side, on made-up CSVs."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "table3_precisions.py")
FIELDS = ["n", "k", "attention", "status", "bytes_per_sequence", "fixed_bytes", "max_batch", "timed_batch",
          "passes", "seconds_per_sequence", "estimated_seconds_per_sequence", "gflops_per_s", "speedup",
          "memory_saving", "paper_speedup", "paper_memory_saving"]


def write_grid(path, cells):
    """cells: {(n, k): (status, seconds per sequence)}."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for (n, k), (status, seconds) in cells.items():
            writer.writerow({"n": n, "k": k, "attention": "full" if k == 0 else "linformer", "status": status,
                             "bytes_per_sequence": 2**20 * (n // 256), "seconds_per_sequence": seconds,
                             "gflops_per_s": 100.0 if seconds else ""})
    return path


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class Table3Precisions(unittest.TestCase):
    def test_ratios_per_cell_and_statuses_of_cells_not_measured(self):
        with tempfile.TemporaryDirectory() as d:
            fp32 = write_grid(os.path.join(d, "fp32.csv"), {
                (512, 0): ("measured", 0.030), (512, 128): ("measured", 0.020),
                (1024, 0): ("over time limit", ""), (1024, 128): ("measured", 0.050)})
            bf16 = write_grid(os.path.join(d, "bf16.csv"), {
                (512, 0): ("measured", 0.012), (512, 128): ("measured", 0.016),
                (1024, 0): ("measured", 0.100), (1024, 128): ("measured", 0.020)})
            r = run(fp32, bf16)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.splitlines()
            speedups = lines.index("### bf16 over fp32: time per sequence (fp32 ÷ bf16)")
            # 0.030 / 0.012 = 2.5, 0.020 / 0.016 = 1.25; 0.050 / 0.020 = 2.5 and fp32 full not measured.
            self.assertEqual(lines[speedups + 4], "| 512 | 2.50x | 1.25x |")
            self.assertEqual(lines[speedups + 5], "| 1024 | over time limit | 2.50x |")
            linformer = lines.index("### Linformer over full attention: time per sequence, fp32 / bf16")
            # fp32: 0.030 / 0.020 = 1.5; bf16: 0.012 / 0.016 = 0.75; at n = 1024 fp32 has no full time.
            self.assertEqual(lines[linformer + 4], "| 512 |  | 1.50x / 0.75x |")
            self.assertEqual(lines[linformer + 5], "| 1024 |  | – / 5.00x |")
            self.assertIn("| 1024 | full | over time limit | 100.0 | – | 100.0 | 4.0 | 4.0 |", r.stdout)

    def test_different_grids_and_bad_files_are_refused_naming_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            a = write_grid(os.path.join(d, "a.csv"), {(512, 0): ("measured", 0.03)})
            b = write_grid(os.path.join(d, "b.csv"), {(1024, 0): ("measured", 0.03)})
            r = run(a, b)
            self.assertEqual(r.returncode, 2)
            self.assertIn("hold different cells", r.stderr)
            bad = os.path.join(d, "bad.csv")
            with open(bad, "w") as f:
                f.write("n,k\n512,0\n")
            r = run(a, bad)
            self.assertEqual(r.returncode, 2)
            self.assertIn(f"{bad}: no column attention", r.stderr)
            r = run(a, os.path.join(d, "missing.csv"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("missing.csv", r.stderr)


if __name__ == "__main__":
    unittest.main()
