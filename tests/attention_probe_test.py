"""scripts/attention_probe.py: the value-mix measures of made-up matrices against closed forms, a
model whose attention is uniform by construction (full attention, the identity Linformer at k = n
and mean pooling must give the uniform numbers), a Linformer's value mix against an explicit sum,
and bad input refused."""
import json
import os
import struct
import sys
import tempfile
import unittest

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_probe as probe  # noqa: E402
import safetensors_io  # noqa: E402
import torch_reference as ref  # noqa: E402
from tiny_torch_model import TINY  # noqa: E402

BOS = 1


def write_shard(path, tokens, magic=b"LFSHARD\0"):
    """A version-1 shard of one document (the header's checksum is not read by the probe)."""
    tokens = np.asarray(tokens, dtype="<u2")
    body = tokens.tobytes() + b"\0" * (-len(tokens) * 2 % 8) + np.array([0, len(tokens)], dtype="<u8").tobytes()
    header = struct.pack("<8sIIQQQIIQ8s", magic, 1, 2, len(tokens), 1, 0, 40, 0, 64 + len(body), b"\0" * 8)
    with open(path, "wb") as f:
        f.write(header + body)


def uniform_attention_model(d, **changes):
    """A checkpoint directory whose queries are zero, so every head's attention is uniform."""
    cfg = ref.parse_config({**TINY, **changes})
    weights = ref.init_weights(cfg, torch.Generator().manual_seed(3))
    for layer in range(cfg.layers):
        w, b = weights[f"layers.{layer}.attn.in_proj.weight"], weights[f"layers.{layer}.attn.in_proj.bias"]
        w[: cfg.d_model] = 0.0
        b[: cfg.d_model] = 0.0
    os.makedirs(d, exist_ok=True)
    metadata = {"format": ref.WEIGHTS_FORMAT, "format_version": ref.WEIGHTS_FORMAT_VERSION,
                "model": ref.config_to_json(cfg, {**TINY, **changes})}
    safetensors_io.save(os.path.join(d, "model.safetensors"), weights, metadata)
    return cfg, weights


class Measures(unittest.TestCase):
    def test_identity_uniform_and_shift_against_closed_forms(self):
        T, w = 12, 2
        eye = probe.value_mix_stats(torch.eye(T)[None, None], w)
        self.assertEqual((eye["neighbours"], eye["self"], eye["distance"]), ([0.0], [1.0], [0.0]))
        self.assertEqual(eye["rank90"], [int(np.ceil(0.9 * T))])  # equal singular values
        # Uniform: query i has min(i, w) + min(T - 1 - i, w) neighbours among T positions.
        u = probe.uniform_stats(T, w)
        near = sum(min(i, w) + min(T - 1 - i, w) for i in range(T)) / (T * T)
        self.assertAlmostEqual(u["neighbours"], near)
        self.assertAlmostEqual(u["self"], 1.0 / T)
        self.assertAlmostEqual(u["distance"], (T * T - 1) / (3.0 * T))  # mean |i - j| over a T x T grid
        self.assertEqual(u["rank90"], 1)
        # Each query reads the next position's value (the last one wraps to position 0), signs flipped.
        shift = -torch.roll(torch.eye(T), 1, dims=1)[None, None]
        s = probe.value_mix_stats(shift, w)
        self.assertAlmostEqual(s["neighbours"][0], (T - 1) / T)
        self.assertAlmostEqual(s["distance"][0], 2 * (T - 1) / T)
        self.assertEqual(s["self"], [0.0])

    def test_entropy_and_rank(self):
        P = torch.tensor([[[[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]]]])  # (1, 1, 2 queries, 4 keys)
        self.assertAlmostEqual(probe.entropies(P)[0], 0.5)
        self.assertEqual(int(probe.rank90(torch.diag(torch.tensor([10.0, 1.0, 0.0])))), 1)
        self.assertEqual(int(probe.rank90(torch.diag(torch.tensor([5.0, 4.0, 1.0])))), 2)


