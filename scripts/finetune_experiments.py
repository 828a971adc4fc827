#!/usr/bin/env python3
"""The fine-tuning experiment (the paper's Table 2): runs and tables.

  finetune_experiments.py run [--task T ...] [--encoder E ...] [--seed S ...] [--binary B]
  finetune_experiments.py report

run: for every table of recipes/finetune/experiments.toml and every (task, encoder, seed) of it
without results,
fine-tunes into runs/finetune/<task>/<encoder>_s<seed> (resuming an interrupted run) and copies
results.json, metrics.csv, recipe.toml and run.json (wall time, machine) into
results/finetune/runs/<task>/<encoder>_s<seed>/. A pretrained encoder is the newest checkpoint of
runs/experiments/<encoder>; when it is missing the pretraining recipe of that name in
recipes/brown/experiments.toml is trained there first (the same weights as the published run on
the same binary and machine; elsewhere close to them: the log compares its final validation
perplexity with the published run's). Each run.json records its encoder's final validation
perplexity (encoder_valid_ppl), so the report can tell when an encoder's fine-tuning seeds read two
pretrainings.
report: results/finetune/README.md, per table a table per task (test accuracy and macro F1, mean ± standard
deviation over seeds, and seconds per epoch) and the average over tasks; reads only results/.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from experiments import ExperimentError, machine_description, machine_text  # noqa: E402
from experiments import read_manifest as read_pretraining_manifest  # noqa: E402
from verdicts import sample_sd, t975, welch_half_width  # noqa: E402

MANIFEST = os.path.join(ROOT, "recipes", "finetune", "experiments.toml")
PRETRAINING = os.path.join(ROOT, "recipes", "brown", "experiments.toml")
RESULTS = os.path.join(ROOT, "results", "finetune")
RANDOM = "none"


def read_manifest(path=MANIFEST):
    """The [[table]] entries: each a name, its tasks (recipes), encoders and seeds."""
    with open(path, "rb") as f:
        m = tomllib.load(f)
    tables = m.get("table")
    if not isinstance(tables, list) or not tables:
        raise SystemExit(f"{path}: no [[table]] entries")
    for i, t in enumerate(tables):
        if not isinstance(t.get("name"), str) or not t["name"]:
            raise SystemExit(f"{path}: table {i + 1} has no name")
        for key in ("tasks", "encoders", "seeds"):
            if not isinstance(t.get(key), list) or not t[key]:
                raise SystemExit(f"{path}: table '{t['name']}': '{key}' must be a non-empty list")
        if "reference" not in t and "tolerance" not in t:
            continue  # no Transformer at this length: accuracies and costs only, no verdict
        if t.get("reference") not in t["encoders"] or t["reference"] == RANDOM:
            raise SystemExit(f"{path}: table '{t['name']}': 'reference' must name one of its pretrained encoders "
                             f"(the Transformer the Linformer encoders are compared with)")
        if not isinstance(t.get("tolerance"), (int, float)) or t["tolerance"] < 0:
            raise SystemExit(f"{path}: table '{t['name']}': 'tolerance' must be a number of accuracy points ≥ 0")
    return tables


def read_budget(path=MANIFEST):
    """The manifest's `budget`: what the experiment was sized to and what was cut (said in the report)."""
    with open(path, "rb") as f:
        budget = tomllib.load(f).get("budget", "")
    if not isinstance(budget, str):
        raise SystemExit(f"{path}: 'budget' must be a string")
    return budget


def task_name(recipe):
    return os.path.splitext(os.path.basename(recipe))[0]


def has_checkpoint(run_dir):
    d = os.path.join(run_dir, "checkpoints")
    return os.path.isdir(d) and any(os.path.exists(os.path.join(d, c, "DONE")) for c in os.listdir(d))


