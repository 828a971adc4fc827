#!/usr/bin/env python3
"""Independent PyTorch reference of the Linformer masked-LM encoder (README, "The model").

Written from the specification only, as the check the C++ implementation is compared against.
Gradients come from autograd; the computation runs in float64 by default. Dropout is always off.

Modes:
  forward + gradients:
    torch_reference.py --weights W.safetensors --batch B.safetensors --out OUT.safetensors
                       [--dtype float64|float32]
    OUT holds loss [1], logits (M, V), encoder_out (B, T, C) and grad.<name> for every trainable
    parameter.
  AdamW steps on one batch (optimizer parity):
    ... --adam-steps N [--lr LR --beta1 B1 --beta2 B2 --eps EPS --weight-decay WD
                        --decay-bias-and-norm]
    OUT holds losses (N), the loss before each step, and param.<name> for every parameter after
    the last step.
  Random inputs, to test the reference on its own:
    torch_reference.py --write-random-weights W.safetensors --config CONFIG.json [--seed S]
    torch_reference.py --write-random-batch B.safetensors --config CONFIG.json --batch-size B
                       --seq-len T [--seed S] [--min-length L]

Every input error exits with status 1 and a message naming the tensor or key.
"""

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

PAD, BOS, EOS, UNK, MASK = 0, 1, 2, 3, 4
FIRST_ORDINARY_TOKEN = 5

WEIGHTS_FORMAT = "linformer-weights"
WEIGHTS_FORMAT_VERSION = "1"

NORMS = ("post", "pre")
ATTENTIONS = ("full", "linformer")
SHARINGS = ("none", "headwise", "kv", "layerwise")
PROJECTIONS = ("linear", "mean", "max", "conv")
PROJECTION_INITS = ("normal", "paper", "xavier", "local")
POSITIONS = ("learned", "sinusoidal")


class InputError(Exception):
    """Bad weights, batch, configuration or metadata; the message names what is wrong."""


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    layers: int
    d_model: int
    heads: int
    ffn_dim: int
    norm: str
    layer_norm_eps: float
    attention: str
    seq_len: int
    vocab_size: int
    k_per_layer: tuple = ()
    sharing: str = "headwise"
    projection: str = "linear"
    freeze_projection: bool = False
    init_std: float = 0.02  # random weights; the amplitude of sinusoidal positions
    positions: str = "learned"
    projection_init: str = "normal"  # only used to write random weights
    local_window: int = 0  # Linformer: keys at most this far away also attended at full resolution

    @property
    def head_dim(self):
        return self.d_model // self.heads

    @property
    def linformer(self):
        return self.attention == "linformer"

    @property
    def learned_projection(self):
        return self.linformer and self.projection in ("linear", "conv")

    def window(self, layer):
        """s = n / K_l, the pooling window of mean, max and conv projections."""
        return self.seq_len // self.k_per_layer[layer]


def _get(model, key, kind, source, default=None):
    """Reads model[key], checking its JSON type; a missing key is an error unless default."""
    if key not in model:
        if default is not None:
            return default
        raise InputError(f"{source}: missing key '{key}'")
    value = model[key]
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
    }[kind]
    if not ok:
        raise InputError(f"{source}: key '{key}' must be {kind}, got {json.dumps(value)}")
    return value


