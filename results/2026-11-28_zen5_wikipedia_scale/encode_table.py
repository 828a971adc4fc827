#!/usr/bin/env python3
"""Renders encode_vs_spm.jsonl (encode_vs_spm.sh) as encode_vs_spm.md: per tool and core count,
the median over the rounds of the wall time and MB/s of text, and our speed over spm_encode's.

For linformer two times: the whole `prepare` with a given tokenizer (start-up, reading, encoding,
shard writing, the unigram baseline, meta.json) and its encode phase alone (meta.json's
phase_seconds.encode: reading, encoding and writing the shards, overlapped). spm_encode reads the
text and writes ids as text to /dev/null."""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rows = [json.loads(line) for line in open(os.path.join(HERE, "encode_vs_spm.jsonl"))]
    mb = rows[0]["bytes"] / 1e6
    med = {}
    for tool in ("spm_encode", "linformer"):
        for threads in sorted({r["threads"] for r in rows}):
            sel = [r for r in rows if r["tool"] == tool and r["threads"] == threads]
            if not sel:
                continue
            med[tool, threads] = {"seconds": statistics.median(r["seconds"] for r in sel), "rounds": len(sel)}
            if tool == "linformer":
                med[tool, threads]["encode"] = statistics.median(r["encode_seconds"] for r in sel)
    out = [f"Text: {mb:.0f} MB. Medians over {rows[-1]['round']} alternating rounds.", "",
           "| tool | cores | wall s | MB/s | encode phase s | encode MB/s | ours / spm_encode (whole prepare) | (encode phase) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (tool, threads), m in med.items():
        spm = med.get(("spm_encode", threads))
        enc = m.get("encode")
        ratio = f"{spm['seconds'] / m['seconds']:.2f}" if tool == "linformer" and spm else ""
        ratio_enc = f"{spm['seconds'] / enc:.2f}" if tool == "linformer" and spm else ""
        out.append(f"| {tool} | {threads} | {m['seconds']:.1f} | {mb / m['seconds']:.1f} "
                   f"| {f'{enc:.1f}' if enc else ''} | {f'{mb / enc:.1f}' if enc else ''} | {ratio} | {ratio_enc} |")
    for tool in ("spm_encode", "linformer"):
        threads = sorted(t for (name, t) in med if name == tool)
        if len(threads) > 1:
            out.append(f"\n{tool}: {threads[-1]} cores {med[tool, threads[0]]['seconds'] / med[tool, threads[-1]]['seconds']:.2f}× "
                       f"as fast as {threads[0]}.")
    text = "\n".join(out) + "\n"
    open(os.path.join(HERE, "encode_vs_spm.md"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
