#!/usr/bin/env python3
"""The same training step as `linformer bench train`, in PyTorch (Debian's python3-torch), for a
side-by-side comparison: forward + backward of the model of scripts/torch_reference.py (the
project's independent reference) on a synthetic batch of the same shape, float32 or bf16 autocast,
then torch.optim.AdamW's step with the settings the C++ side timed (its `optimizer` entry), as a
PyTorch user would train: `bench train` times forward + backward + AdamW, and so does this. Both
are reported: the whole step and forward + backward alone (--optimizer none drops the step).

As a careful PyTorch user would (and as fairseq does), Linformer layers whose compression is
linear and shared by the heads compress x before projecting keys and values, K̃ = (E x) W_Kᵀ + b_K,
instead of the reference's literal project-then-compress; the script checks the two agree before
timing. bench_compare.sh runs it with PyTorch's own OpenMP waiting (OMP_WAIT_POLICY unset) unless
TORCH_OMP_WAIT_POLICY says otherwise: on a Zen 4 VM passive waiting ran it 5–17% slower (2026-11-28).

Reads the model, batch size, sequence length and masked count from the JSON that
`linformer bench train --json FILE` wrote, so both sides time the same configuration.
Dropout is off here (the reference has none): pass --set model.dropout=0 --set
model.attention_dropout=0 to the C++ side for an exact match.

Usage: bench_torch.py --from CPP.json [--steps 10] [--warmup 2] [--threads 2] [--precision fp32|bf16]
                     [--optimizer adamw|none] [--json OUT]
"""
import contextlib
import math
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402

reference_attention = ref.attention


def compresses_input_first(cfg):
    per_head_parameters = cfg.sharing == "none" and cfg.projection in ("linear", "conv")
    return cfg.linformer and cfg.projection != "max" and not per_head_parameters


def attention_compress_first(x, real, params, cfg, layer, observe=None):
    """ref.attention with x compressed before the K and V projections (same result); an observer
    (ref.attention's) is served by the reference's own attention."""
    if not compresses_input_first(cfg) or observe is not None:
        return reference_attention(x, real, params, cfg, layer, observe)
    B, T, C = x.shape
    H, D = cfg.heads, cfg.head_dim
    prefix = f"layers.{layer}.attn."
    w, b = params[prefix + "in_proj.weight"], params[prefix + "in_proj.bias"]

    def split_heads(t):  # (B, S, C) -> (B, H, S, D)
        return t.reshape(B, t.shape[1], H, D).transpose(1, 2)

    q = split_heads(x @ w[:C].t() + b[:C])
    xm = (x * real[:, :, None].to(x.dtype))[:, None]  # (B, 1, T, C): one "head" of C channels
    e_name, f_name = ref.projection_names(cfg, layer) or (None, None)
    xe = ref.compress(xm, real, cfg, layer, params.get(e_name))[:, 0]  # (B, K, C)
    xf = xe if e_name == f_name else ref.compress(xm, real, cfg, layer, params.get(f_name))[:, 0]
    k = split_heads(xe @ w[C : 2 * C].t() + b[C : 2 * C])
    v = split_heads(xf @ w[2 * C :].t() + b[2 * C :])
    scores = q @ k.transpose(-1, -2) / math.sqrt(D)
    heads = torch.softmax(scores, dim=-1) @ v
    return ref.linear(heads.transpose(1, 2).reshape(B, T, C), params, prefix + "out_proj")


def check_compress_first(cfg, params):
    """The fast attention equals the reference's on a padded batch (else the timing means nothing)."""
    batch = ref.random_batch(cfg, 3, min(cfg.seq_len, 64), seed=2)
    ref.attention = reference_attention
    expected, _, _ = ref.forward(params, cfg, batch)
    ref.attention = attention_compress_first
    got, _, _ = ref.forward(params, cfg, batch)
    if not torch.allclose(expected, got, rtol=1e-4, atol=1e-5):
        sys.exit(f"bench_torch.py: compress-first attention disagrees with the reference ({got} vs {expected})")