class Probe(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.prepared = os.path.join(self.tmp.name, "prepared")
        os.makedirs(self.prepared)
        with open(os.path.join(self.prepared, "meta.json"), "w") as f:
            json.dump({"special_ids": {"bos": BOS, "pad": 0}}, f)
        self.tokens = list(np.random.default_rng(5).integers(5, 40, size=100))
        write_shard(os.path.join(self.prepared, "valid.bin"), self.tokens)

    def tearDown(self):
        self.tmp.cleanup()

    def run_probe(self, **changes):
        d = os.path.join(self.tmp.name, "ckpt")
        cfg, weights = uniform_attention_model(d, **changes)
        return cfg, weights, probe.probe(d, self.prepared, "valid", count=3, window=2)

    def test_blocks_start_with_bos_and_follow_the_stream(self):
        ids = probe.blocks(np.array(self.tokens), BOS, 16, 3)
        self.assertEqual(ids.shape, (3, 16))
        self.assertTrue((ids[:, 0] == BOS).all())
        self.assertEqual(ids[0, 1:].tolist(), self.tokens[:15])
        self.assertEqual(ids[2, 1:].tolist(), self.tokens[-15:])

    def test_uniform_attention_gives_the_uniform_numbers_in_every_attention_kind(self):
        for changes in ({"attention": "full"}, {"k_per_layer": [16, 16], "projection_init": "local"},
                        {"projection": "mean", "k_per_layer": [8, 4]}):
            cfg, _, r = self.run_probe(**changes)
            u = probe.uniform_stats(cfg.seq_len, 2)
            for layer in r["layers"]:
                for h in range(cfg.heads):
                    self.assertAlmostEqual(layer["entropy"][h], 1.0, places=5, msg=changes)
                    self.assertAlmostEqual(layer["neighbours"][h], u["neighbours"], places=5, msg=changes)
                    self.assertAlmostEqual(layer["distance"][h], u["distance"], places=4, msg=changes)
                    self.assertEqual(layer["rank90"][h], 1, msg=changes)

    def test_a_linformers_value_mix_is_the_mean_of_fs_columns(self):
        cfg, weights, r = self.run_probe()  # TINY: headwise, learned random E and F, k = 8 and 4
        for layer in range(cfg.layers):
            f = weights[f"layers.{layer}.attn.proj_f"].double().numpy()  # (K, n)
            A = np.tile(f.mean(axis=0), (cfg.seq_len, 1))  # every query: uniform over K, so row = mean of F's rows
            W = np.abs(A) / np.abs(A).sum(axis=1, keepdims=True)
            i = np.arange(cfg.seq_len)
            dist = np.abs(i[:, None] - i[None, :])
            self.assertAlmostEqual(r["layers"][layer]["neighbours"][0], (W * ((dist >= 1) & (dist <= 2))).sum(1).mean(), places=5)
            self.assertAlmostEqual(r["layers"][layer]["distance"][1], (W * dist).sum(1).mean(), places=4)
            self.assertAlmostEqual(r["layers"][layer]["entropy"][0], 1.0, places=5)
        self.assertEqual(sorted(r["projections"]), [f"layers.{l}.attn.proj_{m}" for l in range(2) for m in "ef"])

    def test_a_band_adds_its_neighbours_to_the_value_mix(self):
        # Uniform attention over the K compressed keys and the band's 2 or 3 keys (window 1, every
        # position real): query i's mix is (sum of F's rows + its band's indicator) / (K + band size).
        cfg, weights, r = self.run_probe(local_window=1)
        n = cfg.seq_len
        i = np.arange(n)
        dist = np.abs(i[:, None] - i[None, :])
        band = (dist <= 1).astype(float)
        for layer in range(cfg.layers):
            f = weights[f"layers.{layer}.attn.proj_f"].double().numpy()  # (K, n)
            A = (f.sum(axis=0)[None, :] + band) / (f.shape[0] + band.sum(axis=1, keepdims=True))
            W = np.abs(A) / np.abs(A).sum(axis=1, keepdims=True)
            self.assertAlmostEqual(r["layers"][layer]["neighbours"][0], (W * ((dist >= 1) & (dist <= 2))).sum(1).mean(), places=5)
            self.assertAlmostEqual(r["layers"][layer]["distance"][1], (W * dist).sum(1).mean(), places=4)
            # Uniform over K + band size keys: entropy 1, and the band's share its size over that.
            size = band.sum(axis=1)
            for h in range(cfg.heads):
                self.assertAlmostEqual(r["layers"][layer]["entropy"][h], 1.0, places=5)
                self.assertAlmostEqual(r["layers"][layer]["band"][h], (size / (f.shape[0] + size)).mean(), places=6)
            self.assertEqual(r["layers"][layer]["keys"], f"{f.shape[0]} + 3")
        d = os.path.join(self.tmp.name, "max")
        uniform_attention_model(d, projection="max", k_per_layer=[8, 4], local_window=1)
        with self.assertRaisesRegex(ref.InputError, "local band beside max pooling"):
            probe.probe(d, self.prepared, "valid", count=3, window=2)

    def test_bad_input_is_refused_naming_it(self):
        d = os.path.join(self.tmp.name, "ckpt")
        uniform_attention_model(d)
        write_shard(os.path.join(self.prepared, "test.bin"), self.tokens, magic=b"NOTSHARD")
        with self.assertRaises(SystemExit) as refused:
            probe.probe(d, self.prepared, "test")
        self.assertIn("test.bin: not a version-1 token shard", str(refused.exception))
        write_shard(os.path.join(self.prepared, "test.bin"), [7] * 5)
        with self.assertRaises(SystemExit) as refused:
            probe.probe(d, self.prepared, "test")
        self.assertIn("fewer than a block's 15", str(refused.exception))
        write_shard(os.path.join(self.prepared, "test.bin"), [45] * 40)
        with self.assertRaises(SystemExit) as refused:
            probe.probe(d, self.prepared, "test")
        self.assertIn("outside the model's vocabulary of 40", str(refused.exception))


if __name__ == "__main__":
    unittest.main()