def parse_config(model, source="model config"):
    """Builds a validated Config from the model JSON object (weights metadata or a config file).

    k_per_layer may be empty or missing in a config file, then `k` is used for every layer.
    """
    if not isinstance(model, dict):
        raise InputError(f"{source}: must be a JSON object")

    def positive(key):
        value = _get(model, key, "int", source)
        if value < 1:
            raise InputError(f"{source}: key '{key}' must be >= 1, got {value}")
        return value

    def choice(key, choices, default=None):
        value = _get(model, key, "str", source, default)
        if value not in choices:
            raise InputError(
                f"{source}: key '{key}' must be one of {', '.join(choices)}, got {value!r}"
            )
        return value

    layers = positive("layers")
    d_model = positive("d_model")
    heads = positive("heads")
    if d_model % heads:
        raise InputError(f"{source}: heads = {heads} does not divide d_model = {d_model}")
    eps = _get(model, "layer_norm_eps", "float", source)
    if not eps > 0:
        raise InputError(f"{source}: key 'layer_norm_eps' must be > 0, got {eps}")
    vocab_size = positive("vocab_size")
    if vocab_size <= FIRST_ORDINARY_TOKEN:
        raise InputError(f"{source}: key 'vocab_size' must exceed the 5 special tokens")
    init_std = _get(model, "init_std", "float", source, 0.02)
    if not init_std > 0:
        raise InputError(f"{source}: key 'init_std' must be > 0, got {init_std}")

    fields = dict(
        layers=layers,
        d_model=d_model,
        heads=heads,
        ffn_dim=positive("ffn_dim"),
        norm=choice("norm", NORMS),
        layer_norm_eps=float(eps),
        attention=choice("attention", ATTENTIONS),
        seq_len=positive("seq_len"),
        vocab_size=vocab_size,
        init_std=float(init_std),
        positions=choice("positions", POSITIONS, "learned"),
    )
    if fields["attention"] == "linformer":
        fields.update(
            sharing=choice("sharing", SHARINGS),
            projection=choice("projection", PROJECTIONS),
            freeze_projection=_get(model, "freeze_projection", "bool", source),
            projection_init=choice("projection_init", PROJECTION_INITS, "normal"),
            k_per_layer=_resolve_k(model, layers, fields["seq_len"], source),
            local_window=_get(model, "local_window", "int", source, 0),
        )
        if fields["local_window"] < 0:
            raise InputError(f"{source}: key 'local_window' must be >= 0, got {fields['local_window']}")
    cfg = Config(**fields)
    if cfg.linformer:
        _check_linformer(cfg, source)
    return cfg


def _resolve_k(model, layers, n, source):
    k_per_layer = model.get("k_per_layer", [])
    if not isinstance(k_per_layer, list) or not all(
        isinstance(k, int) and not isinstance(k, bool) for k in k_per_layer
    ):
        raise InputError(f"{source}: key 'k_per_layer' must be a list of integers")
    if not k_per_layer:
        if "k" not in model:
            raise InputError(f"{source}: missing key 'k_per_layer' (or 'k')")
        k_per_layer = [_get(model, "k", "int", source)] * layers
    if len(k_per_layer) != layers:
        raise InputError(
            f"{source}: key 'k_per_layer' has {len(k_per_layer)} entries, "
            f"expected layers = {layers}"
        )
    for layer, k in enumerate(k_per_layer):
        if k < 1:
            raise InputError(f"{source}: k_per_layer[{layer}] must be >= 1, got {k}")
    return tuple(k_per_layer)


def _check_linformer(cfg, source):
    if cfg.projection != "linear":
        for layer, k in enumerate(cfg.k_per_layer):
            if k > cfg.seq_len or cfg.seq_len % k:
                raise InputError(
                    f"{source}: k_per_layer[{layer}] = {k} must divide seq_len = {cfg.seq_len} "
                    f"for projection '{cfg.projection}'"
                )
    if cfg.sharing == "layerwise" and cfg.learned_projection and len(set(cfg.k_per_layer)) > 1:
        raise InputError(
            f"{source}: sharing 'layerwise' needs the same k in every layer, "
            f"got k_per_layer = {list(cfg.k_per_layer)}"
        )


def config_to_json(cfg, model):
    """The model JSON written into weights metadata: the given keys, k_per_layer resolved."""
    model = dict(model)
    if cfg.linformer:
        model["k_per_layer"] = list(cfg.k_per_layer)
    return json.dumps(model, sort_keys=True)


# --------------------------------------------------------------------------------------------
# Parameters: names, shapes, trainability, weight decay, initialisation
# --------------------------------------------------------------------------------------------


def projection_names(cfg, layer):
    """Names of the (E, F) tensors of a layer (the same name twice when shared), or None."""
    if not cfg.learned_projection:
        return None
    if cfg.sharing == "layerwise":
        return "shared_proj", "shared_proj"
    prefix = f"layers.{layer}.attn."
    if cfg.sharing == "kv":
        return prefix + "proj_e", prefix + "proj_e"
    return prefix + "proj_e", prefix + "proj_f"


