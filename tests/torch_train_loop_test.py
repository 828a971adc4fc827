"""Tests the independent PyTorch training loop (scripts/torch_train_loop.py) on its own.

Run with Debian's python, which has torch: /usr/bin/python3 tests/torch_train_loop_test.py
"""

import contextlib
import io
import math
import os
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import safetensors_io  # noqa: E402
import torch_reference as ref  # noqa: E402
import torch_train_loop as loop  # noqa: E402
from tiny_torch_model import TINY  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "torch_train_loop.py")


def options(*argv):
    """Parsed options; --weights, --batches and --out are placeholders here."""
    return loop._parser().parse_args(["--weights", "w", "--batches", "b", "--out", "o", *argv])


def weights_for(cfg, seed=1):
    return {n: t.double() for n, t in ref.init_weights(cfg, torch.Generator().manual_seed(seed)).items()}


def batches_for(cfg, count, rows=3, seed=10):
    return [ref.random_batch(cfg, rows, 12, seed + i, min_length=4) for i in range(count)]


def concatenate(a, b):
    """One batch holding the rows of a and then b (the same T)."""
    T = a.ids.shape[1]
    return ref.Batch(
        torch.cat([a.ids, b.ids]),
        torch.cat([a.lengths, b.lengths]),
        torch.cat([a.masked_positions, b.masked_positions + a.ids.shape[0] * T]),
        torch.cat([a.targets, b.targets]),
    )


class Schedule(unittest.TestCase):
    def lrs(self, *argv, updates=10):
        o = options("--lr", "1.0", "--max-updates", str(updates), *argv)
        return [loop.learning_rate(o, u) for u in range(1, updates + 1)]

    def test_polynomial_is_fairseqs(self):
        lrs = self.lrs("--warmup-updates", "4", "--end-lr", "0.1", "--power", "2")
        self.assertEqual(lrs[:4], [0.25, 0.5, 0.75, 1.0])  # lr·u/warmup, u from 1
        for u in range(5, 11):  # fairseq polynomial_decay: (lr − end)·(1 − (u − w)/(N − w))^p + end
            self.assertAlmostEqual(lrs[u - 1], 0.9 * (1 - (u - 4) / 6) ** 2 + 0.1, places=15)
        self.assertEqual(lrs[-1], 0.1)  # end_lr at max_updates

    def test_other_schedules(self):
        self.assertEqual(self.lrs("--schedule", "linear", "--warmup-updates", "0")[4], 0.5)
        self.assertAlmostEqual(
            self.lrs("--schedule", "cosine", "--warmup-updates", "2")[5], 0.5, places=15
        )  # half way through the decay
        self.assertEqual(self.lrs("--schedule", "constant", "--warmup-updates", "2")[2:], [1.0] * 8)
        self.assertAlmostEqual(
            self.lrs("--schedule", "inverse_sqrt", "--warmup-updates", "4")[8], math.sqrt(4 / 9)
        )

    def test_past_max_updates_stays_at_end_lr(self):
        o = options("--lr", "1.0", "--max-updates", "10", "--warmup-updates", "2", "--end-lr", "0.2")
        self.assertEqual(loop.learning_rate(o, 15), 0.2)


