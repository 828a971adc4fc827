"""scripts/projection_locality.py: participation ratios of made-up projections, and bad input refused."""
import json
import os
import re
import sys
import tempfile
import unittest

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import projection_locality as pl  # noqa: E402
import safetensors_io  # noqa: E402


class ProjectionLocality(unittest.TestCase):
    def test_one_position_all_positions_and_random_rows(self):
        n = 300
        one_hot = np.eye(4, n)
        self.assertTrue(np.allclose(pl.participation_ratios(one_hot), 1.0))
        self.assertTrue(np.allclose(pl.participation_ratios(np.full((2, n), -0.3)), n))
        two = np.zeros((1, n))
        two[0, 5], two[0, 9] = 1.0, -1.0
        self.assertAlmostEqual(pl.participation_ratios(two)[0], 2.0)
        gaussian = np.random.default_rng(1).normal(0, 0.02, size=(64, n))
        self.assertAlmostEqual(float(np.median(pl.participation_ratios(gaussian))) / (n / 3), 1.0, delta=0.1)

    def test_reads_a_checkpoints_projections_only(self):
        with tempfile.TemporaryDirectory() as d:
            e = torch.zeros(3, 8)
            e[:, 2] = 1.0
            safetensors_io.save(os.path.join(d, "model.safetensors"),
                                {"layers.0.attn.proj_e": e, "layers.0.attn.proj_f": torch.ones(3, 8),
                                 "layers.0.attn.q.weight": torch.ones(4, 4)})
            rows = {r["tensor"]: r for r in pl.locality(d)}
            self.assertEqual(sorted(rows), ["layers.0.attn.proj_e", "layers.0.attn.proj_f"])
            self.assertAlmostEqual(rows["layers.0.attn.proj_e"]["median"], 1.0)
            self.assertAlmostEqual(rows["layers.0.attn.proj_f"]["max"], 8.0)
            # Layerwise sharing: one E = F for the whole model.
            safetensors_io.save(os.path.join(d, "model.safetensors"), {"shared_proj": e, "embed.tokens": torch.ones(4, 4)})
            self.assertEqual([r["tensor"] for r in pl.locality(d)], ["shared_proj"])

    def test_per_head_projections_get_a_median_per_head(self):
        with tempfile.TemporaryDirectory() as d:
            e = torch.ones(2, 3, 8)  # head 0 uniform over 8 positions, head 1 on one position
            e[1] = 0.0
            e[1, :, 4] = 2.0
            safetensors_io.save(os.path.join(d, "model.safetensors"), {"layers.0.attn.proj_e": e})
            (row,) = pl.locality(d)
            self.assertEqual(row["shape"], [2, 3, 8])
            self.assertEqual(row["head_medians"], [8.0, 1.0])
            self.assertAlmostEqual(row["min"], 1.0)

    def test_bad_input_is_refused_naming_it(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(SystemExit) as refused:
                pl.locality(d)
            self.assertIn("neither a checkpoint", str(refused.exception))
            safetensors_io.save(os.path.join(d, "model.safetensors"), {"embed.tokens": torch.ones(4, 4)})
            with self.assertRaises(SystemExit) as refused:
                pl.locality(d)
            self.assertIn("no learned projections", str(refused.exception))


class PublishedTable(unittest.TestCase):
    """results/brown/projection_locality/README.md's table against the measurements it reports
    (projection_locality.json) and each run's word_order.json: every median, head median and range
    cited is the file's, in layer order where one number stands for each layer."""

    FOLDER = os.path.join(ROOT, "results", "brown", "projection_locality")

    def rows(self):
        with open(os.path.join(self.FOLDER, "README.md")) as f:
            lines = [x for x in f if x.startswith("| ") and not x.startswith("| run ")]
        return [[c.strip() for c in x.strip().strip("|").split(" | ")] for x in lines]

    @staticmethod
    def numbers(cell):
        """The cell's integers, without the random width's "(random N)" and "layer L:" labels."""
        cell = re.sub(r"\(random \d+\)|layer \d+:|\*\*", "", cell)
        return [int(x) for x in re.findall(r"\d+", cell)]

    def test_every_row_is_the_files(self):
        with open(os.path.join(self.FOLDER, "projection_locality.json")) as f:
            measured = json.load(f)
        rows = self.rows()
        self.assertGreater(len(rows), 10)
        for run, nk, order, e_cell, f_cell in rows:
            name = run.split()[0]
            with self.subTest(run=name):
                tensors = measured[name]
                n = tensors[0]["n"]
                self.assertEqual(nk.split(", ")[0], str(n))
                with open(os.path.join(ROOT, "results", "brown", "runs", name, "word_order.json")) as f:
                    self.assertEqual(order, f"{json.load(f)['ratio']:.3f}")
                for random in re.findall(r"\(random (\d+)\)", e_cell + f_cell):
                    self.assertEqual(int(random), round(n / 3))
                for kind, cell in (("proj_e", e_cell), ("proj_f", f_cell)):
                    mine = [t for t in tensors if t["tensor"].endswith(kind) or t["tensor"] == "shared_proj"]
                    if any("head_medians" in t for t in mine):  # a median per head, or their range per layer
                        heads = {round(m) for t in mine for m in t["head_medians"]}
                        self.assertTrue(self.numbers(cell))
                        self.assertLessEqual(set(self.numbers(cell)), heads, cell)
                    elif self.numbers(cell) or kind == "proj_e":
                        self.assertEqual(self.numbers(cell), [round(t["median"]) for t in mine], cell)

    def test_the_new_seeds_reading_is_the_files(self):
        """The paragraph on the ten seed runs measured after the tendency was stated."""
        with open(os.path.join(self.FOLDER, "projection_locality.json")) as f:
            measured = json.load(f)
        with open(os.path.join(ROOT, "results", "brown", "verdicts.json")) as f:
            ppl = {name: r["valid_ppl"] for name, r in json.load(f)["runs"].items()}
        with open(os.path.join(self.FOLDER, "README.md")) as f:
            text = " ".join(f.read().split())

        def most_local(run):
            return min(m for t in measured[run] for m in t.get("head_medians", [t["median"]]))

        new = [f"linformer_n512_{m}_long_sinusoidal_warmup128_seed{s}"
               for m in ("k32", "k128", "k64_kv", "k64_none", "k64_layerwise") for s in (2, 3)]
        local = [round(most_local(r)) for r in new]
        big = [ppl[r] for r in new if "_k32_" not in r]
        self.assertIn(f"its most local layer on a median of {min(local)}–{max(local)} positions", text)
        self.assertIn(f"The eight at k = 64 and 128 end at {min(big):.1f}–{max(big):.1f}", text)
        self.assertIn(f"k = 32's two at {ppl[new[0]]:.1f} and {ppl[new[1]]:.1f}", text)
        runs = [r for r in measured if r.startswith("linformer_n512_k") and "_long_sinusoidal_warmup128" in r
                and "_k32_" not in r and "local" not in r]
        near = sorted(ppl[r] for r in runs if most_local(r) < 20)
        far = sorted(ppl[r] for r in runs if most_local(r) >= 20)
        self.assertLess(max(near), min(far))  # "held every time"
        self.assertIn(f"the {len(near)} with a layer under 20 positions end at {near[0]:.1f}–{near[-1]:.1f}, the "
                      f"{len(far)} without one at {' and '.join(f'{p:.1f}' for p in far)}", text)


class PublishedReading(unittest.TestCase):
    """The hand-written paragraphs of results/brown/projection_locality/README.md: every median,
    perplexity and shuffled-words ratio they cite, formatted here from projection_locality.json,
    verdicts.json and each run's word_order.json."""

    FOLDER = PublishedTable.FOLDER

    def setUp(self):
        with open(os.path.join(self.FOLDER, "projection_locality.json")) as f:
            self.measured = json.load(f)
        with open(os.path.join(ROOT, "results", "brown", "verdicts.json")) as f:
            self.ppl = {name: r["valid_ppl"] for name, r in json.load(f)["runs"].items()}
        with open(os.path.join(self.FOLDER, "README.md")) as f:
            self.text = " ".join(f.read().split())

    def cited(self, text):
        self.assertIn(text, self.text)

    def median(self, run, layer, kind):
        """The median row width of one layer's E ("e") or F ("f"), rounded as the page cites it."""
        suffix = "shared_proj" if kind == "shared" else f"layers.{layer}.attn.proj_{kind}"
        return round(next(t["median"] for t in self.measured[run] if t["tensor"] == suffix))

    def head(self, run, layer, kind, h):
        tensor = next(t for t in self.measured[run] if t["tensor"] == f"layers.{layer}.attn.proj_{kind}")
        return round(tensor["head_medians"][h])

    def order(self, run):
        with open(os.path.join(ROOT, "results", "brown", "runs", run, "word_order.json")) as f:
            return f"{json.load(f)['ratio']:.2f}"

    @staticmethod
    def warmup(model, seed=1):
        return f"linformer_{model}_long_sinusoidal_warmup128" + (f"_seed{seed}" if seed > 1 else "")

    def test_the_sharing_variants_and_seeds_are_the_files(self):
        k32, k64, k128 = (self.warmup(f"n512_k{k}") for k in (32, 64, 128))
        kv, layerwise, none = (self.warmup(f"n512_k64_{s}") for s in ("kv", "layerwise", "none"))
        self.cited(f"(k = 32: median {self.median(k32, 0, 'f')} positions in layer 0; k = 64: "
                   f"{self.median(k64, 2, 'f')} in layer 2; k = 128: {self.median(k128, 0, 'f')} in layer 0)")
        self.cited(f"kv {self.ppl[kv]:.1f} (one layer's E = F on a median of {self.median(kv, 1, 'e')} positions), "
                   f"layerwise {self.ppl[layerwise]:.1f} (the shared projection on {self.median(layerwise, 0, 'shared')}), "
                   f"none {self.ppl[none]:.1f} (one head's F in layer 0 on {self.head(none, 0, 'f', 1)}, another's in "
                   f"layer 3 on {self.head(none, 3, 'f', 1)}), headwise {self.ppl[k64]:.1f} (at best a median of "
                   f"{self.median(k64, 2, 'f')})")
        self.assertEqual(min(self.median(k64, layer, kind) for layer in range(4) for kind in "ef"),
                         self.median(k64, 2, "f"))  # "at best"
        width = self.median(k32, 0, "f")
        self.cited(f"median {width}, and ends at {self.ppl[k32]:.1f}: 32 rows of {width} positions cover at most "
                   f"{32 * width} of 512")
        seed2, seed3 = (self.warmup("n512_k64", s) for s in (2, 3))
        self.cited(f"ends at {self.ppl[seed2]:.1f} and {self.ppl[seed3]:.1f} against seed 1's {self.ppl[k64]:.1f}: "
                   f"seed 2's layer-1 value rows became local (median {self.median(seed2, 1, 'f')} positions), "
                   f"seed 3's most local layer (layer-1 values) reached a median of {self.median(seed3, 1, 'f')} "
                   f"and seed 1's best layer {self.median(k64, 2, 'f')}")
        local = {"kv": self.median(kv, 1, "e"), "seed 2": self.median(seed2, 1, "f"),
                 "k = 128": self.median(k128, 0, "f"), "layerwise": self.median(layerwise, 0, "shared"),
                 "none": self.head(none, 0, "f", 1)}
        near = sorted(self.ppl[r] for r in (kv, seed2, k128, layerwise, none))
        self.cited(f"end at {near[0]:.1f}–{near[-1]:.1f} ("
                   + ", ".join(f"{name} {w}" for name, w in local.items())
                   + f"), the two without one at {self.ppl[seed3]:.1f} and {self.ppl[k64]:.1f}; k = 32 "
                   f"({width} positions, {self.ppl[k32]:.1f})")
        self.assertEqual(list(local.values()), sorted(local.values()))
        self.cited(f"({self.median(seed3, 1, 'f')} and {self.ppl[seed3]:.1f} against {self.median(k64, 2, 'f')} "
                   f"and {self.ppl[k64]:.1f})")

    def test_the_local_start_and_longer_blocks_are_the_files(self):
        start = self.warmup("n512_k64_local")
        spread = [self.median(start, layer, kind) for layer in range(4) for kind in "ef"
                  if (layer, kind) not in ((0, "f"), (1, "f"))]
        self.cited(f"ends at {self.ppl[start]:.1f}, below all three random starts, yet most rows spread out again to "
                   f"random width (medians {min(spread)}–{max(spread)}); layer 1's value rows stayed local (median "
                   f"{self.median(start, 1, 'f')}) and layer 0's at {self.median(start, 0, 'f')}")
        n1024, n2048 = self.warmup("n1024_k64"), self.warmup("n2048_k64")
        self.cited(f"layer 0's value rows became local (median {self.median(n1024, 0, 'f')} positions of 1,024) and "
                   f"the run uses word order (shuffled words {self.order(n1024)}×, {self.ppl[n1024]:.1f})")
        widths = [self.median(n2048, layer, kind) for layer in range(4) for kind in "ef"]
        self.assertEqual(min(widths), self.median(n2048, 1, "f"))  # "at best layer 1's values"
        self.cited(f"(at best layer 1's values, median {self.median(n2048, 1, 'f')} of 2,048, random {round(2048 / 3)}) "
                   f"and the run ends a bag-of-words model ({self.order(n2048)}×, {self.ppl[n2048]:.1f})")
        runs = {k: self.warmup(f"n1024_k{k}") for k in (64, 128, 256)}
        width = {k: self.median(r, 0, "f") for k, r in runs.items()}
        ends = {k: f"({self.ppl[r]:.1f}, " for k, r in runs.items()}
        self.cited(f"k = 256 to a median of {width[256]} positions of 1,024 {ends[256]}shuffled words "
                   f"{self.order(runs[256])}×), k = 64 to {width[64]} {ends[64]}{self.order(runs[64])}×), "
                   f"k = 128 to {width[128]} {ends[128]}{self.order(runs[128])}×)")
        others = [self.median(r, layer, kind) for r in runs.values() for layer in range(1, 4) for kind in "f"]
        self.cited(f"every other layer's value rows stay near random width ({min(others)}–{max(others)}, random "
                   f"{round(1024 / 3)})")


if __name__ == "__main__":
    unittest.main()