def pretraining_recipes(encoders, manifest=PRETRAINING):
    """{encoder: recipe path}: each pretrained encoder is the run of that name in the pretraining manifest."""
    try:
        experiments = read_pretraining_manifest(manifest)
    except ExperimentError as e:
        raise SystemExit(str(e))
    recipes = {name: recipe for e in experiments.values() for name, recipe in zip(e["names"], e["recipes"])}
    missing = sorted(set(encoders) - set(recipes) - {RANDOM})
    if missing:
        raise SystemExit(f"{MANIFEST}: encoder(s) {', '.join(missing)}: no pretraining run of that name in {manifest} "
                         f"(an encoder is a run name there, the recipe's file name without .toml, or '{RANDOM}')")
    return {e: recipes[e] for e in encoders if e != RANDOM}


def pretrained(encoder, recipes, binary, log):
    """The run directory of a finished pretraining run: trained first from its recipe when it has no
    checkpoint, and resumed to its end when it has one (a pretraining stopped part way leaves one;
    `train --resume auto` on a finished run does nothing)."""
    run_dir = os.path.join(ROOT, "runs", "experiments", encoder)
    if encoder == RANDOM:
        return RANDOM
    recipe = recipes[encoder]
    train = ["train", "--recipe", recipe, "--run-dir", run_dir, "--resume", "auto"]
    if has_checkpoint(run_dir):
        log(f"{encoder}: resuming the pretraining in {run_dir} to its end (nothing to do when finished)")
        steps = [train]
    else:
        log(f"{encoder}: no checkpoint in {run_dir}; pretraining it from {os.path.relpath(recipe, ROOT)}")
        steps = [["prepare", "--recipe", recipe], train]
    for step in steps:
        # prepare's output is the shards' summary; its errors (e.g. another process preparing) go to stderr.
        r = subprocess.run([binary] + step, stdout=subprocess.DEVNULL if step[0] == "prepare" else None)
        if r.returncode != 0:
            raise SystemExit(f"finetune_experiments: {encoder}: linformer {step[0]} --recipe "
                             f"{os.path.relpath(recipe, ROOT)} exited with {r.returncode} (its error is above); "
                             "run this command again once it is fixed: it resumes")
    again = final_valid_ppl(run_dir)
    published = final_valid_ppl(os.path.join(ROOT, "results", "brown", "runs", encoder))
    if published is not None:
        same = "the same as" if again == published else "differs from"
        log(f"{encoder}: pretrained again, final validation perplexity {again!r} {same} the published run's "
            f"{published!r}" + ("" if again == published else " (another machine, binary or thread count): its "
                                 "fine-tuning runs from before read other weights"))
    return run_dir