def _projection_shape(cfg, layer):
    per_matrix = (
        (cfg.k_per_layer[layer], cfg.seq_len)
        if cfg.projection == "linear"
        else (cfg.window(layer),)
    )
    return ((cfg.heads,) if cfg.sharing == "none" else ()) + per_matrix


def parameter_shapes(cfg):
    """Every tensor of a weights file, name -> shape, as in the README's table."""
    C, F_, V, n = cfg.d_model, cfg.ffn_dim, cfg.vocab_size, cfg.seq_len
    shapes = {
        "embed.tokens": (V, C),
        "embed.positions": (n, C),
        "embed.ln.weight": (C,),
        "embed.ln.bias": (C,),
    }
    for layer in range(cfg.layers):
        p = f"layers.{layer}."
        shapes[p + "attn.in_proj.weight"] = (3 * C, C)
        shapes[p + "attn.in_proj.bias"] = (3 * C,)
        shapes[p + "attn.out_proj.weight"] = (C, C)
        shapes[p + "attn.out_proj.bias"] = (C,)
        names = projection_names(cfg, layer)
        if names:
            for name in names:
                shapes[name] = _projection_shape(cfg, layer)
        shapes[p + "ln_attn.weight"] = (C,)
        shapes[p + "ln_attn.bias"] = (C,)
        shapes[p + "ffn.fc1.weight"] = (F_, C)
        shapes[p + "ffn.fc1.bias"] = (F_,)
        shapes[p + "ffn.fc2.weight"] = (C, F_)
        shapes[p + "ffn.fc2.bias"] = (C,)
        shapes[p + "ln_ffn.weight"] = (C,)
        shapes[p + "ln_ffn.bias"] = (C,)
    if cfg.norm == "pre":
        shapes["final_ln.weight"] = (C,)
        shapes["final_ln.bias"] = (C,)
    shapes["mlm_head.dense.weight"] = (C, C)
    shapes["mlm_head.dense.bias"] = (C,)
    shapes["mlm_head.ln.weight"] = (C,)
    shapes["mlm_head.ln.bias"] = (C,)
    shapes["mlm_head.bias"] = (V,)
    return shapes


def is_projection(name):
    return name == "shared_proj" or name.endswith((".attn.proj_e", ".attn.proj_f"))


def is_layer_norm(name):
    parts = name.split(".")
    return len(parts) >= 2 and parts[-2] in ("ln", "ln_attn", "ln_ffn", "final_ln")


def is_bias(name):
    return name.endswith(".bias")


def is_trainable(cfg, name):
    if name == "embed.positions":
        return cfg.positions == "learned"
    return not (cfg.freeze_projection and is_projection(name))


def sinusoidal_positions(cfg):
    """(n, C) fixed positions: column 2i sin, 2i+1 cos of t / 10000^(2i/C) (Vaswani et al. 2017),
    times sqrt(2)·init_std so that the table's RMS is init_std, as a learned table starts."""
    n, C = cfg.seq_len, cfg.d_model
    t = torch.arange(n, dtype=torch.float64)[:, None]
    pair = torch.arange(C, dtype=torch.float64)[None, :] // 2 * 2  # 2i for columns 2i and 2i+1
    angle = t / torch.pow(torch.tensor(10000.0, dtype=torch.float64), pair / C)
    odd = (torch.arange(C) % 2 == 1)[None, :]
    return math.sqrt(2.0) * cfg.init_std * torch.where(odd, torch.cos(angle), torch.sin(angle))


def is_decayed(name, decay_bias_and_norm=False):
    """AdamW weight decay applies to everything but biases and LayerNorm parameters by default."""
    return decay_bias_and_norm or not (is_bias(name) or is_layer_norm(name))


def _projection_layer(name):
    return 0 if name == "shared_proj" else int(name.split(".")[1])


