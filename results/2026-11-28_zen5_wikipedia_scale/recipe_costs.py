#!/usr/bin/env python3
"""Each recipe of recipes/wikipedia/ with its measured cost: renders recipes/*.json (bench train
on one micro-batch of the recipe, fp32 and bf16) as recipe_costs.md and rewrites the "# cost"
lines of each recipe's header from them (--write), so the headers carry the measured numbers.

A day on one machine: the bf16 tokens/s (fp32 where the CPU lacks avx512_bf16) × 86,400 s, in
updates of the recipe's batch_size × accumulation × seq_len tokens (the bench times one micro-batch a
step; accumulating amortises the optimizer's few percent, so this slightly underestimates). Eight
machines over MPI: an estimate, not a measurement: 8 × one machine × t / (t + allreduce), t an update's
compute on one machine and the allreduce of the fp32 gradients (4 bytes a parameter) over a 10 Gb/s
ring as modelled in results/2026-11-25_mpi/ (2(R−1)/R · G / W + 2(R−1) · 50 µs), not overlapped."""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECIPES = os.path.join(ROOT, "recipes", "wikipedia")
FOLDER = "results/" + os.path.basename(HERE)
MACHINES, BANDWIDTH, LATENCY = 8, 1.25e9, 50e-6


def resolved(name):
    """The recipe's keys that matter here, following its base chain."""
    import tomllib
    chain, path = [], os.path.join(RECIPES, name + ".toml")
    while path:
        with open(path, "rb") as f:
            t = tomllib.load(f)
        chain.append(t)
        path = os.path.join(os.path.dirname(path), t["base"]) if "base" in t else None
    merged = {}
    for t in reversed(chain):
        for section, values in t.items():
            if isinstance(values, dict):
                merged.setdefault(section, {}).update(values)
    return merged


def costs():
    rows = []
    for path in sorted(glob.glob(os.path.join(HERE, "recipes", "*_fp32.json"))):
        name = os.path.basename(path)[: -len("_fp32.json")]
        fp32 = json.load(open(path))
        bf16 = json.load(open(path.replace("_fp32.json", "_bf16.json")))
        r = resolved(name)
        update_tokens = r["train"]["batch_size"] * r["train"]["accumulation"] * r["data"]["seq_len"]
        parameters = fp32["parameter_bytes"] / 4
        compute = update_tokens / bf16["tokens_per_second"]
        allreduce = 2 * (MACHINES - 1) / MACHINES * fp32["parameter_bytes"] / BANDWIDTH + 2 * (MACHINES - 1) * LATENCY
        day = bf16["tokens_per_second"] * 86400
        rows.append({
            "name": name, "parameters": parameters, "update_tokens": update_tokens,
            "micro_batch": f"{r['train']['batch_size']} × {r['data']['seq_len']}",
            "rss_gb": max(fp32["peak_rss_kb"], bf16["peak_rss_kb"]) * 1024 / 1e9,
            "fp32": fp32["tokens_per_second"], "bf16": bf16["tokens_per_second"],
            "bf16_of_peak": bf16["train_gflops_per_second"] / bf16["measured_bf16_matmul_peak_gflops"],
            "day_tokens": day, "day_updates": day / update_tokens,
            "efficiency": compute / (compute + allreduce), "allreduce_s": allreduce,
        })
    return rows


def header(row):
    m8 = row["day_tokens"] * MACHINES * row["efficiency"]
    return [
        f"# cost (`bench train`, a 2-core AMD EPYC Zen 5, avx512_bf16; {FOLDER}/):",
        f"#   {row['parameters'] / 1e6:.1f} M parameters; peak RSS {row['rss_gb']:.1f} GB (a micro-batch of {row['micro_batch']});",
        f"#   {row['bf16']:,.0f} tokens/s in bf16 ({row['bf16_of_peak']:.0%} of the bf16 matmul peak), {row['fp32']:,.0f} in fp32;",
        f"#   a day (bf16): {row['day_tokens'] / 1e6:,.0f} M tokens, {row['day_updates']:,.0f} updates of {row['update_tokens']:,} tokens;",
        f"#   eight such machines over MPI (updates of 8 × the blocks), estimated at 10 Gb/s and",
        f"#   {row['efficiency']:.0%} efficiency: {m8 / 1e9:.2f} G tokens a day.",
    ]


def write_headers(rows):
    for row in rows:
        path = os.path.join(RECIPES, row["name"] + ".toml")
        lines = open(path).read().split("\n")
        start = next(i for i, line in enumerate(lines) if line.startswith("# cost"))
        end = start + 1
        while end < len(lines) and lines[end].startswith("#   "):
            end += 1
        lines[start:end] = header(row)
        open(path, "w").write("\n".join(lines))


def main():
    rows = costs()
    out = ["| recipe | parameters | peak RSS GB | fp32 tokens/s | bf16 tokens/s | bf16 of peak | a day, bf16: M tokens | updates | 8 machines, estimated: G tokens |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['name']} | {r['parameters'] / 1e6:.1f} M | {r['rss_gb']:.1f} | {r['fp32']:,.0f} | {r['bf16']:,.0f} "
                   f"| {r['bf16_of_peak']:.0%} | {r['day_tokens'] / 1e6:,.0f} | {r['day_updates']:,.0f} "
                   f"| {r['day_tokens'] * MACHINES * r['efficiency'] / 1e9:.2f} ({r['efficiency']:.0%}) |")
    text = "\n".join(out) + "\n"
    open(os.path.join(HERE, "recipe_costs.md"), "w").write(text)
    print(text, end="")
    if "--write" in sys.argv:
        write_headers(rows)


if __name__ == "__main__":
    main()