def final_valid_ppl(run_dir):
    """The last validation perplexity of a pretraining run's metrics.jsonl; None without one."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        valid = [r for r in (json.loads(line) for line in f if line.strip()) if r.get("kind") == "valid"]
    return valid[-1]["perplexity"] if valid else None


def run(args, log):
    manifest = read_manifest()
    check_selection(args, manifest)
    check_task_data(args, manifest)
    recipes = pretraining_recipes({e for m in manifest for e in m["encoders"]})
    machine = machine_description(args.binary)
    ready = {}  # {encoder: its pretraining's run directory, finished}
    for m in manifest:
        run_table(m, args, recipes, machine, log, ready)


def check_selection(args, manifest):
    """--task/--encoder/--seed must name what the manifest lists: a typo would otherwise run nothing."""
    known = {"task": {task_name(t) for m in manifest for t in m["tasks"]},
             "encoder": {e for m in manifest for e in m["encoders"]},
             "seed": {s for m in manifest for s in m["seeds"]}}
    for option, names in known.items():
        for value in getattr(args, option) or ():
            if value not in names:
                raise SystemExit(f"finetune_experiments: --{option} {value}: not in {MANIFEST}; it lists "
                                 + ", ".join(str(n) for n in sorted(names)))


def finetune_files(recipe):
    """The [finetune] train, valid and test files a task recipe names, its `base` chain followed."""
    files, path = {}, recipe
    while path:
        with open(path, "rb") as f:
            r = tomllib.load(f)
        for key, file in r.get("finetune", {}).items():
            if key in ("train", "valid", "test"):
                files.setdefault(key, file)
        path = os.path.join(os.path.dirname(path), r["base"]) if "base" in r else None
    return files


def check_task_data(args, manifest):
    """Every selected task's labelled data must be there before an encoder is pretrained for it
    (30-57 minutes each): a missing file stops the run at once, naming how to make it."""
    for recipe in sorted({t for m in manifest for t in m["tasks"]}):
        if args.task and task_name(recipe) not in args.task:
            continue
        path = os.path.join(ROOT, "recipes", "finetune", recipe)
        for key, file in finetune_files(path).items():
            if not os.path.exists(os.path.join(ROOT, file)):
                raise SystemExit(f"finetune_experiments: {os.path.relpath(path, ROOT)}: finetune.{key} = '{file}' does "
                                 "not exist (scripts/get_classification_data.sh makes data/finetune/)")


def run_table(m, args, recipes, machine, log, ready):
    for recipe in m["tasks"]:
        task = task_name(recipe)
        if args.task and task not in args.task:
            continue
        for encoder in m["encoders"]:
            if args.encoder and encoder not in args.encoder:
                continue
            for seed in m["seeds"]:
                if args.seed and seed not in args.seed:
                    continue
                name = f"{encoder}_s{seed}"
                results = os.path.join(RESULTS, "runs", task, name)
                if os.path.exists(os.path.join(results, "run.json")):
                    log(f"{task}/{name}: up to date")
                    continue
                if encoder not in ready:  # once per encoder and command
                    ready[encoder] = pretrained(encoder, recipes, args.binary, log)
                checkpoint = ready[encoder]
                run_dir = os.path.join(ROOT, "runs", "finetune", task, name)
                log(f"{task}/{name}: fine-tuning into {run_dir}")
                started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
                time_file = os.path.join(ROOT, "runs", "finetune", f".{task}_{name}.time")
                os.makedirs(os.path.dirname(time_file), exist_ok=True)
                r = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", time_file, args.binary, "finetune",
                                    "--recipe", os.path.join(ROOT, "recipes", "finetune", recipe),
                                    "--checkpoint", checkpoint, "--set", f"seed={seed}", "--run-dir", run_dir,
                                    "--resume", "auto"])
                if r.returncode != 0:
                    raise SystemExit(f"{task}/{name}: linformer finetune exited with {r.returncode} "
                                     f"(log: {run_dir}/train.log)")
                with open(time_file) as f:
                    wall, rss_kb = f.read().split()[-2:]
                os.makedirs(results, exist_ok=True)
                for file in ("results.json", "metrics.csv", "recipe.toml"):
                    shutil.copyfile(os.path.join(run_dir, file), os.path.join(results, file))
                with open(os.path.join(results, "run.json"), "w") as f:
                    json.dump({"task": task, "encoder": encoder, "seed": seed, "recipe": f"recipes/finetune/{recipe}",
                               "checkpoint": os.path.relpath(checkpoint, ROOT) if checkpoint != RANDOM else RANDOM,
                               "encoder_valid_ppl": final_valid_ppl(checkpoint) if checkpoint != RANDOM else None,
                               "started": started, "wall_seconds": float(wall), "peak_rss_mb": int(rss_kb) / 1024,
                               "machine": machine}, f, indent=2)
                    f.write("\n")
                log(f"{task}/{name}: done")


def read_csv(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
        return [dict(zip(header, line.strip().split(","))) for line in f if line.strip()]


def seconds_per_epoch(metrics):
    """Wall seconds between consecutive validations (training and validation of one epoch), median."""
    times = [float(r["elapsed_seconds"]) for r in metrics if r["kind"] == "valid"]
    gaps = [b - a for a, b in zip([0.0] + times, times)]
    gaps.sort()
    return gaps[len(gaps) // 2] if gaps else float("nan")


def mean_sd(values):
    if not values:
        return float("nan"), float("nan")
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


def cell(values, scale=100.0):
    if not values:
        return "–"
    mean, sd = mean_sd([v * scale for v in values])
    return f"{mean:.1f} ± {sd:.1f} ({len(values)})"


def collect(m, results_dir):
    """{task: {encoder: [run, ...]}} with each run's results, metrics and run.json."""
    table = {}
    for recipe in m["tasks"]:
        task = task_name(recipe)
        for encoder in m["encoders"]:
            for seed in m["seeds"]:
                d = os.path.join(results_dir, "runs", task, f"{encoder}_s{seed}")
                if not os.path.exists(os.path.join(d, "run.json")):
                    continue
                with open(os.path.join(d, "results.json")) as f:
                    results = json.load(f)
                with open(os.path.join(d, "run.json")) as f:
                    run_info = json.load(f)
                table.setdefault(task, {}).setdefault(encoder, []).append(
                    {"results": results, "run": run_info, "metrics": read_csv(os.path.join(d, "metrics.csv")), "seed": seed})
    return table


