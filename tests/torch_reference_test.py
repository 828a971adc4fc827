"""Tests the independent PyTorch reference (scripts/torch_reference.py) and its safetensors I/O.

Run with Debian's python, which has torch: /usr/bin/python3 tests/torch_reference_test.py
"""

import contextlib
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import safetensors_io  # noqa: E402
import torch_reference as ref  # noqa: E402
from tiny_torch_model import TINY  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "torch_reference.py")

ALL_VARIANTS = [(p, s) for p in ref.PROJECTIONS for s in ref.SHARINGS]


def tiny_config(**overrides):
    model = dict(TINY, **overrides)
    if model.get("sharing") == "layerwise" and "k_per_layer" not in overrides:
        model["k_per_layer"] = [4, 4]  # one shared projection needs one k
    return ref.parse_config(model)


def random_params(cfg, seed):
    """float64 parameters of the right shapes, larger than the init so every path matters."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in ref.parameter_shapes(cfg).items():
        t = torch.randn(shape, generator=g, dtype=torch.float64) * 0.5
        if ref.is_layer_norm(name) and name.endswith(".weight"):
            t += 1.0
        params[name] = t
    return params


def make_batch(sequences, T, masked):
    """sequences: lists of ids (without padding); masked: (b, t) pairs; targets are i + 5."""
    ids = torch.zeros(len(sequences), T, dtype=torch.long)
    for b, seq in enumerate(sequences):
        ids[b, : len(seq)] = torch.tensor(seq)
    positions = torch.tensor([b * T + t for b, t in masked])
    targets = torch.tensor([5 + 3 * i for i in range(len(masked))])
    return ref.Batch(ids, torch.tensor([len(s) for s in sequences]), positions, targets)


SEQUENCES = [
    [1, 7, 9, 4, 12, 30, 8],
    [1, 22, 5, 17, 4, 33, 6, 19, 4, 11, 25],
    [1, 13, 4, 29, 8],
]
MASKED = [(0, 3), (0, 5), (1, 4), (1, 8), (1, 10), (2, 2)]


def max_diff(a, b):
    return (a - b).abs().max().item()


class SafetensorsIO(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "t.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_round_trip(self):
        tensors = {
            "a": torch.randn(3, 5, dtype=torch.float64),
            "b.c": torch.randn(7),
            "ids": torch.arange(-3, 9, dtype=torch.int32).reshape(3, 4),
            "long": torch.tensor([2**40, -1]),
            "scalar": torch.tensor(2.5),
            "empty": torch.zeros(0, 4),
        }
        safetensors_io.save(self.path, tensors, {"k": "v", "model": '{"x": 1}'})
        loaded, metadata = safetensors_io.load(self.path)
        self.assertEqual(metadata, {"k": "v", "model": '{"x": 1}'})
        self.assertEqual(list(loaded), list(tensors))
        for name, t in tensors.items():
            self.assertEqual(loaded[name].dtype, t.dtype, name)
            self.assertEqual(loaded[name].shape, t.shape, name)
            self.assertTrue(torch.equal(loaded[name], t), name)
        with open(self.path, "rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
        self.assertEqual(header_len % 8, 0)

    def write_raw(self, header, data, header_len=None):
        header_bytes = json.dumps(header).encode()
        with open(self.path, "wb") as f:
            length = len(header_bytes) if header_len is None else header_len
            f.write(struct.pack("<Q", length) + header_bytes + data)

    def assert_rejected(self, *fragments):
        with self.assertRaises(safetensors_io.SafetensorsError) as ctx:
            safetensors_io.load(self.path)
        for fragment in fragments:
            self.assertIn(fragment, str(ctx.exception))

    def test_corrupt_headers(self):
        ok = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
        data = bytes(8)
        self.write_raw({"x": ok}, data)
        safetensors_io.load(self.path)  # the baseline is valid

        with open(self.path, "wb") as f:
            f.write(b"\x01\x02")
        self.assert_rejected("too short")
        self.write_raw({"x": ok}, data, header_len=10**6)
        self.assert_rejected("header length")
        with open(self.path, "wb") as f:
            f.write(struct.pack("<Q", 5) + b"{oops" + data)
        self.assert_rejected("not valid JSON")
        self.write_raw({"x": dict(ok, dtype="BF16")}, data)
        self.assert_rejected("'x'", "unsupported dtype 'BF16'")
        self.write_raw({"x": dict(ok, data_offsets=[0, 16])}, data)
        self.assert_rejected("'x'", "out of range")
        self.write_raw({"x": dict(ok, shape=[3])}, data)
        self.assert_rejected("'x'", "needs 12")
        self.write_raw({"x": dict(ok, shape=[2, -1])}, data)
        self.assert_rejected("'x'", "shape")
        self.write_raw({"x": dict(ok, data_offsets=[4, 12])}, bytes(12))
        self.assert_rejected("'x'", "gap or overlap")
        self.write_raw({"x": ok}, bytes(12))
        self.assert_rejected("cover 8 bytes")
        self.write_raw({"x": ok, "y": ok}, data)
        self.assert_rejected("gap or overlap")
        self.write_raw({"x": {"dtype": "F32", "shape": [2]}}, data)
        self.assert_rejected("'x'", "data_offsets")
        self.write_raw({"x": ok, "__metadata__": {"a": 1}}, data)
        self.assert_rejected("__metadata__")

    def test_save_rejects_unsupported_dtype(self):
        with self.assertRaises(safetensors_io.SafetensorsError):
            safetensors_io.save(self.path, {"x": torch.zeros(2, dtype=torch.float16)})


class ParameterNames(unittest.TestCase):
    """Every variant has exactly the tensors of the README's table (written out again here)."""

    def expected(self, projection, sharing, norm="post", attention="linformer"):
        C, F, V, n, H = 16, 32, 40, 16, 2
        k = [4, 4] if sharing == "layerwise" else [8, 4]
        shapes = {
            "embed.tokens": (V, C),
            "embed.positions": (n, C),
            "embed.ln.weight": (C,),
            "embed.ln.bias": (C,),
            "mlm_head.dense.weight": (C, C),
            "mlm_head.dense.bias": (C,),
            "mlm_head.ln.weight": (C,),
            "mlm_head.ln.bias": (C,),
            "mlm_head.bias": (V,),
        }
        if norm == "pre":
            shapes.update({"final_ln.weight": (C,), "final_ln.bias": (C,)})
        for l in range(2):
            p = f"layers.{l}."
            shapes.update({
                p + "attn.in_proj.weight": (3 * C, C),
                p + "attn.in_proj.bias": (3 * C,),
                p + "attn.out_proj.weight": (C, C),
                p + "attn.out_proj.bias": (C,),
                p + "ln_attn.weight": (C,),
                p + "ln_attn.bias": (C,),
                p + "ffn.fc1.weight": (F, C),
                p + "ffn.fc1.bias": (F,),
                p + "ffn.fc2.weight": (C, F),
                p + "ffn.fc2.bias": (C,),
                p + "ln_ffn.weight": (C,),
                p + "ln_ffn.bias": (C,),
            })
            if attention == "full" or projection in ("mean", "max"):
                continue
            matrix = (k[l], n) if projection == "linear" else (n // k[l],)
            if sharing == "none":
                shapes[p + "attn.proj_e"] = shapes[p + "attn.proj_f"] = (H,) + matrix
            elif sharing == "headwise":
                shapes[p + "attn.proj_e"] = shapes[p + "attn.proj_f"] = matrix
            elif sharing == "kv":
                shapes[p + "attn.proj_e"] = matrix
            else:
                shapes["shared_proj"] = matrix
        return shapes

    def test_every_variant(self):
        cases = [(p, s, "post", "linformer") for p, s in ALL_VARIANTS]
        cases += [("linear", "headwise", "pre", "linformer"), ("linear", "none", "post", "full")]
        for projection, sharing, norm, attention in cases:
            variant = dict(projection=projection, sharing=sharing, norm=norm, attention=attention)
            with self.subTest(**variant):
                cfg = tiny_config(**variant)
                expected = self.expected(projection, sharing, norm, attention)
                self.assertEqual(dict(ref.parameter_shapes(cfg)), expected)
                weights = ref.init_weights(cfg, torch.Generator().manual_seed(0))
                self.assertEqual({n: tuple(t.shape) for n, t in weights.items()}, expected)
                self.assertTrue(all(t.dtype == torch.float32 for t in weights.values()))
                ref.check_weights(cfg, weights)

    def test_init(self):
        cfg = tiny_config(projection="conv", sharing="none", norm="pre")
        w = ref.init_weights(cfg, torch.Generator().manual_seed(0))
        self.assertTrue(torch.equal(w["embed.tokens"][0], torch.zeros(16)))
        self.assertAlmostEqual(w["embed.tokens"][1:].std().item(), 0.02, delta=0.004)
        self.assertTrue(torch.equal(w["final_ln.weight"], torch.ones(16)))
        self.assertTrue(torch.equal(w["layers.0.attn.in_proj.bias"], torch.zeros(48)))
        self.assertTrue(torch.equal(w["layers.1.attn.proj_f"], torch.full((2, 4), 0.25)))
        paper = ref.init_weights(
            tiny_config(projection_init="paper", k_per_layer=[4, 4], seq_len=1024),
            torch.Generator().manual_seed(0),
        )
        self.assertAlmostEqual(paper["layers.0.attn.proj_e"].std().item(), 0.5, delta=0.03)
        local = ref.init_weights(tiny_config(projection_init="local", k_per_layer=[16, 3], sharing="none"),
                                 torch.Generator().manual_seed(0))
        self.assertTrue(torch.equal(local["layers.0.attn.proj_e"], torch.eye(16).expand(2, 16, 16)))
        windows = torch.zeros(3, 16)
        windows[0, 0:5], windows[1, 5:10], windows[2, 10:16] = 1 / 5, 1 / 5, 1 / 6
        self.assertTrue(torch.equal(local["layers.1.attn.proj_f"], windows.expand(2, 3, 16)))

    def test_sinusoidal_positions(self):
        cfg = tiny_config(positions="sinusoidal", d_model=16)
        table = ref.sinusoidal_positions(cfg)
        amplitude = math.sqrt(2.0) * cfg.init_std
        for t, c in [(0, 0), (0, 1), (5, 0), (5, 1), (7, 6), (7, 7), (15, 14), (15, 15)]:
            angle = t / 10000 ** ((c - c % 2) / 16)
            expected = amplitude * (math.sin(angle) if c % 2 == 0 else math.cos(angle))
            self.assertAlmostEqual(table[t, c].item(), expected, places=12, msg=f"row {t}, column {c}")
        self.assertAlmostEqual(table.pow(2).mean().sqrt().item(), cfg.init_std, places=12)
        weights = ref.init_weights(cfg, torch.Generator().manual_seed(0))
        ref.check_weights(cfg, weights)
        self.assertFalse(ref.is_trainable(cfg, "embed.positions"))
        self.assertTrue(ref.is_trainable(tiny_config(), "embed.positions"))
        moved = dict(weights, **{"embed.positions": weights["embed.positions"] + 1e-4})
        with self.assertRaisesRegex(ref.InputError, "'embed.positions' is not the sinusoidal table"):
            ref.check_weights(cfg, moved)
        batch = make_batch(SEQUENCES, 12, MASKED)
        _, _, _, grads = ref.forward_backward(weights, cfg, batch)
        self.assertNotIn("embed.positions", grads)
        self.assertIn("embed.tokens", grads)

    def test_check_weights_names_the_tensor(self):
        cfg = tiny_config(sharing="kv")
        weights = ref.init_weights(cfg, torch.Generator().manual_seed(0))
        bad = dict(weights)
        del bad["layers.1.attn.proj_e"]
        with self.assertRaisesRegex(ref.InputError, "missing tensor 'layers.1.attn.proj_e'"):
            ref.check_weights(cfg, bad)
        bad = dict(weights, **{"layers.1.attn.proj_f": torch.zeros(4, 16)})
        with self.assertRaisesRegex(ref.InputError, "unexpected tensor 'layers.1.attn.proj_f'"):
            ref.check_weights(cfg, bad)
        bad = dict(weights, **{"layers.0.ffn.fc1.weight": torch.zeros(16, 32)})
        shape_error = r"'layers.0.ffn.fc1.weight' has shape \[16, 32\]"
        with self.assertRaisesRegex(ref.InputError, shape_error):
            ref.check_weights(cfg, bad)

    def test_config_errors_name_the_key(self):
        for model, key in [
            ({k: v for k, v in TINY.items() if k != "heads"}, "'heads'"),
            (dict(TINY, heads=3), "heads = 3"),
            (dict(TINY, sharing="per-head"), "'sharing'"),
            (dict(TINY, k_per_layer=[8]), "'k_per_layer'"),
            (dict(TINY, projection="mean", k_per_layer=[8, 3]), r"k_per_layer\[1\]"),
            (dict(TINY, sharing="layerwise"), "layerwise"),
            (dict(TINY, freeze_projection="no"), "'freeze_projection'"),
            (dict(TINY, layer_norm_eps=0), "'layer_norm_eps'"),
        ]:
            with self.subTest(key=key), self.assertRaisesRegex(ref.InputError, key):
                ref.parse_config(model)


class Gradients(unittest.TestCase):
    """Autograd gradients against central finite differences, float64, a few entries per tensor."""

    def check(self, cfg, seed):
        params = random_params(cfg, seed)
        batch = make_batch(SEQUENCES, 12, MASKED)
        _, _, _, grads = ref.forward_backward(params, cfg, batch)
        self.assertEqual(set(grads), {n for n in params if ref.is_trainable(cfg, n)})
        g = torch.Generator().manual_seed(seed + 1)
        h = 1e-6
        for name, grad in grads.items():
            flat = params[name].view(-1)
            for i in torch.randint(flat.numel(), (3,), generator=g).tolist():
                saved = flat[i].item()
                flat[i] = saved + h
                up = ref.forward(params, cfg, batch)[0].item()
                flat[i] = saved - h
                down = ref.forward(params, cfg, batch)[0].item()
                flat[i] = saved
                numeric = (up - down) / (2 * h)
                analytic = grad.view(-1)[i].item()
                self.assertLess(
                    abs(numeric - analytic), 1e-7 + 1e-5 * abs(numeric), f"{name}[{i}]"
                )

    def test_full(self):
        self.check(tiny_config(attention="full"), 1)

    def test_full_pre_ln(self):
        self.check(tiny_config(attention="full", norm="pre"), 2)

    def test_linformer_variants(self):
        for projection, sharing, norm in [
            ("linear", "none", "post"),
            ("linear", "layerwise", "pre"),
            ("conv", "kv", "post"),
            ("max", "headwise", "post"),
            ("mean", "headwise", "pre"),
        ]:
            with self.subTest(projection=projection, sharing=sharing, norm=norm):
                self.check(tiny_config(projection=projection, sharing=sharing, norm=norm), 3)

    def test_frozen_projection_has_no_gradient(self):
        cfg = tiny_config(sharing="none", freeze_projection=True)
        batch = make_batch(SEQUENCES, 12, MASKED)
        _, _, _, grads = ref.forward_backward(random_params(cfg, 4), cfg, batch)
        self.assertNotIn("layers.0.attn.proj_e", grads)
        self.assertIn("layers.0.attn.in_proj.weight", grads)


class Equivalences(unittest.TestCase):
    def outputs(self, cfg, params, batch):
        loss, logits, encoder_out, _ = ref.forward_backward(params, cfg, batch)
        return loss, logits, encoder_out

    def assert_same_outputs(self, a, b, tol):
        for x, y, what in zip(a, b, ("loss", "logits", "encoder_out")):
            self.assertLess(max_diff(x, y), tol, what)

    def test_linformer_with_identity_projection_is_full_attention(self):
        full = tiny_config(attention="full")
        lin = tiny_config(k_per_layer=[16, 16], sharing="headwise")
        params = random_params(full, 5)
        lin_params = dict(params)
        for l in range(2):
            lin_params[f"layers.{l}.attn.proj_e"] = torch.eye(16, dtype=torch.float64)
            lin_params[f"layers.{l}.attn.proj_f"] = torch.eye(16, dtype=torch.float64)
        g = torch.Generator().manual_seed(6)
        ids = torch.randint(5, 40, (2, 16), generator=g)
        ids[:, 0] = ref.BOS
        lengths, targets = torch.tensor([16, 16]), torch.tensor([5, 6, 7, 8])
        batch = ref.Batch(ids, lengths, torch.tensor([3, 9, 20, 31]), targets)
        a = ref.forward_backward(params, full, batch)
        b = ref.forward_backward(lin_params, lin, batch)
        self.assert_same_outputs(a[:3], b[:3], 1e-10)
        for name, grad in a[3].items():
            self.assertLess(max_diff(grad, b[3][name]), 1e-10, name)

    def test_full_attention_matches_torch_transformer(self):
        """Embedding and blocks against torch.nn.TransformerEncoderLayer, post- and pre-LN."""
        batch = make_batch(SEQUENCES, 12, MASKED)
        for norm in ref.NORMS:
            with self.subTest(norm=norm):
                cfg = tiny_config(attention="full", norm=norm)
                params = random_params(cfg, 12)
                x = params["embed.tokens"][batch.ids] + params["embed.positions"][:12]
                x = torch.nn.functional.layer_norm(
                    x, (16,), params["embed.ln.weight"], params["embed.ln.bias"], 1e-5
                )
                for l in range(2):
                    block = torch.nn.TransformerEncoderLayer(
                        16, 2, 32, dropout=0.0, activation="gelu", layer_norm_eps=1e-5,
                        batch_first=True, norm_first=norm == "pre", dtype=torch.float64,
                    )
                    p = f"layers.{l}."
                    own = {
                        "self_attn.in_proj_weight": p + "attn.in_proj.weight",
                        "self_attn.in_proj_bias": p + "attn.in_proj.bias",
                        "self_attn.out_proj.weight": p + "attn.out_proj.weight",
                        "self_attn.out_proj.bias": p + "attn.out_proj.bias",
                        "linear1.weight": p + "ffn.fc1.weight",
                        "linear1.bias": p + "ffn.fc1.bias",
                        "linear2.weight": p + "ffn.fc2.weight",
                        "linear2.bias": p + "ffn.fc2.bias",
                        "norm1.weight": p + "ln_attn.weight",
                        "norm1.bias": p + "ln_attn.bias",
                        "norm2.weight": p + "ln_ffn.weight",
                        "norm2.bias": p + "ln_ffn.bias",
                    }
                    block.load_state_dict({theirs: params[ours] for theirs, ours in own.items()})
                    block.train()  # dropout is 0; training mode avoids the inference fast path
                    x = block(x, src_key_padding_mask=~batch.real)
                if norm == "pre":
                    x = torch.nn.functional.layer_norm(
                        x, (16,), params["final_ln.weight"], params["final_ln.bias"], 1e-5
                    )
                _, _, encoder_out, _ = ref.forward_backward(params, cfg, batch)
                self.assertLess(max_diff(encoder_out, x.detach()), 1e-12)

    def test_bias_added_after_compression(self):
        """K̃ = P(x W_K) + b_K and Ṽ = P(x W_V) + b_V, not P(x W_K + b_K) (the paper's order).

        Then b_K shifts all scores of a query equally (zero gradient), and b_V shifts every
        attention output by b_V, the same as adding W_out b_V to the out_proj bias.
        """
        batch = make_batch(SEQUENCES, 11, MASKED)
        for projection in ref.PROJECTIONS:
            with self.subTest(projection=projection):
                cfg = tiny_config(projection=projection, sharing="none")
                params = random_params(cfg, 13)
                loss, _, encoder_out, grads = ref.forward_backward(params, cfg, batch)
                for l in range(2):
                    key_bias_grad = grads[f"layers.{l}.attn.in_proj.bias"][16:32]
                    self.assertLess(key_bias_grad.abs().max().item(), 1e-14)
                delta = torch.randn(16, dtype=torch.float64)
                shifted_v, shifted_out = dict(params), dict(params)
                bias = params["layers.1.attn.in_proj.bias"].clone()
                bias[32:] += delta
                shifted_v["layers.1.attn.in_proj.bias"] = bias
                w_out = params["layers.1.attn.out_proj.weight"]
                shifted_out["layers.1.attn.out_proj.bias"] = (
                    params["layers.1.attn.out_proj.bias"] + w_out @ delta
                )
                a = ref.forward(shifted_v, cfg, batch)
                b = ref.forward(shifted_out, cfg, batch)
                self.assertLess(max_diff(a[2], b[2]), 1e-12)
                self.assertGreater(max_diff(a[2], encoder_out), 1e-3)  # the shift matters

    def test_padding_invariance(self):
        """The same sequences padded to T = 11 or T = n = 16 give the same results."""
        short = make_batch(SEQUENCES, 11, MASKED)
        long = make_batch(SEQUENCES, 16, MASKED)
        cases = [("linear", "none", "full", "post"), ("linear", "none", "full", "pre")]
        cases += [(p, s, "linformer", "post") for p, s in ALL_VARIANTS]
        cases += [("linear", "kv", "linformer", "pre"), ("max", "none", "linformer", "pre")]
        for projection, sharing, attention, norm in cases:
            variant = dict(projection=projection, sharing=sharing, attention=attention, norm=norm)
            with self.subTest(**variant):
                cfg = tiny_config(**variant)
                params = random_params(cfg, 7)
                a = ref.forward_backward(params, cfg, short)
                b = ref.forward_backward(params, cfg, long)
                self.assertLess(max_diff(a[0], b[0]), 1e-12, "loss")
                self.assertLess(max_diff(a[1], b[1]), 1e-12, "logits")
                for i, seq in enumerate(SEQUENCES):
                    n = len(seq)
                    self.assertLess(max_diff(a[2][i, :n], b[2][i, :n]), 1e-12, "encoder_out")
                    # and alone in a batch without any padding
                    alone = make_batch([seq], n, [(0, 1)])
                    c = ref.forward_backward(params, cfg, alone)
                    self.assertLess(max_diff(a[2][i, :n], c[2][0]), 1e-12, "encoder_out alone")
                for name, grad in a[3].items():
                    self.assertLess(max_diff(grad, b[3][name]), 1e-12, name)

    def test_padded_ids_do_not_matter(self):
        """Whatever the padded positions hold, the real positions' results are the same."""
        batch = make_batch(SEQUENCES, 16, MASKED)
        garbage = make_batch(SEQUENCES, 16, MASKED)
        garbage.ids[~garbage.real] = torch.randint(5, 40, (int((~garbage.real).sum()),))
        for projection in ref.PROJECTIONS:
            with self.subTest(projection=projection):
                cfg = tiny_config(projection=projection)
                params = random_params(cfg, 8)
                a, b = self.outputs(cfg, params, batch), self.outputs(cfg, params, garbage)
                self.assertLess(max_diff(a[0], b[0]), 1e-12)
                self.assertLess(max_diff(a[2][batch.real], b[2][batch.real]), 1e-12)

    def test_mean_is_linear_with_fixed_e(self):
        mean = tiny_config(projection="mean")
        linear = tiny_config(projection="linear", sharing="headwise")
        params = random_params(mean, 9)
        lin_params = dict(params)
        for l, k in enumerate(TINY["k_per_layer"]):
            s = 16 // k
            e = torch.zeros(k, 16, dtype=torch.float64)
            for j in range(k):
                e[j, j * s : (j + 1) * s] = 1.0 / s
            lin_params[f"layers.{l}.attn.proj_e"] = e
            lin_params[f"layers.{l}.attn.proj_f"] = e.clone()
        batch = make_batch(SEQUENCES, 11, MASKED)
        self.assert_same_outputs(
            self.outputs(mean, params, batch), self.outputs(linear, lin_params, batch), 1e-12
        )

    def test_conv_with_uniform_filter_is_mean(self):
        batch = make_batch(SEQUENCES, 11, MASKED)
        for sharing in ref.SHARINGS:
            with self.subTest(sharing=sharing):
                conv = tiny_config(projection="conv", sharing=sharing)
                mean = tiny_config(projection="mean", k_per_layer=list(conv.k_per_layer))
                params = random_params(mean, 10)
                expected = self.outputs(mean, params, batch)
                conv_params = dict(params)
                for name, shape in ref.parameter_shapes(conv).items():
                    if ref.is_projection(name):
                        conv_params[name] = torch.full(shape, 1.0 / shape[-1], dtype=torch.float64)
                self.assert_same_outputs(expected, self.outputs(conv, conv_params, batch), 1e-12)

    def test_max_pooling_over_real_rows_only(self):
        cfg = tiny_config(projection="max", k_per_layer=[4, 4])  # windows of s = 4
        T = 10
        real = torch.tensor([[True] * 6 + [False] * 4, [True] * 3 + [False] * 7])
        y = -1.0 - torch.rand(2, 2, T, 3, dtype=torch.float64)  # all real values negative
        y = y.masked_fill(~real[:, None, :, None], 100.0)  # padded rows, not even zeroed
        out = ref.compress(y, real, cfg, 0, None)
        self.assertEqual(tuple(out.shape), (2, 2, 4, 3))
        for b in range(2):
            for j in range(4):
                rows = [t for t in range(4 * j, 4 * j + 4) if t < T and real[b, t]]
                want = y[b, :, rows].max(dim=1).values if rows else torch.zeros(2, 3)
                self.assertTrue(torch.equal(out[b, :, j], want.to(out.dtype)), (b, j))
        # window 1 of row 0 is half padded: its maximum is negative, not the zeros of padding
        self.assertTrue((out[0, :, 1] < 0).all())


class AdamW(unittest.TestCase):
    def torch_adamw(self, params, cfg, batch, steps, lr, betas, eps, wd, decay_bias_and_norm):
        leaves = {n: torch.nn.Parameter(t.clone()) for n, t in params.items()}
        trainable = [n for n in leaves if ref.is_trainable(cfg, n)]
        decayed = [n for n in trainable if ref.is_decayed(n, decay_bias_and_norm)]
        groups = [
            {"params": [leaves[n] for n in decayed]},
            {"params": [leaves[n] for n in trainable if n not in decayed], "weight_decay": 0.0},
        ]
        groups = [grp for grp in groups if grp["params"]]
        opt = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=wd)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = ref.forward(leaves, cfg, batch)[0]
            loss.backward()
            losses.append(loss.item())
            opt.step()
        return losses, {n: t.detach() for n, t in leaves.items()}

    def test_matches_torch_optim(self):
        batch = make_batch(SEQUENCES, 11, MASKED)
        for decay_bias_and_norm, freeze in [(False, False), (True, True)]:
            with self.subTest(decay_bias_and_norm=decay_bias_and_norm, freeze=freeze):
                cfg = tiny_config(sharing="none", freeze_projection=freeze, norm="pre")
                params = random_params(cfg, 11)
                args = (params, cfg, batch, 4, 3e-2, 0.9, 0.98, 1e-6, 0.1, decay_bias_and_norm)
                losses, final = ref.adamw(*args)
                want_losses, want = self.torch_adamw(
                    params, cfg, batch, 4, 3e-2, (0.9, 0.98), 1e-6, 0.1, decay_bias_and_norm
                )
                want_losses = torch.tensor(want_losses, dtype=torch.float64)
                self.assertLess(max_diff(losses, want_losses), 1e-13)
                self.assertLess(losses[-1].item(), losses[0].item())
                for name, t in want.items():
                    got = final[name]
                    if name.endswith("attn.in_proj.bias"):
                        # The key bias shifts every score of a query equally: its gradient is 0
                        # up to rounding noise, which Adam scales to ~lr·noise/ε per step.
                        self.assertLess(max_diff(got[16:32], t[16:32]), 1e-10, name)
                        got, t = torch.cat([got[:16], got[32:]]), torch.cat([t[:16], t[32:]])
                    self.assertLess(max_diff(got, t), 1e-13, name)
                frozen = "layers.0.attn.proj_e"
                self.assertEqual(torch.equal(final[frozen], params[frozen]), freeze)

    def test_no_decay_groups(self):
        for name in ["embed.ln.weight", "layers.3.ln_attn.bias", "final_ln.weight",
                     "mlm_head.ln.weight", "mlm_head.bias", "layers.0.ffn.fc1.bias"]:
            self.assertFalse(ref.is_decayed(name), name)
            self.assertTrue(ref.is_decayed(name, decay_bias_and_norm=True), name)
        for name in ["embed.tokens", "embed.positions", "layers.0.attn.in_proj.weight",
                     "mlm_head.dense.weight", "shared_proj", "layers.1.attn.proj_f"]:
            self.assertTrue(ref.is_decayed(name), name)


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.config = self.path("config.json")
        with open(self.config, "w") as f:
            json.dump(dict(TINY, sharing="kv", k=4, init_std=0.02), f)
        self.weights, self.batch, self.out = self.path("w"), self.path("b"), self.path("o")

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def run_main(self, *argv):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = ref.main(list(argv))
        return code, stderr.getvalue()

    def write_inputs(self):
        code, err = self.run_main(
            "--write-random-weights", self.weights, "--config", self.config, "--seed", "5"
        )
        self.assertEqual(code, 0, err)
        code, err = self.run_main(
            "--write-random-batch", self.batch, "--config", self.config,
            "--batch-size", "4", "--seq-len", "12", "--seed", "6", "--min-length", "3",
        )
        self.assertEqual(code, 0, err)

    def test_forward_as_a_script(self):
        self.write_inputs()
        subprocess.run(
            [sys.executable, SCRIPT, "--weights", self.weights, "--batch", self.batch,
             "--out", self.out],
            check=True, capture_output=True,
        )
        out, metadata = safetensors_io.load(self.out)
        self.assertEqual(metadata["dtype"], "float64")
        cfg, weights = ref.read_weights(self.weights)
        batch = ref.check_batch(cfg, safetensors_io.load(self.batch)[0])
        M = batch.targets.shape[0]
        self.assertEqual(tuple(out["loss"].shape), (1,))
        self.assertEqual(tuple(out["logits"].shape), (M, 40))
        self.assertEqual(tuple(out["encoder_out"].shape), (4, 12, 16))
        self.assertEqual(
            {n[len("grad."):]: tuple(t.shape) for n, t in out.items() if n.startswith("grad.")},
            dict(ref.parameter_shapes(cfg)),
        )
        self.assertTrue(all(t.dtype == torch.float64 for t in out.values()))
        self.assertAlmostEqual(out["loss"].item(), math.log(40), delta=0.3)

    def test_random_inputs(self):
        self.write_inputs()
        weights, metadata = safetensors_io.load(self.weights)
        self.assertEqual(metadata["format"], "linformer-weights")
        self.assertEqual(metadata["format_version"], "1")
        self.assertEqual(json.loads(metadata["model"])["k_per_layer"], [8, 4])
        self.assertTrue(all(t.dtype == torch.float32 for t in weights.values()))
        batch, _ = safetensors_io.load(self.batch)
        self.assertTrue(all(t.dtype == torch.int32 for t in batch.values()))
        ids, lengths = batch["ids"], batch["lengths"]
        self.assertTrue(((lengths >= 3) & (lengths <= 12)).all())
        self.assertGreaterEqual(batch["masked_positions"].numel(), 1)
        real = torch.arange(12)[None, :] < lengths[:, None]
        self.assertTrue((ids[:, 0] == ref.BOS).all())
        self.assertTrue((ids[~real] == ref.PAD).all())
        flat = ids.reshape(-1)
        masked = batch["masked_positions"].long()
        self.assertTrue((flat[masked] == ref.MASK).all())
        self.assertTrue((batch["targets"] >= 5).all())
        self.assertTrue((masked % 12 != 0).all())
        others = real.reshape(-1).clone()
        others[masked] = False
        others[::12] = False
        self.assertTrue((flat[others] >= 5).all())

    def test_adam_and_float32(self):
        self.write_inputs()
        code, err = self.run_main(
            "--weights", self.weights, "--batch", self.batch, "--out", self.out,
            "--adam-steps", "3", "--lr", "0.01", "--dtype", "float32",
        )
        self.assertEqual(code, 0, err)
        out, _ = safetensors_io.load(self.out)
        self.assertEqual(tuple(out["losses"].shape), (3,))
        self.assertEqual(out["losses"].dtype, torch.float32)
        self.assertIn("param.layers.1.attn.proj_e", out)

    def test_errors_name_the_problem(self):
        self.write_inputs()
        weights, metadata = safetensors_io.load(self.weights)
        batch, _ = safetensors_io.load(self.batch)
        forward = ("--weights", self.weights, "--batch", self.batch, "--out", self.out)

        def expect_error(fragment):
            code, err = self.run_main(*forward)
            self.assertEqual(code, 1)
            self.assertIn(fragment, err)

        without = {n: t for n, t in weights.items() if n != "mlm_head.bias"}
        safetensors_io.save(self.weights, without, metadata)
        expect_error("missing tensor 'mlm_head.bias'")
        model = json.loads(metadata["model"])
        del model["ffn_dim"]
        safetensors_io.save(self.weights, weights, dict(metadata, model=json.dumps(model)))
        expect_error("'ffn_dim'")
        safetensors_io.save(self.weights, weights, dict(metadata, model="{"))
        expect_error("'model' is not valid JSON")
        safetensors_io.save(self.weights, weights, dict(metadata, format="other"))
        expect_error("'format'")
        safetensors_io.save(self.weights, weights, metadata)
        safetensors_io.save(self.batch, {n: t for n, t in batch.items() if n != "targets"})
        expect_error("missing tensor 'targets'")
        too_long = torch.full((4,), 13, dtype=torch.int32)
        safetensors_io.save(self.batch, dict(batch, lengths=too_long))
        expect_error("'lengths'")
        missing = self.path("nonexistent")
        code, err = self.run_main(*forward[:2], "--batch", missing, "--out", self.out)
        self.assertEqual(code, 1)
        self.assertIn("nonexistent", err)
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()
