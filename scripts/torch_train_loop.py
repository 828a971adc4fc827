#!/usr/bin/env python3
"""Independent PyTorch training loop of `linformer train` (README, "Training runs" and [optim]).

Written from the specification, as the check the C++ loop is compared against; the model's
forward comes from torch_reference.py, gradients from autograd, the optimizer is
torch.optim.AdamW. Runs in float64 by default; dropout is always off.

  torch_train_loop.py --weights W.safetensors --batches BATCHES.safetensors --out OUT.safetensors
                      --max-updates N --accumulation K [--lr LR --beta1 B1 --beta2 B2 --eps EPS
                      --weight-decay WD --decay-bias-and-norm --clip-norm C --schedule S
                      --warmup-updates W --end-lr E --power P] [--dtype float64|float32]

W: initial weights (the project's weights format; the model configuration is in __metadata__).
BATCHES: the micro-batches in training order, batch.<i>.ids (B, T) I32, batch.<i>.lengths (B),
batch.<i>.masked_positions (M) flat b·T + t, batch.<i>.targets (M), i = 0 … U·K − 1; update u
(from 1) uses micro-batches (u−1)·K … u·K − 1.

One update:
  1. gradients to zero;
  2. for each of its K micro-batches: loss = Σ cross-entropy over its masked positions
     / (masked tokens of the whole update), backward (gradients accumulate);
  3. norm = global L2 norm of the trainable gradients (before clipping);
  4. clipping: gradients × clip/norm when clip > 0 and norm > clip;
  5. lr = schedule(u) (below);
  6. AdamW: p ← p − lr·wd·p on the decay group (weights, embeddings and projections; biases and
     LayerNorm too with --decay-bias-and-norm), then the Adam step with bias corrections,
     denominator √v / √(1−β2ᵗ) + ε. Frozen tensors are not touched.

Schedule (fairseq's polynomial_decay, counting updates from 1): lr·u/W for u ≤ W, then with
p = (u − W) / (N − W) clamped to [0, 1]:
  polynomial  E + (lr − E)·(1 − p)^P      linear  E + (lr − E)·(1 − p)
  cosine      E + (lr − E)·(1 + cos πp)/2  inverse_sqrt  lr·√(max(W, 1)/u)   constant  lr

OUT holds loss (U): mean cross-entropy per masked token of each update, in nats; grad_norm (U),
before clipping; lr (U); masked (U) I64, masked tokens per update; and param.<name> for every
parameter after the last update.

Every input error exits with status 1 and a message naming the file, tensor or option.
"""

import argparse
import json
import math
import os
import re
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import torch_reference as ref  # noqa: E402
from torch_reference import InputError  # noqa: E402

SCHEDULES = ("polynomial", "linear", "cosine", "inverse_sqrt", "constant")
BATCH_FIELDS = ("ids", "lengths", "masked_positions", "targets")


def learning_rate(o, update):
    """The learning rate of update `update` (1, 2, …) under settings `o` (the parsed options)."""
    u, warmup = float(update), float(o.warmup_updates)
    if u <= warmup:
        return o.lr * u / warmup
    if o.schedule == "constant":
        return o.lr
    if o.schedule == "inverse_sqrt":
        return o.lr * math.sqrt(max(warmup, 1.0) / u)
    span = o.max_updates - warmup
    p = min(1.0, (u - warmup) / span) if span > 0 else 1.0
    if o.schedule == "polynomial":
        return o.end_lr + (o.lr - o.end_lr) * (1.0 - p) ** o.power
    if o.schedule == "linear":
        return o.end_lr + (o.lr - o.end_lr) * (1.0 - p)
    return o.end_lr + (o.lr - o.end_lr) * 0.5 * (1.0 + math.cos(math.pi * p))  # cosine


def read_batches(cfg, path):
    """The micro-batches of `path` in order, each checked against the model configuration."""
    tensors, _ = safetensors_io.load(path)
    grouped = {}
    for name, tensor in tensors.items():
        match = re.fullmatch(r"batch\.(\d+)\.(\w+)", name)
        if not match or match.group(2) not in BATCH_FIELDS:
            raise InputError(
                f"{path}: unexpected tensor '{name}' (expected batch.<i>.{{{','.join(BATCH_FIELDS)}}})"
            )
        grouped.setdefault(int(match.group(1)), {})[match.group(2)] = tensor
    if not grouped:
        raise InputError(f"{path}: no micro-batches (tensors batch.<i>.ids, …)")
    batches = []
    for i in range(max(grouped) + 1):
        if i not in grouped:
            raise InputError(f"{path}: micro-batch {i} is missing (batches must be numbered 0, 1, …)")
        batches.append(ref.check_batch(cfg, grouped[i], f"{path}: micro-batch {i}"))
    return batches