PUBLISHED_PRETRAINING = os.path.join(ROOT, "results", "brown", "runs")


def report(log, manifest=MANIFEST, results=RESULTS, published=PUBLISHED_PRETRAINING):
    lines = ["# Fine-tuning: the paper's Table 2 on data this machine can reach", "",
             "Generated by `scripts/finetune_experiments.py report` from `runs/<task>/<encoder>_s<seed>/`; do not edit. "
             "Test accuracy and macro F1 in %, mean ± standard deviation over seeds (number of seeds), each run scored "
             "with its best epoch's weights (lowest validation loss); seconds per epoch: the median wall time between "
             "validations (training and validation of an epoch); peak RSS: the fine-tuning process's, median over seeds. Encoders: the final checkpoints of "
             "`recipes/brown/experiments.toml`'s pretraining runs, and `none`, a random encoder of the recipe's shape.",
             ""]
    budget = read_budget(manifest)
    if budget:
        lines += ["## Budget: what was run and what was cut", "", budget.strip(), ""]
    machines = set()
    for m in read_manifest(manifest):
        table = collect(m, results)
        lines += table_lines(m, table, published)
        machines |= {machine_text(r["run"]["machine"]) for enc in table.values() for runs in enc.values() for r in runs}
    lines += ["Machines: " + ("; ".join(sorted(machines)) if machines else "none yet"), ""]
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "README.md"), "w") as f:
        f.write("\n".join(lines))
    log(f"report: {os.path.join(results, 'README.md')}")


def table_lines(m, table, published=PUBLISHED_PRETRAINING):
    lines = [f"## {m['name']}", ""]
    averages = {}
    for recipe in m["tasks"]:
        task = task_name(recipe)
        lines += [f"### {task}", "", f"Recipe: `recipes/finetune/{recipe}`.", "",
                  "| encoder | test accuracy | test macro F1 | valid accuracy | s / epoch | peak RSS (MB) |",
                  "|---|---|---|---|---|---|"]
        for encoder in m["encoders"]:
            runs = table.get(task, {}).get(encoder, [])
            if not runs:
                lines.append(f"| {encoder} | not run yet | | | | |")
                continue
            acc = [r["results"]["test"]["accuracy"] for r in runs if "test" in r["results"]]
            f1 = [r["results"]["test"]["macro_f1"] for r in runs if "test" in r["results"]]
            valid = [r["results"]["valid"]["accuracy"] for r in runs]
            epoch = [seconds_per_epoch(r["metrics"]) for r in runs]
            averages.setdefault(encoder, []).append(mean_sd(acc)[0] if acc else None)
            rss = sorted(r["run"]["peak_rss_mb"] for r in runs if "peak_rss_mb" in r["run"])
            rss_cell = f"{rss[len(rss) // 2]:,.0f}" if rss else "–"
            lines.append(f"| {encoder} | {cell(acc)} | {cell(f1)} | {cell(valid)} | {sorted(epoch)[len(epoch) // 2]:.0f} "
                         f"| {rss_cell} |")
        lines.append("")
    lines += [f"### {m['name']}: average over tasks", "", "| encoder | mean test accuracy | tasks |", "|---|---|---|"]
    for encoder in m["encoders"]:
        values = [v for v in averages.get(encoder, []) if v is not None]
        complete = len(values) == len(m["tasks"])
        mean = f"{100 * sum(values) / len(values):.1f}" if values else "–"
        lines.append(f"| {encoder} | {mean}{'' if complete else ' (incomplete)'} | {len(values)} of {len(m['tasks'])} |")
    lines.append("")
    twice = pretrained_twice(m, table, published)
    if twice:
        lines += ["Encoders whose fine-tuning runs read more than one pretraining (the final validation perplexities "
                  "their run.json record; a run older than that record counts as reading the published pretraining, "
                  "`results/brown/runs/<encoder>/`): " + "; ".join(f"{e} ({', '.join(f'{p:.2f}' for p in ppl)})"
                                                                   for e, ppl in twice.items()) + ".", ""]
    return lines + (verdict_lines(m, table) if "reference" in m else [])