def make_optimizer(cpp, params, cfg, source="the C++ JSON"):
    """torch.optim.AdamW with the settings of the C++ side's timed steps (its JSON's `optimizer`);
    biases and LayerNorm parameters undecayed unless decay_bias_and_norm, as in the C++ AdamW."""
    settings = cpp.get("optimizer")
    if not settings or settings.get("name") != "adamw":
        sys.exit(f"bench_torch.py: {source} has no AdamW settings ('optimizer'; written by linformer bench "
                 f"train since 2026-11-28): rerun it with this build, or pass --optimizer none")
    trainable = {name: p for name, p in params.items() if ref.is_trainable(cfg, name)}
    undecayed = set() if settings["decay_bias_and_norm"] else {
        name for name in trainable if ref.is_bias(name) or ref.is_layer_norm(name)}
    groups = [{"params": [p for name, p in trainable.items() if name not in undecayed],
               "weight_decay": settings["weight_decay"]},
              {"params": [p for name, p in trainable.items() if name in undecayed], "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=settings["lr"],
                             betas=tuple(settings["betas"]), eps=settings["eps"])


def training_step(params, cfg, batch, trainable, autocast, optimizer):
    """One step as `bench train` times it; returns (forward + backward, optimizer) seconds.
    The gradients stay in .grad until the next step."""
    start = time.perf_counter()
    for p in trainable:
        p.grad = None
    with autocast:
        loss, _, _ = ref.forward(params, cfg, batch)
    loss.backward()
    before_optimizer = time.perf_counter()
    if optimizer:
        optimizer.step()
    return before_optimizer - start, time.perf_counter() - before_optimizer


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", required=True, help="JSON written by linformer bench train --json")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: torch.autocast(cpu, bfloat16) around forward and backward")
    parser.add_argument("--optimizer", choices=["adamw", "none"], default="adamw",
                        help="adamw: torch.optim.AdamW's step in each timed step, as bench train's")
    parser.add_argument("--json", help="write the result here too")
    args = parser.parse_args(argv)

    with open(args.source) as f:
        cpp = json.load(f)
    cfg = ref.parse_config(cpp["model"], source=args.source)
    torch.set_num_threads(args.threads)
    B, n = cpp["batch"], cpp["seq_len"]
    params = ref.init_weights(cfg, torch.Generator().manual_seed(1))
    batch = ref.random_batch(cfg, B, n, seed=1, min_length=n, mask_probability=cpp["masked"] / (B * (n - 1)))
    trainable = [p for name, p in params.items() if ref.is_trainable(cfg, name)]
    check_compress_first(cfg, params)
    ref.attention = attention_compress_first
    for p in trainable:
        p.requires_grad_(True)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.precision == "bf16"
                else contextlib.nullcontext())
    optimizer = make_optimizer(cpp, params, cfg, args.source) if args.optimizer == "adamw" else None

    seconds, forward_backward_seconds, optimizer_seconds = [], [], []
    for step in range(args.warmup + args.steps):
        forward_backward, optimizer_step = training_step(params, cfg, batch, trainable, autocast, optimizer)
        if step >= args.warmup:
            seconds.append(forward_backward + optimizer_step)
            forward_backward_seconds.append(forward_backward)
            optimizer_seconds.append(optimizer_step)
    median = statistics.median(seconds)
    forward_backward = statistics.median(forward_backward_seconds)
    # This model computes every row of the last block (linformer only its masked ones, fewer FLOPs).
    flops = 3 * cpp.get("every_row_forward_gflop_per_step", cpp["forward_gflop_per_step"])
    result = {
        "implementation": f"PyTorch {torch.__version__} {args.precision}, {args.threads} threads",
        "batch": B,
        "seq_len": n,
        "masked": int(batch.masked_positions.numel()),
        "optimizer": args.optimizer,
        "step_seconds": {"median": median, "min": min(seconds), "max": max(seconds)},
        "forward_backward_seconds": {"median": forward_backward},
        "optimizer_ms": 1e3 * statistics.mean(optimizer_seconds),
        "tokens_per_second": B * n / median,
        "tokens_per_second_forward_backward": B * n / forward_backward,
        "train_gflops_per_second": flops / median,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    print(
        f"PyTorch {torch.__version__} {args.precision}, {args.threads} threads: median {median * 1e3:.1f} ms "
        f"(min {min(seconds) * 1e3:.1f}, max {max(seconds) * 1e3:.1f}) over {args.steps} steps, "
        f"{result['tokens_per_second']:.0f} tokens/s, {result['train_gflops_per_second']:.1f} GFLOP/s; "
        f"forward + backward {forward_backward * 1e3:.1f} ms, optimizer ({args.optimizer}) "
        f"{result['optimizer_ms']:.1f} ms"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