def init_weights(cfg, generator):
    """Random float32 weights initialised as the README's "Init" paragraph says."""
    weights = {}
    for name, shape in parameter_shapes(cfg).items():
        if is_layer_norm(name):
            w = torch.ones(shape) if name.endswith(".weight") else torch.zeros(shape)
        elif is_bias(name):
            w = torch.zeros(shape)
        elif is_projection(name):
            layer = _projection_layer(name)
            k, n = cfg.k_per_layer[layer], cfg.seq_len
            if cfg.projection == "conv":
                w = torch.full(shape, 1.0 / cfg.window(layer))  # mean pooling
            elif cfg.projection_init == "normal":
                w = torch.randn(shape, generator=generator) * cfg.init_std
            elif cfg.projection_init == "paper":
                w = torch.randn(shape, generator=generator) / math.sqrt(k)  # variance 1/k
            elif cfg.projection_init == "xavier":
                bound = math.sqrt(6.0 / (n + k))
                w = (torch.rand(shape, generator=generator) * 2 - 1) * bound
            else:  # local: row j is the mean of positions [j n / k, (j + 1) n / k)
                w = torch.zeros(shape)
                for j in range(k):
                    begin, end = j * n // k, (j + 1) * n // k
                    w[..., j, begin:end] = 1.0 / (end - begin)
        else:  # linear weights and embeddings
            w = torch.randn(shape, generator=generator) * cfg.init_std
        weights[name] = w.float()
    weights["embed.tokens"][PAD] = 0.0
    if cfg.positions == "sinusoidal":
        weights["embed.positions"] = sinusoidal_positions(cfg).float()
    return weights


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def read_weights(path):
    """Loads a weights file: (Config, {name: tensor}) after checking metadata, names and shapes."""
    tensors, metadata = safetensors_io.load(path)
    source = f"{path}: __metadata__"
    if metadata.get("format") != WEIGHTS_FORMAT:
        raise InputError(
            f"{source}: 'format' must be {WEIGHTS_FORMAT!r}, got {metadata.get('format')!r}"
        )
    if metadata.get("format_version") != WEIGHTS_FORMAT_VERSION:
        raise InputError(
            f"{source}: 'format_version' must be {WEIGHTS_FORMAT_VERSION!r}, "
            f"got {metadata.get('format_version')!r}"
        )
    if "model" not in metadata:
        raise InputError(f"{source}: missing 'model'")
    try:
        model = json.loads(metadata["model"])
    except json.JSONDecodeError as e:
        raise InputError(f"{source}: 'model' is not valid JSON: {e}") from None
    cfg = parse_config(model, f"{source}['model']")
    check_weights(cfg, tensors, path)
    return cfg, tensors


def check_weights(cfg, tensors, source="weights"):
    expected = parameter_shapes(cfg)
    for name, shape in expected.items():
        if name not in tensors:
            raise InputError(f"{source}: missing tensor '{name}' (expected shape {list(shape)})")
        tensor = tensors[name]
        if tensor.dtype not in (torch.float32, torch.float64):
            raise InputError(f"{source}: tensor '{name}' must be F32, got {tensor.dtype}")
        if tuple(tensor.shape) != shape:
            raise InputError(
                f"{source}: tensor '{name}' has shape {list(tensor.shape)}, expected {list(shape)}"
            )
    for name in tensors:
        if name not in expected:
            raise InputError(f"{source}: unexpected tensor '{name}' for this model configuration")
    if cfg.positions == "sinusoidal":
        table = sinusoidal_positions(cfg)
        worst = (tensors["embed.positions"].double() - table).abs().max().item()
        if worst > 1e-6 * table.abs().max().item():
            raise InputError(
                f"{source}: tensor 'embed.positions' is not the sinusoidal table of this model "
                f"(max difference {worst:.3g})"
            )


@dataclass
class Batch:
    ids: torch.Tensor  # (B, T) int64
    lengths: torch.Tensor  # (B) int64
    masked_positions: torch.Tensor  # (M) int64, flat b*T + t
    targets: torch.Tensor  # (M) int64

    @property
    def real(self):
        """real[b, t] = t < lengths[b]."""
        T = self.ids.shape[1]
        return torch.arange(T)[None, :] < self.lengths[:, None]

    def tensors(self):
        return {
            "ids": self.ids.int(),
            "lengths": self.lengths.int(),
            "masked_positions": self.masked_positions.int(),
            "targets": self.targets.int(),
        }


