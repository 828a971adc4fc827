#!/usr/bin/env python3
"""The MLM head at real vocabularies: renders vocab/*.json (bench train, configs S and M at
vocabularies 8000, 32000, 50265, fp32 and bf16) as vocab.md.

Rounds 2-4 count. Round 1 was disturbed (it started a minute after the 10 GB corpus had been
written, its pages still being flushed, with light work of mine beside it): S in bf16 at 8000 ran
14,480 tokens/s against 25,406 in round 2, and one run's matmul probe measured 253 GFLOP/s against
351-405 in every other fp32 run. Its files are kept, not used. Per cell, the median over the rounds of: tokens/s, the head's share of the step (stage "mlm head
+ loss", forward and backward, over the step), matmul GFLOP/s against the measured peak of that
run's probe, and the step against its ceiling (every matmul at the probe's peak, the rest as
timed): the fraction the issue asks to keep at 32k and 50k as at 8k."""
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    cells = {}
    for path in sorted(glob.glob(os.path.join(HERE, "vocab", "*.json"))):
        config, precision, vocab, round_ = os.path.basename(path)[:-5].split("_")
        if round_ == "r1":
            continue
        d = json.load(open(path))
        step_ms = d["step_seconds"]["median"] * 1000
        head = next(s for s in d["stages"] if s["name"].startswith("mlm head"))
        peak = d["measured_bf16_matmul_peak_gflops" if precision == "bf16" else "measured_fp32_matmul_peak_gflops"]
        cells.setdefault((config, precision, int(vocab[1:])), []).append({
            "tokens_per_second": d["tokens_per_second"],
            "head_share": (head["forward_ms"] + head["backward_ms"]) / step_ms,
            "gflops": d["train_gflops_per_second"],
            "of_peak": d["train_gflops_per_second"] / peak,
            "of_ceiling": d["tokens_per_second"] / d["ceiling_tokens_per_second"],
            "parameters": d["parameter_bytes"] / 4,
        })
    return cells


def main():
    cells = load()
    lines = ["| config | precision | vocabulary | parameters | tokens/s | head's share of the step | GFLOP/s | of the matmul peak | of the step's ceiling |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (config, precision, vocab), runs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] != "fp32", kv[0][2])):
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        lines.append(f"| {config} | {precision} | {vocab} | {med['parameters'] / 1e6:.1f} M | {med['tokens_per_second']:,.0f} "
                     f"| {med['head_share']:.1%} | {med['gflops']:.0f} | {med['of_peak']:.0%} | {med['of_ceiling']:.0%} |")
    text = "\n".join(lines) + "\n"
    open(os.path.join(HERE, "vocab.md"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