class Loop(unittest.TestCase):
    def setUp(self):
        self.cfg = ref.parse_config(TINY)
        self.params = weights_for(self.cfg)

    def run_loop(self, batches, *argv, cfg=None):
        o = options("--lr", "1e-2", "--warmup-updates", "0", "--max-updates", "10", *argv)
        return loop.train(self.params, cfg or self.cfg, batches, o)

    def test_accumulation_equals_one_big_batch(self):
        micro = batches_for(self.cfg, 4)
        big = [concatenate(micro[0], micro[1]), concatenate(micro[2], micro[3])]
        accumulated = self.run_loop(micro, "--accumulation", "2", "--clip-norm", "0.5")
        one = self.run_loop(big, "--accumulation", "1", "--clip-norm", "0.5")
        for got, want in zip(accumulated[:3], one[:3]):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
        self.assertTrue(torch.equal(accumulated[3], one[3]))  # masked tokens per update
        for name in self.params:
            torch.testing.assert_close(accumulated[4][name], one[4][name], rtol=0, atol=1e-12)

    def test_loss_is_the_mean_over_the_updates_masked_tokens(self):
        micro = batches_for(self.cfg, 2)
        losses = self.run_loop(micro, "--accumulation", "2", "--lr", "0")[0]
        ce = [ref.forward(self.params, self.cfg, b)[0].item() * b.targets.shape[0] for b in micro]
        masked = sum(b.targets.shape[0] for b in micro)
        self.assertAlmostEqual(losses[0].item(), sum(ce) / masked, places=12)

    def test_clipping_scales_the_gradient(self):
        # With a huge ε, Adam's first step is lr·g/ε: proportional to the (clipped) gradient.
        batch = batches_for(self.cfg, 1)
        common = ("--eps", "1e9", "--lr", "1e6", "--weight-decay", "0", "--beta1", "0", "--beta2", "0")
        _, norm, _, _, free = self.run_loop(batch, *common, "--clip-norm", "0")
        _, clipped_norm, _, _, clipped = self.run_loop(
            batch, *common, "--clip-norm", str(norm.item() / 4)
        )
        self.assertEqual(norm.item(), clipped_norm.item())  # the logged norm is before clipping
        name = "layers.0.ffn.fc1.weight"
        torch.testing.assert_close(
            clipped[name] - self.params[name], (free[name] - self.params[name]) / 4, rtol=1e-8, atol=0
        )

    def test_weight_decay_groups(self):
        # After one update the two runs differ only by the decoupled decay, lr·wd·p.
        batch = batches_for(self.cfg, 1)
        constant = ("--schedule", "constant")  # lr = 1e-2 at update 1
        plain = self.run_loop(batch, *constant, "--weight-decay", "0")[4]
        for decay_all in (False, True):
            extra = ("--decay-bias-and-norm",) if decay_all else ()
            decayed = self.run_loop(batch, *constant, "--weight-decay", "0.5", *extra)[4]
            for name, p in self.params.items():
                expected = 1e-2 * 0.5 * p if ref.is_decayed(name, decay_all) else torch.zeros_like(p)
                torch.testing.assert_close(plain[name] - decayed[name], expected, rtol=1e-9,
                                           atol=1e-15, msg=f"{name}, decay_all={decay_all}")

    def test_frozen_projections_are_untouched(self):
        cfg = ref.parse_config(dict(TINY, freeze_projection=True))
        final = self.run_loop(batches_for(cfg, 2), "--weight-decay", "0.5", cfg=cfg)[4]
        self.assertTrue(torch.equal(final["layers.0.attn.proj_e"], self.params["layers.0.attn.proj_e"]))
        self.assertFalse(torch.equal(final["layers.0.attn.in_proj.weight"],
                                     self.params["layers.0.attn.in_proj.weight"]))

    def test_loss_goes_down(self):
        batch = batches_for(self.cfg, 1)
        losses = self.run_loop(batch * 10, "--lr", "3e-2")[0]
        self.assertLess(losses[-1].item(), 0.8 * losses[0].item())


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.cfg = ref.parse_config(TINY)
        self.weights, self.batches, self.out = (
            os.path.join(self.dir.name, n) for n in ("w", "b", "o")
        )
        safetensors_io.save(
            self.weights,
            ref.init_weights(self.cfg, torch.Generator().manual_seed(1)),
            {"format": ref.WEIGHTS_FORMAT, "format_version": ref.WEIGHTS_FORMAT_VERSION,
             "model": ref.config_to_json(self.cfg, TINY)},
        )
        self.write_batches(batches_for(self.cfg, 4))

    def tearDown(self):
        self.dir.cleanup()

    def write_batches(self, batches, drop=None):
        tensors = {}
        for i, batch in enumerate(batches):
            for field, t in batch.tensors().items():
                tensors[f"batch.{i}.{field}"] = t
        tensors.pop(drop, None)
        safetensors_io.save(self.batches, tensors, {})

    def run_main(self, *argv):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = loop.main(["--weights", self.weights, "--batches", self.batches, "--out", self.out,
                              "--max-updates", "10", "--warmup-updates", "1", *argv])
        return code, stderr.getvalue()

    def test_script_writes_its_outputs(self):
        subprocess.run(
            [sys.executable, SCRIPT, "--weights", self.weights, "--batches", self.batches, "--out",
             self.out, "--max-updates", "4", "--accumulation", "2", "--warmup-updates", "1"],
            check=True, capture_output=True,
        )
        out, metadata = safetensors_io.load(self.out)
        self.assertEqual(metadata["format"], "linformer-train-loop-output")
        for name in ("loss", "grad_norm", "lr", "masked"):
            self.assertEqual(out[name].shape, (2,), name)
        self.assertEqual(out["loss"].dtype, torch.float64)
        self.assertEqual(set(n for n in out if n.startswith("param.")),
                         {"param." + n for n in ref.parameter_shapes(self.cfg)})

    def test_errors_name_the_problem(self):
        cases = [
            (("--accumulation", "3"), "4 micro-batches is not a whole number of updates"),
            (("--max-updates", "2"), "4 updates of 1 micro-batches exceed --max-updates 2"),
            (("--clip-norm", "-1"), "--clip-norm must be >= 0"),
            (("--beta2", "1"), "--beta2 must be in [0, 1)"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, err = self.run_main(*argv)
                self.assertEqual(code, 1)
                self.assertIn(message, err)
        self.write_batches(batches_for(self.cfg, 4), drop="batch.2.targets")
        code, err = self.run_main()
        self.assertEqual(code, 1)
        self.assertIn("micro-batch 2: missing tensor 'targets'", err)
        safetensors_io.save(self.batches, {"batch.0.ids": torch.zeros(1, 2, dtype=torch.int32),
                                           "batch.x.ids": torch.zeros(1, dtype=torch.int32)}, {})
        code, err = self.run_main()
        self.assertEqual(code, 1)
        self.assertIn("unexpected tensor 'batch.x.ids'", err)


if __name__ == "__main__":
    unittest.main()
