#!/usr/bin/env python3
"""Per-round after/before ratios of tokens/s and their medians, from bf16.txt and fp32.txt."""
import os
import re
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
for precision in ("bf16", "fp32"):
    tokens = {}
    for line in open(os.path.join(HERE, f"{precision}.txt")):
        m = re.match(r"round (\d+) (\w+) (before|after): throughput: (\d+) tokens/s", line)
        if m:
            tokens[(int(m[1]), m[2], m[3])] = int(m[4])
    for attention in ("linformer", "full"):
        rounds = sorted({r for r, a, _ in tokens if a == attention})
        before = [tokens[(r, attention, "before")] for r in rounds]
        after = [tokens[(r, attention, "after")] for r in rounds]
        ratios = [a / b for a, b in zip(after, before)]
        print(f"{precision} {attention}: before median {statistics.median(before):,.0f} tokens/s, after "
              f"{statistics.median(after):,.0f}; per-round after/before {', '.join(f'{x:.3f}' for x in ratios)}, "
              f"median {statistics.median(ratios):.3f}")