def check_batch(cfg, tensors, source="batch"):
    """Validates the batch tensors against the configuration; returns a Batch."""
    dims = {"ids": 2, "lengths": 1, "masked_positions": 1, "targets": 1}
    for name, ndim in dims.items():
        if name not in tensors:
            raise InputError(f"{source}: missing tensor '{name}'")
        t = tensors[name]
        if t.dtype not in (torch.int32, torch.int64):
            raise InputError(f"{source}: tensor '{name}' must be I32, got {t.dtype}")
        if t.dim() != ndim:
            raise InputError(
                f"{source}: tensor '{name}' must have {ndim} dimension(s), got {list(t.shape)}"
            )
    for name in tensors:
        if name not in dims:
            raise InputError(f"{source}: unexpected tensor '{name}'")
    batch = Batch(*(tensors[name].long() for name in dims))
    B, T = batch.ids.shape
    M = batch.masked_positions.shape[0]
    V = cfg.vocab_size

    def require(ok, message):
        if not ok:
            raise InputError(f"{source}: {message}")

    def within(t, low, high):  # all of t in [low, high)
        return bool(((t >= low) & (t < high)).all())

    require(B >= 1 and T >= 1, f"tensor 'ids' is empty: shape {[B, T]}")
    require(T <= cfg.seq_len, f"tensor 'ids' has T = {T} > seq_len n = {cfg.seq_len}")
    require(within(batch.ids, 0, V), f"tensor 'ids' has ids outside [0, {V})")
    require(
        batch.lengths.shape[0] == B,
        f"tensor 'lengths' has {batch.lengths.shape[0]} entries, expected B = {B}",
    )
    require(within(batch.lengths, 1, T + 1), f"tensor 'lengths' has values outside [1, T = {T}]")
    require(M >= 1, "tensor 'masked_positions' is empty (the loss divides by M)")
    require(
        batch.targets.shape[0] == M,
        f"tensor 'targets' has {batch.targets.shape[0]} entries, expected M = {M}",
    )
    require(within(batch.targets, 0, V), f"tensor 'targets' has ids outside [0, {V})")
    require(
        within(batch.masked_positions, 0, B * T),
        f"tensor 'masked_positions' has positions outside [0, B*T = {B * T})",
    )
    require(
        bool(batch.real.reshape(-1)[batch.masked_positions].all()),
        "tensor 'masked_positions' has padded positions",
    )
    return batch


def random_batch(cfg, batch_size, seq_len, seed, min_length=2, mask_probability=0.15):
    """A random MLM batch: <s>, random ordinary ids, then pads; ~15% of positions 1… masked."""
    if not 2 <= min_length <= seq_len <= cfg.seq_len:
        raise InputError(
            f"need 2 <= min-length ({min_length}) <= seq-len ({seq_len}) <= n ({cfg.seq_len})"
        )
    if batch_size < 1:
        raise InputError(f"batch-size must be >= 1, got {batch_size}")
    g = torch.Generator().manual_seed(seed)
    B, T = batch_size, seq_len
    lengths = torch.randint(min_length, T + 1, (B,), generator=g)
    ids = torch.full((B, T), PAD, dtype=torch.long)
    for b in range(B):
        ids[b, 0] = BOS
        ids[b, 1 : lengths[b]] = torch.randint(
            FIRST_ORDINARY_TOKEN, cfg.vocab_size, (int(lengths[b]) - 1,), generator=g
        )
    candidates = torch.tensor(
        [b * T + t for b in range(B) for t in range(1, int(lengths[b]))], dtype=torch.long
    )
    chosen = torch.rand(len(candidates), generator=g) < mask_probability
    if not chosen.any():
        chosen[torch.randint(len(candidates), (1,), generator=g)] = True
    masked_positions = candidates[chosen]
    flat = ids.reshape(-1)
    targets = flat[masked_positions].clone()
    flat[masked_positions] = MASK
    return Batch(ids, lengths, masked_positions, targets)


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


def linear(x, params, prefix):
    """y = x Wᵀ + b with W stored (out, in)."""
    return x @ params[prefix + ".weight"].t() + params[prefix + ".bias"]


def layer_norm(x, params, prefix, cfg):
    return F.layer_norm(
        x, x.shape[-1:], params[prefix + ".weight"], params[prefix + ".bias"], cfg.layer_norm_eps
    )


