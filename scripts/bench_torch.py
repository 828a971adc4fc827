#!/usr/bin/env python3
"""The same training step as `linformer bench train`, in PyTorch (Debian's python3-torch), for a
side-by-side comparison: forward + backward of the model of scripts/torch_reference.py (the
project's independent reference) on a synthetic batch of the same shape, float32.

Reads the model, batch size, sequence length and masked count from the JSON that
`linformer bench train --json FILE` wrote, so both sides time the same configuration.
Dropout is off here (the reference has none): pass --set model.dropout=0 --set
model.attention_dropout=0 to the C++ side for an exact match.

Usage: bench_torch.py --from CPP.json [--steps 10] [--warmup 2] [--threads 2] [--json OUT]
"""
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", required=True, help="JSON written by linformer bench train --json")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
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
    for p in trainable:
        p.requires_grad_(True)

    seconds = []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        loss, _, _ = ref.forward(params, cfg, batch)
        loss.backward()
        elapsed = time.perf_counter() - start
        for p in trainable:
            p.grad = None
        if step >= args.warmup:
            seconds.append(elapsed)
    median = statistics.median(seconds)
    flops = 3 * cpp["forward_gflop_per_step"]
    result = {
        "implementation": f"PyTorch {torch.__version__} float32, {args.threads} threads",
        "batch": B,
        "seq_len": n,
        "masked": int(batch.masked_positions.numel()),
        "step_seconds": {"median": median, "min": min(seconds), "max": max(seconds)},
        "tokens_per_second": B * n / median,
        "train_gflops_per_second": flops / median,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    print(
        f"PyTorch {torch.__version__} fp32, {args.threads} threads: median {median * 1e3:.1f} ms "
        f"(min {min(seconds) * 1e3:.1f}, max {max(seconds) * 1e3:.1f}) over {args.steps} steps, "
        f"{result['tokens_per_second']:.0f} tokens/s, {result['train_gflops_per_second']:.1f} GFLOP/s"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
