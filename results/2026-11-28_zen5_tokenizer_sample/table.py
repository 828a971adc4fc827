#!/usr/bin/env python3
"""Markdown table of sweep.py's JSON lines: table.py sweep.jsonl"""
import json
import sys

print("| corpus | vocab | sample MiB | sentences | peak RSS MiB | RSS / sample byte | CPU s (prepare) "
      "| held-out tokens/word | unigram ppl/token | unigram bits/word |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["exit"] != 0:
        print(f"| {r['corpus']} | {r['vocab']} | {r['sample_mb']} | | {r['peak_rss_mb']:.0f} | | {r['cpu_s']:.1f} "
              f"| failed: vocabulary too large for the sample | | |")
        continue
    mb = r["sample_bytes"] / 2**20
    print(f"| {r['corpus']} | {r['vocab']} | {mb:.1f} | {r['sample_sentences']} | {r['peak_rss_mb']:.0f} "
          f"| {r['peak_rss_mb'] / mb:.1f} | {r['cpu_s']:.1f} | {r['tokens_per_word']:.4f} "
          f"| {r['unigram_ppl_per_token']:.1f} | {r['unigram_bits_per_word']:.3f} |")