def compress(y, real, cfg, layer, weight):
    """Compresses y (B, H, T, D), whose padded rows are already zero, to (B, H, K_l, D)."""
    B, H, T, D = y.shape
    n, K = cfg.seq_len, cfg.k_per_layer[layer]
    if cfg.projection == "linear":
        e = weight[..., :T]  # a shorter sequence uses the first T columns of E
        equation = "hkt,bhtd->bhkd" if e.dim() == 3 else "kt,bhtd->bhkd"
        return torch.einsum(equation, e, y)

    s = n // K
    # Positions T … n−1 do not exist: pad with zero rows, then window j covers js … js+s−1.
    windows = F.pad(y, (0, 0, 0, n - T)).reshape(B, H, K, s, D)
    if cfg.projection == "mean":
        return windows.sum(dim=3) / s
    if cfg.projection == "conv":
        equation = "bhksd,hs->bhkd" if weight.dim() == 2 else "bhksd,s->bhkd"
        return torch.einsum(equation, windows, weight)
    # max: over the window's real rows only; 0 for a window without any
    real_n = torch.zeros(B, n, dtype=torch.bool)
    real_n[:, :T] = real
    real_n = real_n.reshape(B, 1, K, s, 1)
    best = windows.masked_fill(~real_n, -math.inf).max(dim=3).values
    return torch.where(real_n.any(dim=3), best, torch.zeros_like(best))


def attention(x, real, params, cfg, layer, observe=None):
    """observe(layer, probs, value_mix), when given, sees each layer's attention probabilities
    (B, H, T, keys) and, for a Linformer, the (1 or B, H, K_l, T) matrix its values are compressed
    by (None for full attention or max pooling; with a local band the keys are K_l + T and the
    matrix has the identity below F); scripts/attention_probe.py reads them."""
    B, T, C = x.shape
    H, D = cfg.heads, cfg.head_dim
    prefix = f"layers.{layer}.attn."
    w, b = params[prefix + "in_proj.weight"], params[prefix + "in_proj.bias"]

    def split_heads(t):  # (B, T, C) -> (B, H, T, D)
        return t.reshape(B, t.shape[1], H, D).transpose(1, 2)

    q = split_heads(x @ w[:C].t() + b[:C])
    k = split_heads(x @ w[C : 2 * C].t())  # biases added below
    v = split_heads(x @ w[2 * C :].t())
    b_k = b[C : 2 * C].reshape(H, 1, D)
    b_v = b[2 * C :].reshape(H, 1, D)

    band_values = None
    if cfg.linformer:
        # project, zero the padded rows, compress along the sequence, then add the bias
        keep = real[:, None, :, None].to(x.dtype)
        e_name, f_name = projection_names(cfg, layer) or (None, None)
        k_full, band_values = k + b_k, v + b_v
        k = compress(k * keep, real, cfg, layer, params.get(e_name)) + b_k
        v = compress(v * keep, real, cfg, layer, params.get(f_name)) + b_v
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)  # (B, H, T, K_l)
        if cfg.local_window:  # every real key within the window, beside the compressed ones
            t = torch.arange(T)
            near = (t[:, None] - t[None, :]).abs() <= cfg.local_window  # (T, T)
            band_scores = q @ k_full.transpose(-1, -2) / math.sqrt(D)
            band_scores = band_scores.masked_fill(~(near & real[:, None, None, :]), -math.inf)
            scores = torch.cat([scores, band_scores], dim=-1)  # (B, H, T, K_l + T)
    else:
        k, v = k + b_k, v + b_v
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)  # (B, H, T, T)
        scores = scores.masked_fill(~real[:, None, None, :], -math.inf)
    probs = torch.softmax(scores, dim=-1)
    band = cfg.linformer and cfg.local_window > 0
    if observe is not None:
        value_mix = None
        if cfg.linformer and cfg.projection != "max":  # compressing the identity gives the matrix
            eye = torch.eye(T, dtype=x.dtype).expand(1, H, T, T)
            value_mix = compress(eye, real[:1], cfg, layer, params.get(f_name))
            if band:  # the band's values are the rows themselves
                value_mix = torch.cat([value_mix, eye], dim=-2)
        elif band:
            raise InputError("observing a local band beside max pooling is not implemented")
        observe(layer, probs, value_mix)
    if band:
        K = v.shape[-2]  # the compressed keys come first
        heads = probs[..., :K] @ v + probs[..., K:] @ band_values  # (B, H, T, D)
    else:
        heads = probs @ v  # (B, H, T, D)
    return linear(heads.transpose(1, 2).reshape(B, T, C), params, prefix + "out_proj")