def pretrained_twice(m, table, published=PUBLISHED_PRETRAINING):
    """{encoder: sorted perplexities} for encoders whose runs read pretrainings of different final
    validation perplexities: encoder_valid_ppl as recorded, or for a run older than that record the
    published pretraining's (published/<encoder>/metrics.jsonl), which every run read before
    encoders were pretrained again."""
    out = {}
    for encoder in m["encoders"]:
        runs = [r for t in table.values() for r in t.get(encoder, [])]
        ppl = {r["run"]["encoder_valid_ppl"] for r in runs if r["run"].get("encoder_valid_ppl") is not None}
        if any(r["run"].get("encoder_valid_ppl") is None for r in runs) and encoder != RANDOM:
            original = final_valid_ppl(os.path.join(published, encoder))
            if original is not None:
                ppl.add(original)
        if len(ppl) > 1:
            out[encoder] = sorted(ppl)
    return out


def task_means(table, task, encoder):
    runs = table.get(task, {}).get(encoder, [])
    acc = [r["results"]["test"]["accuracy"] for r in runs if "test" in r["results"]]
    return (100 * mean_sd(acc)[0], len(acc)) if acc else (None, 0)


def seed_means(table, tasks, encoder):
    """{seed: mean test accuracy (points) over `tasks`} for the seeds run on every one of them."""
    by_task = [{r["seed"]: 100 * r["results"]["test"]["accuracy"]
                for r in table.get(t, {}).get(encoder, []) if "test" in r["results"]} for t in tasks]
    common = set.intersection(*(set(d) for d in by_task)) if by_task else set()
    return {s: sum(d[s] for d in by_task) / len(by_task) for s in sorted(common)}


def finetune_noise(m, table):
    """(σ, df): the fine-tuning seed's sd of an encoder's mean over the table's tasks, pooled over
    the pretrained encoders with two complete seeds or more (the random encoder left out)."""
    tasks = [task_name(r) for r in m["tasks"]]
    squares, df = 0.0, 0
    for encoder in m["encoders"]:
        values = list(seed_means(table, tasks, encoder).values()) if encoder != RANDOM else []
        if len(values) >= 2:
            mean = sum(values) / len(values)
            squares += sum((v - mean) ** 2 for v in values)
            df += len(values) - 1
    return (math.sqrt(squares / df), df) if df else (None, 0)


def judge_difference(d, half, tolerance):
    """The paper's half point, one-sided: the interval d ± half above −tolerance agrees, all below disagrees."""
    return ("agrees" if d - half >= -tolerance else "disagrees" if d + half < -tolerance
            else "cannot tell at this noise")


