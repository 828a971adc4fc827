#!/usr/bin/env python3
"""Word pairs: a made-up corpus that needs word order from the first update, and how fast each
attention and initialisation learns it.

Every word of the corpus is written twice ("kalo kalo mire mire ..."), so a masked word is given
away by its twin beside it, which only a model that reads positions can use; a bag-of-words model
can only guess among the block's words. The test learning.word_order trains on it (write_corpus);
this script runs the experiment of results/word_pairs/:

  word_pairs.py run OUT --binary B [--seeds 1 2 3] [--updates 4000] [--models NAME ...]
      trains every model of MODELS at every seed on the same corpus (one prepare), validating
      every 100 updates on the valid split and on its words shuffled; keeps each run's recipe and
      metrics.jsonl under OUT/runs/NAME_sSEED and writes OUT/summary.json
  word_pairs.py check OUT
      exits 1 unless OUT/summary.json is what OUT/runs/*/metrics.jsonl give
  word_pairs.py table OUT
      prints OUT/summary.json as the README's table (markdown)

"Onset" is the first validation whose perplexity on shuffled words is at least ONSET_RATIO times
the perplexity in order: the update the model starts to use the pairs.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONSET_RATIO = 2.0
VALIDATE_EVERY = 100
EARLY = 400  # the table's early column: where full attention is mid-onset

# name -> (what it is, recipe lines over the shared recipe). The shared recipe is the test's:
# recipes/ci/tiny.toml (2 layers, d = 32, post-LN, σ = 0.02), blocks of n = 32, lr 3e-3.
MODELS = {
    "full_post": ("full attention, post-LN, σ = 0.02 (the recipes' initialisation)",
                  {"model": ['attention = "full"', 'norm = "post"']}),
    "full_pre": ("full attention, pre-LN, σ = 0.02",
                 {"model": ['attention = "full"', 'norm = "pre"']}),
    "full_post_std05": ("full attention, post-LN, σ = 0.05",
                        {"model": ['attention = "full"', 'norm = "post"', "init_std = 0.05"]}),
    "linformer_k8_post": ("Linformer k = 8 = n/4, post-LN, σ = 0.02",
                          {"model": ['attention = "linformer"', "k = 8", 'norm = "post"']}),
    "linformer_k8_pre": ("Linformer k = 8 = n/4, pre-LN, σ = 0.02",
                         {"model": ['attention = "linformer"', "k = 8", 'norm = "pre"']}),
}


def write_corpus(folder, documents=120, lines=20, pairs=8, words=150, seed=1):
    """documents files of `lines` lines, each `pairs` random words written twice."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "re", "su", "ta", "ne", "po", "vi", "du", "sa", "ko"]
    vocabulary = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 3))) for _ in range(words * 2)})[:words]
    os.makedirs(folder)
    for d in range(documents):
        with open(os.path.join(folder, f"d{d:03d}.txt"), "w") as f:
            for _ in range(lines):
                line = []
                for _ in range(pairs):
                    w = rng.choice(vocabulary)
                    line += [w, w]
                f.write(" ".join(line) + "\n")


def recipe_text(work, model, seed, updates):
    """The recipe of one run: the shared recipe, the model's lines, the seed."""
    sections = {
        "data": [f'corpus = ["{work}/corpus"]', f'prepared_dir = "{work}/prepared"', "vocab_size = 180", "seq_len = 32",
                 "valid_fraction = 0.05", "test_fraction = 0.05"],
        "model": [],
        "optim": ["lr = 3e-3", "warmup_updates = 50"],
        "train": ["batch_size = 16", f"max_updates = {updates}"],
        "validation": [f"every = {VALIDATE_EVERY}", "max_batches = 0", "shuffle_words = true"],
        "checkpoint": [f"every = {updates}"],
        "logging": ["every = 100"],
    }
    for section, lines in MODELS[model][1].items():
        sections[section] += lines
    text = f'base = "{ROOT}/recipes/ci/tiny.toml"\nname = "{model}_s{seed}"\nseed = {seed}\n'
    for section, lines in sections.items():
        text += f"\n[{section}]\n" + "".join(line + "\n" for line in lines)
    return text