def ffn(x, params, layer):
    prefix = f"layers.{layer}.ffn."
    return linear(F.gelu(linear(x, params, prefix + "fc1")), params, prefix + "fc2")


def encode(params, cfg, batch, observe=None):
    """Encoder output (B, T, C): after the last block, and after final_ln for pre-LN. observe: see
    attention()."""
    T = batch.ids.shape[1]
    real = batch.real
    x = params["embed.tokens"][batch.ids] + params["embed.positions"][:T]
    x = layer_norm(x, params, "embed.ln", cfg)
    for layer in range(cfg.layers):
        p = f"layers.{layer}."
        if cfg.norm == "post":
            x = layer_norm(x + attention(x, real, params, cfg, layer, observe), params, p + "ln_attn", cfg)
            x = layer_norm(x + ffn(x, params, layer), params, p + "ln_ffn", cfg)
        else:
            x = x + attention(layer_norm(x, params, p + "ln_attn", cfg), real, params, cfg, layer, observe)
            x = x + ffn(layer_norm(x, params, p + "ln_ffn", cfg), params, layer)
    if cfg.norm == "pre":
        x = layer_norm(x, params, "final_ln", cfg)
    return x


def mlm_head(x, params, cfg, batch):
    """Logits (M, V) at the masked positions, the output projection tied to embed.tokens."""
    z = x.reshape(-1, cfg.d_model)[batch.masked_positions]
    h = layer_norm(F.gelu(linear(z, params, "mlm_head.dense")), params, "mlm_head.ln", cfg)
    return h @ params["embed.tokens"].t() + params["mlm_head.bias"]


def forward(params, cfg, batch):
    """(loss, logits, encoder_out); loss = Σ cross-entropy over masked positions / M, in nats."""
    encoder_out = encode(params, cfg, batch)
    logits = mlm_head(encoder_out, params, cfg, batch)
    loss = F.cross_entropy(logits, batch.targets, reduction="sum") / batch.targets.shape[0]
    return loss, logits, encoder_out


def forward_backward(params, cfg, batch):
    """(loss, logits, encoder_out, {name: grad}) for every trainable parameter."""
    params = {name: t.detach().clone() for name, t in params.items()}
    trainable = [name for name in params if is_trainable(cfg, name)]
    for name in trainable:
        params[name].requires_grad_(True)
    loss, logits, encoder_out = forward(params, cfg, batch)
    grads = torch.autograd.grad(loss, [params[n] for n in trainable], allow_unused=True)
    grads = {
        name: torch.zeros_like(params[name]) if g is None else g
        for name, g in zip(trainable, grads)
    }
    return loss.detach(), logits.detach(), encoder_out.detach(), grads


def adamw(
    params, cfg, batch, steps, lr, beta1, beta2, eps, weight_decay, decay_bias_and_norm=False
):
    """N AdamW steps on one batch, constant lr; returns (losses before each step, final params).

    Per trainable parameter, at step t = 1 … N with gradient g:
      p ← p − lr·wd·p                       (decoupled weight decay, if the parameter decays)
      m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
      p ← p − lr · (m / (1−β1ᵗ)) / (√v / √(1−β2ᵗ) + ε)
    """
    params = {name: t.detach().clone() for name, t in params.items()}
    trainable = [name for name in params if is_trainable(cfg, name)]
    m = {name: torch.zeros_like(params[name]) for name in trainable}
    v = {name: torch.zeros_like(params[name]) for name in trainable}
    losses = []
    for t in range(1, steps + 1):
        loss, _, _, grads = forward_backward(params, cfg, batch)
        losses.append(loss)
        for name in trainable:
            p, g = params[name], grads[name]
            if is_decayed(name, decay_bias_and_norm):
                p = p - lr * weight_decay * p
            m[name] = beta1 * m[name] + (1 - beta1) * g
            v[name] = beta2 * v[name] + (1 - beta2) * g * g
            # bias correction, in torch.optim.AdamW's order of operations
            step_size = lr / (1 - beta1**t)
            denominator = v[name].sqrt() / math.sqrt(1 - beta2**t) + eps
            params[name] = p - step_size * m[name] / denominator
    return torch.stack(losses), params


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _read_config_file(path):
    try:
        with open(path) as f:
            model = json.load(f)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON: {e}") from None
    return parse_config(model, path), model


