"""The README's quick tour runs: its command blocks, in order, on the tiny recipe.

The blocks run with bash in a scratch directory laid out like the repository (build/linformer,
scripts/, recipes/ and data/brown/ linked in), after these substitutions only: the main job's
recipe becomes recipes/ci/tiny.toml, the placeholder corpus Brown's text, the vocabulary the tiny
recipe's. Skipped: the fine-tuning block (it downloads its data; `Finetune.*` test fine-tuning),
the MPI block (`mpi.equivalence` tests it) and the comparison with PyTorch (`scripts.bench_torch`);
`bench train` runs one step.

Usage: readme_tour_test.py BUILD/linformer   (exit 77, skipped, without Brown's text)
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = None
SUBSTITUTIONS = [
    ("recipes/brown/default.toml", "recipes/ci/tiny.toml"),
    ("path/to/my/texts/", "data/brown/text"),
    ("vocab_size = 16000", "vocab_size = 500"),
    ("build/linformer bench train --recipe recipes/bench/S.toml",
     "build/linformer bench train --recipe recipes/bench/S.toml --steps 1 --warmup 0"),
]
SKIPPED_BLOCKS = ("get_classification_data.sh", "mpirun ")
SKIPPED_LINES = ("ROUNDS=",)


def tour_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("\n## Quick tour\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)


class QuickTour(unittest.TestCase):
    def test_the_blocks_are_found(self):
        blocks = tour_blocks()
        self.assertGreaterEqual(len(blocks), 7)
        self.assertTrue(any("prepare --recipe" in b for b in blocks))
        self.assertTrue(any("--resume auto" in b for b in blocks))

    def test_every_block_runs_on_the_tiny_recipe(self):
        with tempfile.TemporaryDirectory() as work:
            os.makedirs(os.path.join(work, "build"))
            os.symlink(os.path.abspath(BINARY), os.path.join(work, "build", "linformer"))
            for folder in ("scripts", "recipes"):
                os.symlink(os.path.join(ROOT, folder), os.path.join(work, folder))
            os.makedirs(os.path.join(work, "data"))
            os.symlink(os.path.join(ROOT, "data", "brown"), os.path.join(work, "data", "brown"))
            with open(os.path.join(work, "some_file.txt"), "w") as f:
                f.write("The jury said the election was well conducted.\n"
                        "She opened the door and looked out at the garden.\n")
            ran = 0
            for block in tour_blocks():
                if any(s in block for s in SKIPPED_BLOCKS):
                    continue
                for old, new in SUBSTITUTIONS:
                    block = block.replace(old, new)
                block = "\n".join(line for line in block.splitlines() if not line.startswith(SKIPPED_LINES))
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, capture_output=True, text=True,
                                   env=dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2")))
                self.assertEqual(r.returncode, 0, f"the block\n{block}\nfailed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
                ran += 1
            self.assertGreaterEqual(ran, 5)
            self.assertTrue(os.path.isdir(os.path.join(work, "runs", "my_corpus", "checkpoints")))
            self.assertTrue(os.path.isdir(os.path.join(work, "runs", "my_full", "checkpoints")))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BINARY = sys.argv.pop(1)
    if not os.path.isfile(os.path.join(ROOT, "data", "brown", ".complete")):
        print("skipped: no Brown corpus (scripts/get_brown.sh)")
        sys.exit(77)
    unittest.main()