def validations(metrics_path):
    """The valid rows of a metrics.jsonl, in update order."""
    rows = []
    with open(metrics_path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if row.get("kind") == "valid":
                    rows.append(row)
    if not rows:
        raise SystemExit(f"{metrics_path}: no validation rows")
    for row in rows:
        if "shuffled_perplexity" not in row:
            raise SystemExit(f"{metrics_path}: validation at update {row.get('update')} has no shuffled_perplexity "
                             "(validation.shuffle_words was off)")
    return sorted(rows, key=lambda r: r["update"])


def summarize_run(rows):
    """One run's last validation and its onset (None: never reached ONSET_RATIO)."""
    last = rows[-1]
    onset = next((r["update"] for r in rows if r["shuffled_perplexity"] >= ONSET_RATIO * r["perplexity"]), None)
    return {"updates": last["update"], "accuracy": last["accuracy"], "perplexity": last["perplexity"],
            "word_order_ratio": last["shuffled_perplexity"] / last["perplexity"], "onset": onset,
            "accuracy_by_update": {str(r["update"]): r["accuracy"] for r in rows}}


def mean_sd(values):
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def summarize_model(runs):
    """Mean and sd over seeds of the accuracy at EARLY updates and at the end; the onsets as measured."""
    last = mean_sd([r["accuracy"] for r in runs])
    early = mean_sd([r["accuracy_by_update"][str(EARLY)] for r in runs])
    return {"seeds": len(runs), "accuracy_mean": last[0], "accuracy_sd": last[1], "early_accuracy_mean": early[0],
            "early_accuracy_sd": early[1], "onsets": [r["onset"] for r in runs],
            "word_order_ratios": [r["word_order_ratio"] for r in runs]}


def run(args):
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {sorted(MODELS)}")
    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"--binary {args.binary}: not an executable file")
    out = os.path.abspath(args.out)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    with tempfile.TemporaryDirectory() as work:
        write_corpus(os.path.join(work, "corpus"))
        for model in args.models:
            for seed in args.seeds:
                name = f"{model}_s{seed}"
                recipe = os.path.join(work, f"{name}.toml")
                with open(recipe, "w") as f:
                    f.write(recipe_text(work, model, seed, args.updates))
                for command in (["prepare", "--recipe", recipe], ["train", "--recipe", recipe, "--run-dir",
                                                                  f"{work}/{name}"]):
                    r = subprocess.run([binary, *command], capture_output=True, text=True)
                    if r.returncode != 0:
                        raise SystemExit(f"{name}: linformer {command[0]} failed:\n{r.stdout}{r.stderr}")
                kept = os.path.join(out, "runs", name)
                os.makedirs(kept, exist_ok=True)
                for f in ("metrics.jsonl", "recipe.toml"):
                    shutil.copy(os.path.join(work, name, f), kept)
                done = summarize_run(validations(os.path.join(kept, "metrics.jsonl")))
                print(f"{name}: accuracy {done['accuracy']:.3f}, onset {done['onset']}", flush=True)
    write_summary(out, version, args.updates)


def summary_of(out, binary, updates):
    """summary.json's content from the runs kept under OUT/runs (NAME_sSEED, NAME in MODELS)."""
    summary = {"binary": binary, "onset_ratio": ONSET_RATIO, "updates": updates, "models": {}, "runs": {}}
    names = sorted(os.listdir(os.path.join(out, "runs")))
    for model in MODELS:
        runs = [n for n in names if n.rsplit("_s", 1)[0] == model]
        for name in runs:
            summary["runs"][name] = summarize_run(validations(os.path.join(out, "runs", name, "metrics.jsonl")))
            if summary["runs"][name]["updates"] != updates:
                raise SystemExit(f"{out}/runs/{name}: ends at update {summary['runs'][name]['updates']}, not {updates}")
        if runs:
            summary["models"][model] = summarize_model([summary["runs"][n] for n in runs])
    strays = sorted(set(names) - set(summary["runs"]))
    if strays:
        raise SystemExit(f"{out}/runs: {strays} are no model of MODELS")
    return summary


def write_summary(out, binary, updates):
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary_of(out, binary, updates), f, indent=1, sort_keys=True)
        f.write("\n")


def check(args):
    """The committed summary.json is what its runs' metrics give (exit 1 naming the difference)."""
    with open(os.path.join(args.out, "summary.json")) as f:
        committed = json.load(f)
    if summary_of(args.out, committed["binary"], committed["updates"]) != committed:
        raise SystemExit(f"{args.out}/summary.json is not what {args.out}/runs give: run `word_pairs.py summarize "
                         f"{args.out}`")


def table(args):
    path = os.path.join(args.out, "summary.json")
    with open(path) as f:
        summary = json.load(f)
    lines = [f"| model | seeds | onset (first validation with shuffled words ≥ {summary['onset_ratio']:g}×) | masked "
             f"accuracy at {EARLY} updates | at {summary['updates']:,} | shuffled words at the end (lowest) |",
             "|---|---|---|---|---|---|"]
    for model in MODELS:  # in the order of MODELS, not the file's
        if model not in summary["models"]:
            continue
        m = summary["models"][model]
        onsets = ", ".join("never" if o is None else f"{o:,}" for o in m["onsets"])
        lines.append(f"| {MODELS[model][0]} | {m['seeds']} | {onsets} | {m['early_accuracy_mean']:.2f} ± "
                     f"{m['early_accuracy_sd']:.2f} | {m['accuracy_mean']:.2f} ± {m['accuracy_sd']:.2f} | "
                     f"{min(m['word_order_ratios']):,.0f}× |")
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("out")
    p.add_argument("--binary", required=True)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--updates", type=int, default=4000)
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.set_defaults(func=run)
    c = sub.add_parser("check")
    c.add_argument("out")
    c.set_defaults(func=check)
    t = sub.add_parser("table")
    t.add_argument("out")
    t.set_defaults(func=table)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