def verdict_lines(m, table):
    """The paper's claim checked per Linformer encoder: its test accuracy against the reference
    Transformer's, averaged over the tasks both have runs for, judged against the fine-tuning seed
    noise (a 95% t interval of the difference, as scripts/verdicts.py does for pretraining), and
    again with each encoder's own seed noise (a Welch interval, as there); and how much of the
    pretraining's gain over the random encoder it keeps on those tasks."""
    reference, tolerance = m["reference"], m["tolerance"]
    sigma, df = finetune_noise(m, table)
    noise = (f"σ = {sigma:.2f} points (df {df}), the sd over fine-tuning seeds of an encoder's mean over the tasks, "
             f"pooled over the encoders with two seeds or more" if sigma is not None else
             "no encoder has two seeds on every task, so no noise is measured and every verdict is \"cannot tell\"")
    lines = [f"### {m['name']}: the paper's claim", "",
             f"Table 2 of the paper: Linformer encoders fine-tune within about half a point of the Transformer. "
             f"Checked per encoder against `{reference}` on the tasks both have runs for (mean over seeds, then over "
             f"tasks), judged against the seed noise: {noise}. The 95% interval of the difference is ± t · σ · "
             f"sqrt(1/n + 1/n_ref), n the seeds run on every task; it agrees when the whole interval is above "
             f"−{tolerance:g} points, disagrees when it is all below, and otherwise cannot tell at this noise. "
             f"\"Gain kept\": (encoder − none) / ({reference} − none) on the same tasks, where `none` has runs for "
             f"them. The last column judges the same difference with each encoder's own seed noise (a 95% Welch "
             f"interval, where both have two seeds or more; a check on the pooled σ, added on 2026-11-30).", "",
             f"| encoder | tasks | seeds | accuracy | {reference} | difference [95% interval] | gain kept | verdict | "
             f"with each encoder's own noise [95% Welch interval]; verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for encoder in m["encoders"]:
        if encoder in (reference, RANDOM):
            continue
        pairs = []
        for recipe in m["tasks"]:
            task = task_name(recipe)
            mine, seeds = task_means(table, task, encoder)
            ref, _ = task_means(table, task, reference)
            if mine is not None and ref is not None:
                pairs.append((mine, ref, task_means(table, task, RANDOM)[0], seeds, task))
        if not pairs:
            lines.append(f"| {encoder} | 0 of {len(m['tasks'])} | | | | | | not run yet | |")
            continue
        mine = sum(p[0] for p in pairs) / len(pairs)
        ref = sum(p[1] for p in pairs) / len(pairs)
        seeds = "–".join(sorted({str(p[3]) for p in pairs}, key=int))
        gain = "–"
        if all(p[2] is not None for p in pairs):
            none = sum(p[2] for p in pairs) / len(pairs)
            gain = f"{100 * (mine - none) / (ref - none):.0f}%" if ref != none else "–"
        partial = "" if len(pairs) == len(m["tasks"]) else " (not all tasks)"
        d, interval, verdict = mine - ref, "", "cannot tell at this noise"
        tasks = [p[4] for p in pairs]
        values, ref_values = (list(seed_means(table, tasks, e).values()) for e in (encoder, reference))
        if sigma is not None:
            half = t975(df) * sigma * math.sqrt(1 / max(1, len(values)) + 1 / max(1, len(ref_values)))
            interval = f" [{d - half:+.1f}, {d + half:+.1f}]"
            verdict = judge_difference(d, half, tolerance)
        own = "– (one seed)"
        if len(values) >= 2 and len(ref_values) >= 2:
            half = welch_half_width(sample_sd(values), len(values), sample_sd(ref_values), len(ref_values))
            own = f"[{d - half:+.1f}, {d + half:+.1f}]; {judge_difference(d, half, tolerance)}"
        lines.append(f"| {encoder} | {len(pairs)} of {len(m['tasks'])} | {seeds} | {mine:.1f} | {ref:.1f} | "
                     f"{d:+.1f}{interval} | {gain} | {verdict + partial} | {own} |")
    return lines + [""]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=("run", "report"))
    p.add_argument("--task", action="append")
    p.add_argument("--encoder", action="append")
    p.add_argument("--seed", action="append", type=int)
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "linformer"))
    args = p.parse_args(argv)
    log = lambda message: print(f"finetune_experiments: {message}", flush=True)  # noqa: E731
    if args.command == "run":
        run(args, log)
    report(log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
