"""scripts/projection_locality.py: participation ratios of made-up projections, and bad input refused."""
import os
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


if __name__ == "__main__":
    unittest.main()