def check_options(o, micro_batches):
    def require(ok, message):
        if not ok:
            raise InputError(message)

    require(o.lr >= 0, f"--lr must be >= 0, got {o.lr}")
    require(0 <= o.beta1 < 1, f"--beta1 must be in [0, 1), got {o.beta1}")
    require(0 <= o.beta2 < 1, f"--beta2 must be in [0, 1), got {o.beta2}")
    require(o.eps > 0, f"--eps must be > 0, got {o.eps}")
    require(o.weight_decay >= 0, f"--weight-decay must be >= 0, got {o.weight_decay}")
    require(o.clip_norm >= 0, f"--clip-norm must be >= 0 (0: no clipping), got {o.clip_norm}")
    require(o.warmup_updates >= 0, f"--warmup-updates must be >= 0, got {o.warmup_updates}")
    require(o.end_lr >= 0, f"--end-lr must be >= 0, got {o.end_lr}")
    require(o.power > 0, f"--power must be > 0, got {o.power}")
    require(o.max_updates >= 1, f"--max-updates must be >= 1, got {o.max_updates}")
    require(o.accumulation >= 1, f"--accumulation must be >= 1, got {o.accumulation}")
    require(
        micro_batches % o.accumulation == 0,
        f"{o.batches}: {micro_batches} micro-batches is not a whole number of updates of "
        f"--accumulation {o.accumulation}",
    )
    updates = micro_batches // o.accumulation
    require(
        updates <= o.max_updates,
        f"{o.batches}: {updates} updates of {o.accumulation} micro-batches exceed "
        f"--max-updates {o.max_updates}",
    )
    return updates


def train(params, cfg, batches, o):
    """Runs the updates; returns (losses, grad norms, lrs, masked counts, final params)."""
    dtype = next(iter(params.values())).dtype
    leaves = {name: t.detach().clone() for name, t in params.items()}
    trainable = [name for name in leaves if ref.is_trainable(cfg, name)]
    for name in trainable:
        leaves[name].requires_grad_(True)
    decayed = [leaves[n] for n in trainable if ref.is_decayed(n, o.decay_bias_and_norm)]
    not_decayed = [leaves[n] for n in trainable if not ref.is_decayed(n, o.decay_bias_and_norm)]
    groups = [{"params": decayed, "weight_decay": o.weight_decay}]
    if not_decayed:
        groups.append({"params": not_decayed, "weight_decay": 0.0})
    optimizer = torch.optim.AdamW(
        groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, foreach=False
    )

    losses, norms, lrs, masked_counts = [], [], [], []
    K = o.accumulation
    for u in range(1, len(batches) // K + 1):
        micro = batches[(u - 1) * K : u * K]
        masked = sum(int(b.targets.shape[0]) for b in micro)
        # Every trainable tensor gets a gradient (zero if unused), so AdamW decays and steps all.
        for name in trainable:
            leaves[name].grad = torch.zeros_like(leaves[name])
        loss_sum = 0.0
        for batch in micro:
            logits = ref.mlm_head(ref.encode(leaves, cfg, batch), leaves, cfg, batch)
            ce_sum = F.cross_entropy(logits, batch.targets, reduction="sum")
            (ce_sum / masked).backward()  # divided by the whole update's masked tokens
            loss_sum += ce_sum.item()

        with torch.no_grad():
            norm = math.sqrt(sum(float((leaves[n].grad ** 2).sum()) for n in trainable))
            if not math.isfinite(norm):
                raise InputError(f"update {u}: the gradient norm is {norm} (the loss diverged)")
            if o.clip_norm > 0 and norm > o.clip_norm:
                for name in trainable:
                    leaves[name].grad.mul_(o.clip_norm / norm)
        lr = learning_rate(o, u)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()

        losses.append(loss_sum / masked)
        norms.append(norm)
        lrs.append(lr)
        masked_counts.append(masked)

    def as_tensor(values):
        return torch.tensor(values, dtype=dtype)

    final = {name: t.detach() for name, t in leaves.items()}
    return (as_tensor(losses), as_tensor(norms), as_tensor(lrs),
            torch.tensor(masked_counts, dtype=torch.int64), final)


def _parser():
    p = argparse.ArgumentParser(
        description="Independent PyTorch training loop of linformer train (masking given, "
        "accumulation, clipping, schedule, AdamW)."
    )
    p.add_argument("--weights", required=True, help="initial weights safetensors file")
    p.add_argument("--batches", required=True, help="micro-batches safetensors file, in order")
    p.add_argument("--out", required=True, help="output safetensors file")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument("--lr", type=float, default=5e-4, help="peak learning rate")
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.98)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--decay-bias-and-norm", action="store_true")
    p.add_argument("--clip-norm", type=float, default=1.0, help="0: no clipping")
    p.add_argument("--schedule", choices=SCHEDULES, default="polynomial")
    p.add_argument("--warmup-updates", type=int, default=1000)
    p.add_argument("--end-lr", type=float, default=0.0)
    p.add_argument("--power", type=float, default=1.0)
    p.add_argument("--max-updates", type=int, required=True, help="where the decay reaches --end-lr")
    p.add_argument("--accumulation", type=int, default=1, help="micro-batches per update")
    return p


def run(o):
    dtype = torch.float64 if o.dtype == "float64" else torch.float32
    cfg, weights = ref.read_weights(o.weights)
    batches = read_batches(cfg, o.batches)
    check_options(o, len(batches))
    params = {name: t.to(dtype) for name, t in weights.items()}
    losses, norms, lrs, masked, final = train(params, cfg, batches, o)
    out = {"loss": losses, "grad_norm": norms, "lr": lrs, "masked": masked}
    out.update({"param." + name: t for name, t in final.items()})
    settings = {k: v for k, v in vars(o).items() if k not in ("weights", "batches", "out")}
    safetensors_io.save(o.out, out, {
        "format": "linformer-train-loop-output",
        "dtype": o.dtype,
        "torch_version": torch.__version__,
        "source": "scripts/torch_train_loop.py",
        "settings": json.dumps(settings, sort_keys=True),
    })


def main(argv=None):
    options = _parser().parse_args(argv)
    try:
        run(options)
    except (InputError, safetensors_io.SafetensorsError, OSError) as e:
        print(f"torch_train_loop.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
