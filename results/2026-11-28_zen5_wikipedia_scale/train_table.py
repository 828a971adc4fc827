#!/usr/bin/env python3
"""Renders train_10G/ (train_10G.sh) as train_10G.md: the straight run's tokens/s along the run
(the warm-up's blocks of 128, then blocks of 512), its validations, its RSS along the run (sampled
every 5 s), the checkpoint size, and whether the killed-and-resumed run's metrics equal the
straight run's (every column but the wall clock's)."""
import csv
import os
import re
import statistics
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "train_10G")


def rows(name):
    with open(os.path.join(RUN, name, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def rss(name):
    with open(os.path.join(RUN, f"rss_{name}.tsv")) as f:
        return [(int(a), int(b)) for a, b in (line.split() for line in list(f)[1:]) if int(b) > 0]


def main():
    straight = rows("straight")
    train = [r for r in straight if r["kind"] == "train"]
    valid = [r for r in straight if r["kind"] == "valid"]
    log = open(os.path.join(RUN, "straight", "train.log")).read()
    cut = re.search(r"validation: the first (\d+) of the valid split's (\d+) batches", log)
    # A log row's tokens/s is over its interval of 10 updates: the rows whose interval holds a
    # validation and a checkpoint (after updates 100 and 200), or both phases (51-60), are left out.
    steady = [r for r in train if int(r["update"]) - 10 not in {int(v["update"]) for v in valid}]
    out = ["| updates | blocks | tokens/s (median of the log rows) | min | max |", "|---|---|---:|---:|---:|"]
    phases = [("1-50", "128 tokens", [r for r in steady if int(r["update"]) <= 50]),
              ("61-200", "512 tokens", [r for r in steady if int(r["update"]) > 60])]
    for span, blocks, sel in phases:
        speeds = [float(r["tokens_per_second"]) for r in sel]
        out.append(f"| {span} | {blocks} | {statistics.median(speeds):,.0f} | {min(speeds):,.0f} | {max(speeds):,.0f} |")
    out.append("")
    for r in valid:
        out.append(f"- validation at update {r['update']}: perplexity {float(r['perplexity']):.1f} "
                   f"(unigram baseline {float(r['unigram_perplexity']):.1f})")
    if cut:
        out.append(f"- each validation read the first {int(cut.group(1)):,} of the valid split's {int(cut.group(2)):,} batches")
    stamps = [(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f"), m.group(2))
              for m in re.finditer(r"^\[([\d-]+ [\d:.]+)\] \[\w+\] (.*)$", log, re.M)]
    at = lambda pattern: next(t for t, text in stamps if re.search(pattern, text))
    out.append(f"- start-up (opening and checking the shards, the blocks' indexes) {(at('^model: ') - stamps[0][0]).total_seconds():.0f} s")
    for update in (100, 200):
        before = max(t for t, text in stamps if text.startswith(f"update {update}/"))
        validated = at(f"^valid \\| update {update} ")
        saved = at(f"checkpoint_{update:08d}")
        out.append(f"- update {update}: validation {(validated - before).total_seconds():.0f} s, "
                   f"checkpoint {(saved - validated).total_seconds():.0f} s")
    samples = rss("straight")
    late = [b for a, b in samples if a >= samples[-1][0] / 3]
    out.append(f"- RSS: peak {max(b for _, b in samples):,} MB; over the last two thirds of the run "
               f"{min(late):,}-{max(late):,} MB ({len(samples)} samples every 5 s)")
    split_path = os.path.join(RUN, "rss_split.tsv")  # sampled apart, from the straight run's minute 1.5
    if os.path.exists(split_path):
        lines = [line.split() for line in list(open(split_path))[1:]]
        first_pid = lines[0][1]
        anon = [int(a) for _, pid, a, _ in lines if pid == first_pid]
        files = [int(f) for _, pid, _, f in lines if pid == first_pid]
        out.append(f"- of which anonymous (RssAnon) {min(anon):,}-{max(anon):,} MB, file pages (RssFile) "
                   f"{min(files):,}-{max(files):,} MB ({len(anon)} samples)")
    checkpoint = int(open(os.path.join(RUN, "straight", "checkpoint_bytes.txt")).read())
    out.append(f"- checkpoints directory at the end: {checkpoint / 1e6:,.0f} MB")
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("tokens_per_second", "elapsed_seconds")} for r in rs]
    resumed = rows("resumed")
    out.append(f"- killed past update 150 and resumed from its checkpoint at 100: {len(resumed)} rows, "
               f"{'identical to' if strip(resumed) == strip(straight) else 'DIFFERENT from'} the straight run's {len(straight)} "
               "(every column but the wall clock's)")
    text = "\n".join(out) + "\n"
    open(os.path.join(HERE, "train_10G.md"), "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
