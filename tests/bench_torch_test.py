"""scripts/bench_torch.py times the step `linformer bench train` times: forward, backward and
AdamW with the C++ side's settings (its JSON's `optimizer`), reported whole and without AdamW;
a JSON without those settings is refused with a message.

Usage: bench_torch_test.py LINFORMER_BINARY   (run from the repository root, as CTest does)
"""
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_torch  # noqa: E402
import torch_reference as ref  # noqa: E402

BINARY = None


class BenchTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.cpp_json = os.path.join(cls.dir.name, "cpp.json")
        subprocess.run([BINARY, "bench", "train", "--recipe", os.path.join(ROOT, "recipes", "ci", "tiny.toml"),
                        "--warmup", "1", "--steps", "1", "--set", "model.dropout=0",
                        "--set", "model.attention_dropout=0", "--json", cls.cpp_json],
                       check=True, capture_output=True, text=True)
        with open(cls.cpp_json) as f:
            cls.cpp = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def run_script(self, *extra):
        out = os.path.join(self.dir.name, "torch.json")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_torch.py"), "--from", self.cpp_json,
                            "--steps", "2", "--warmup", "1", "--threads", "1", "--json", out, *extra],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return json.load(f), r.stdout

    def test_times_forward_backward_and_adamw(self):
        result, stdout = self.run_script()
        self.assertEqual(result["optimizer"], "adamw")
        self.assertGreater(result["optimizer_ms"], 0)
        self.assertLessEqual(result["forward_backward_seconds"]["median"], result["step_seconds"]["median"])
        self.assertGreaterEqual(result["tokens_per_second_forward_backward"], result["tokens_per_second"])
        self.assertIn("optimizer (adamw)", stdout)

    def test_optimizer_none_times_forward_backward_only(self):
        result, _ = self.run_script("--optimizer", "none")
        self.assertEqual(result["optimizer"], "none")
        self.assertLess(result["optimizer_ms"], 1.0)  # only the clock's own cost

    def test_adamw_has_the_cpp_settings_and_decay_groups(self):
        cfg = ref.parse_config(self.cpp["model"], source=self.cpp_json)
        params = ref.init_weights(cfg, ref.torch.Generator().manual_seed(1))
        settings = dict(self.cpp["optimizer"], weight_decay=0.25)
        for decay_all in (False, True):
            optimizer = bench_torch.make_optimizer(dict(self.cpp, optimizer=dict(settings, decay_bias_and_norm=decay_all)),
                                                   params, cfg)
            decay_of = {id(p): g["weight_decay"] for g in optimizer.param_groups for p in g["params"]}
            for name, p in params.items():
                if not ref.is_trainable(cfg, name):
                    self.assertNotIn(id(p), decay_of, name)
                    continue
                undecayed = not decay_all and (ref.is_bias(name) or ref.is_layer_norm(name))
                self.assertEqual(decay_of[id(p)], 0.0 if undecayed else 0.25, name)
            group = optimizer.param_groups[0]
            self.assertEqual(group["lr"], settings["lr"])
            self.assertEqual(list(group["betas"]), settings["betas"])
            self.assertEqual(group["eps"], settings["eps"])

    def test_training_step_applies_adamw(self):
        # AdamW's first step from zero moments, computed here: p(1 - lr·wd) - lr·g / (|g| + eps).
        cfg = ref.parse_config(self.cpp["model"], source=self.cpp_json)
        params = ref.init_weights(cfg, ref.torch.Generator().manual_seed(1))
        batch = ref.random_batch(cfg, self.cpp["batch"], self.cpp["seq_len"], seed=1, min_length=self.cpp["seq_len"],
                                 mask_probability=0.2)
        trainable = [p for name, p in params.items() if ref.is_trainable(cfg, name)]
        for p in trainable:
            p.requires_grad_(True)
        settings = dict(self.cpp["optimizer"], lr=0.01, weight_decay=0.5, decay_bias_and_norm=True)
        optimizer = bench_torch.make_optimizer(dict(self.cpp, optimizer=settings), params, cfg)
        before = [p.detach().clone() for p in trainable]
        forward_backward, optimizer_step = bench_torch.training_step(params, cfg, batch, trainable,
                                                                      contextlib.nullcontext(), optimizer)
        self.assertGreater(forward_backward, 0)
        self.assertGreater(optimizer_step, 0)
        moved = 0
        for p, old in zip(trainable, before):
            g = p.grad
            expected = old * (1 - 0.01 * 0.5) - 0.01 * g / (g.abs() + settings["eps"])
            self.assertTrue(ref.torch.allclose(p.detach(), expected, rtol=1e-5, atol=1e-6))
            moved += int((p.detach() != old).any())
        self.assertEqual(moved, len(trainable))

    def test_json_without_optimizer_settings_is_refused(self):
        old = os.path.join(self.dir.name, "old.json")
        with open(old, "w") as f:
            json.dump({k: v for k, v in self.cpp.items() if k != "optimizer"}, f)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_torch.py"), "--from", old,
                            "--steps", "1", "--warmup", "0", "--threads", "1"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no AdamW settings", r.stderr)
        self.assertIn(old, r.stderr)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main()
