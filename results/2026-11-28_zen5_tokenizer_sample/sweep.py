#!/usr/bin/env python3
"""Tokenizer quality and memory against the size of its sample (results README.md).

For each (corpus, vocabulary, sample size): `linformer prepare` with data.tokenizer_max_bytes set,
under /usr/bin/time -v (peak RSS: the trainer's, the largest phase), one thread; then the trained
model encodes a held-out text (prepare with data.tokenizer_model) whose unigram baseline gives
the held-out perplexity per token; per word = tokens per word × log2(perplexity).

Corpora: synthetic (scripts/make_corpus.py, text format, seed 1; held out: seed 2, 4 MB) of the
sample's size, so the whole file is the sample (prepare then encodes it once more: its time is
in the CPU column); Brown without every 10th document, sampled by data.tokenizer_max_bytes
(held out: every 10th document).

Usage: sweep.py WORK_DIR OUT.jsonl   (appends one JSON line per run; skips runs already there)
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("LINFORMER_BIN", os.path.join(ROOT, "build", "linformer"))
RECIPE = os.path.join(ROOT, "recipes", "brown", "base.toml")
MB = 1 << 20
RUNS = [("brown", 8000, s) for s in (1, 2, 4, 8)] + [("brown", 32000, s) for s in (2, 4, 8)] + \
       [("synthetic", v, s) for s in (8, 32, 64) for v in (8000, 32000)] + \
       [("synthetic", 32000, 128), ("synthetic", 8000, 128)]


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout + r.stderr


def prepare(corpus, out, sets, timed=False):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [BIN, "prepare", "--recipe", RECIPE, "--force", "--set", f'data.corpus=["{corpus}"]',
           "--set", f"data.prepared_dir={out}", "--set", "threads=1"]
    for s in sets:
        cmd += ["--set", s]
    if timed:
        cmd = ["/usr/bin/time", "-v"] + cmd
    return run(cmd, env)


def words_in(path):
    n = 0
    for root, _, files in os.walk(path) if os.path.isdir(path) else [("", [], [path])]:
        for f in files:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                n += sum(len(line.split()) for line in fh)
    return n


def corpora(work):
    brown_src = os.path.join(ROOT, "data", "brown", "text")
    brown_train, brown_held = os.path.join(work, "brown_train"), os.path.join(work, "brown_heldout")
    if not os.path.isdir(brown_held):
        for d in (brown_train + ".tmp", brown_held + ".tmp"):
            os.makedirs(d, exist_ok=True)
        for i, name in enumerate(sorted(os.listdir(brown_src))):
            shutil.copy(os.path.join(brown_src, name), (brown_held if i % 10 == 9 else brown_train) + ".tmp")
        os.rename(brown_train + ".tmp", brown_train)
        os.rename(brown_held + ".tmp", brown_held)
    synth_held = os.path.join(work, "synthetic_heldout.txt")
    make = [sys.executable, os.path.join(ROOT, "scripts", "make_corpus.py")]
    if not os.path.exists(synth_held):
        subprocess.run(make + [synth_held, str(4 * MB), "--format", "text", "--seed", "2"], check=True)
    return {"brown": (brown_train, brown_held), "synthetic": (None, synth_held)}, make


def main():
    work, out_path = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    done = set()
    if os.path.exists(out_path):
        for line in open(out_path):
            r = json.loads(line)
            done.add((r["corpus"], r["vocab"], r["sample_mb"]))
    sources, make = corpora(work)
    held_words = {k: words_in(v[1]) for k, v in sources.items()}
    for corpus, vocab, sample_mb in RUNS:
        if (corpus, vocab, sample_mb) in done:
            continue
        train, held = sources[corpus]
        if train is None:
            train = os.path.join(work, f"synthetic_{sample_mb}MB.txt")
            if not os.path.exists(train):
                subprocess.run(make + [train, str(sample_mb * MB), "--format", "text", "--seed", "1"], check=True)
        prepared = os.path.join(work, "prepared")
        code, log = prepare(train, prepared, [f"data.vocab_size={vocab}", f"data.tokenizer_max_bytes={sample_mb * MB}",
                                              "data.tokenizer_max_sentences=100000000"], timed=True)
        row = {"corpus": corpus, "vocab": vocab, "sample_mb": sample_mb, "exit": code}
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", log)
        user = re.search(r"User time \(seconds\): ([\d.]+)", log)
        system = re.search(r"System time \(seconds\): ([\d.]+)", log)
        trained = re.search(r"tokenizer: trained .* in ([\d.]+) s", log)
        row.update(peak_rss_mb=int(rss.group(1)) / 1024 if rss else None,
                   cpu_s=float(user.group(1)) + float(system.group(1)) if user else None,
                   tokenizer_wall_s=float(trained.group(1)) if trained else None)
        if code == 0:
            meta = json.load(open(os.path.join(prepared, "meta.json")))
            row.update(sample_bytes=meta["tokenizer"]["sample_bytes"], sample_sentences=meta["tokenizer"]["sample_sentences"])
            model = os.path.join(work, "spm.model")
            shutil.copy(os.path.join(prepared, "spm.model"), model)
            code2, log2 = prepare(held, os.path.join(work, "held"), [f"data.tokenizer_model={model}", f"data.vocab_size={vocab}",
                                                                    "data.valid_fraction=0.5", "data.test_fraction=0"])
            if code2 == 0:
                hm = json.load(open(os.path.join(work, "held", "meta.json")))
                s = hm["summary"]
                ordinary = s["tokens"] - s["sentences"] - s["unknown_tokens"]
                ppl = hm["unigram"]["valid_perplexity"]
                tpw = ordinary / held_words[corpus]
                row.update(tokens_per_word=tpw, unigram_ppl_per_token=ppl, unigram_bits_per_word=tpw * math.log2(ppl))
            else:
                row["error"] = log2[-500:]
        else:
            row["error"] = log[-800:]
        print(json.dumps(row), flush=True)
        with open(out_path, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