def _output_metadata(mode, dtype):
    return {
        "format": "linformer-reference-output",
        "mode": mode,
        "dtype": str(dtype).replace("torch.", ""),
        "torch_version": torch.__version__,
        "source": "scripts/torch_reference.py",
    }


def _parser():
    p = argparse.ArgumentParser(
        description="Independent PyTorch reference of the Linformer MLM encoder.",
        epilog="Modes: --weights/--batch/--out (forward, gradients or --adam-steps), "
        "--write-random-weights, --write-random-batch.",
    )
    p.add_argument("--weights", help="weights safetensors file")
    p.add_argument("--batch", help="batch safetensors file")
    p.add_argument("--out", help="output safetensors file")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument("--adam-steps", type=int, help="run this many AdamW steps instead")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.98)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--decay-bias-and-norm", action="store_true")
    p.add_argument("--write-random-weights", metavar="W", help="write random weights to W")
    p.add_argument("--write-random-batch", metavar="B", help="write a random batch to B")
    p.add_argument("--config", help="model configuration JSON (random weights or batch)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--min-length", type=int, default=2)
    return p


def run(args, parser):
    modes = ("weights", "write_random_weights", "write_random_batch")
    modes = [m for m in modes if getattr(args, m)]
    if len(modes) != 1:
        parser.error("give exactly one of --weights, --write-random-weights, --write-random-batch")

    if args.write_random_weights:
        if not args.config:
            parser.error("--write-random-weights needs --config")
        cfg, model = _read_config_file(args.config)
        weights = init_weights(cfg, torch.Generator().manual_seed(args.seed))
        metadata = {
            "format": WEIGHTS_FORMAT,
            "format_version": WEIGHTS_FORMAT_VERSION,
            "model": config_to_json(cfg, model),
        }
        safetensors_io.save(args.write_random_weights, weights, metadata)
        return

    if args.write_random_batch:
        if not (args.config and args.batch_size and args.seq_len):
            parser.error("--write-random-batch needs --config, --batch-size and --seq-len")
        cfg, _ = _read_config_file(args.config)
        batch = random_batch(cfg, args.batch_size, args.seq_len, args.seed, args.min_length)
        safetensors_io.save(args.write_random_batch, batch.tensors(), {"format": "linformer-batch"})
        return

    if not (args.batch and args.out):
        parser.error("--weights needs --batch and --out")
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    cfg, weights = read_weights(args.weights)
    params = {name: t.to(dtype) for name, t in weights.items()}
    batch_tensors, _ = safetensors_io.load(args.batch)
    batch = check_batch(cfg, batch_tensors, args.batch)

    if args.adam_steps is not None:
        if args.adam_steps < 1:
            parser.error("--adam-steps must be >= 1")
        losses, final = adamw(
            params, cfg, batch, args.adam_steps, args.lr, args.beta1, args.beta2, args.eps,
            args.weight_decay, args.decay_bias_and_norm,
        )
        out = {"losses": losses.to(dtype)}
        out.update({"param." + name: t.detach() for name, t in final.items()})
        safetensors_io.save(args.out, out, _output_metadata("adamw", dtype))
        return

    loss, logits, encoder_out, grads = forward_backward(params, cfg, batch)
    out = {"loss": loss.reshape(1), "logits": logits, "encoder_out": encoder_out}
    out.update({"grad." + name: g for name, g in grads.items()})
    safetensors_io.save(args.out, out, _output_metadata("forward", dtype))


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        run(args, parser)
    except (InputError, safetensors_io.SafetensorsError, OSError) as e:
        print(f"torch_reference.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
