#!/usr/bin/env python3
"""Runs the pretraining experiments of a manifest and makes their figures and tables.

A manifest (recipes/brown/experiments.toml) names experiments; each lists recipes, paths
relative to the manifest, that are compared together. A run is named after its recipe file
(names are unique across the manifest) and trained into RUNS/<name>; its results go into
RESULTS/runs/<name>/ (metrics.csv, metrics.jsonl, the resolved recipe.toml and run.json:
commit, machine, threads, wall time, CPU time, peak memory, final validation, test perplexity at
the best checkpoint) and each experiment's figure and table into RESULTS/<experiment>/.

  experiments.py run    [EXPERIMENT ...]   train what has no results yet, then report
  experiments.py report [EXPERIMENT ...]   figures and tables from the results' metrics only
  experiments.py list                      experiments, their runs and which are done
  experiments.py word-order [EXPERIMENT ...]  word-order sensitivity of finished runs whose best
                                           checkpoint is still in RUNS, then report
  experiments.py same-targets [EXPERIMENT ...]  validation perplexity of the same finished runs on
                                           masked tokens that do not depend on n (eval
                                           --same-targets), then report
  experiments.py verify RUN ... [--updates N]  train a published run again from its stored recipe
                                           up to update N (default: its first validation) and
                                           compare every logged row with the published curve

Common options: --manifest, --runs-dir, --results, --binary. `run --force` trains again runs
whose results exist (the old run directory is removed first). A run whose recipe changed
since its results were made is refused unless --force: its results would no longer match.
Runs stop on updates or tokens (the recipes say), so a busy machine changes only wall time.
"""
import argparse
import contextlib
import datetime
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


sys.path.insert(0, HERE)
import verdicts  # noqa: E402  (the claims' reading and judging)
from verdicts import ExperimentError, read_claim  # noqa: E402


# ---------------------------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------------------------


def read_manifest(path):
    """{experiment: {"title": str, "recipes": [abs path], "names": [run name]}}, in file order."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ExperimentError(f"{path}: no such manifest")
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{path}: not TOML: {e}")
    base = os.path.dirname(os.path.abspath(path))
    experiments, owner = {}, {}
    for name, table in data.items():
        if not isinstance(table, dict) or not isinstance(table.get("recipes"), list) or not table["recipes"]:
            raise ExperimentError(f"{path}: [{name}] needs a non-empty list 'recipes'")
        unknown = set(table) - {"title", "recipes", "note", "claim", "seed_spread"}
        if unknown:
            raise ExperimentError(f"{path}: [{name}] has unknown keys {sorted(unknown)}")
        if not isinstance(table.get("seed_spread", False), bool):
            raise ExperimentError(f"{path}: [{name}] seed_spread must be true or false")
        recipes, names = [], []
        for r in table["recipes"]:
            recipe = os.path.normpath(os.path.join(base, r))
            if not os.path.isfile(recipe):
                raise ExperimentError(f"{path}: [{name}] recipe '{r}' not found ({recipe})")
            run = os.path.splitext(os.path.basename(recipe))[0]
            if owner.get(run, recipe) != recipe:
                raise ExperimentError(f"{path}: run name '{run}' is used by two recipes: {owner[run]} and {recipe}")
            owner[run] = recipe
            recipes.append(recipe)
            names.append(run)
        experiments[name] = {"title": table.get("title", name), "note": table.get("note", ""),
                             "recipes": recipes, "names": names,
                             "claim": read_claim(path, name, table.get("claim"), base, names),
                             "seed_spread": table.get("seed_spread", False)}
    verdicts.check_noise_references(path, experiments)
    return experiments


def select(experiments, wanted, manifest):
    for w in wanted:
        if w not in experiments:
            raise ExperimentError(f"no experiment '{w}' in {manifest}; there are: {', '.join(experiments)}")
    return {k: v for k, v in experiments.items() if not wanted or k in wanted}


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def machine_description(binary):
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    commit = re.search(r"\(git ([0-9a-f]+(?:-dirty)?|unknown)", version)  # -dirty: built with uncommitted changes
    isa = re.search(r"CPU ISA used by oneDNN: (\S+)", version)
    # The threads a run started from here gets (OMP_NUM_THREADS passes on to it): wall times at one
    # and at two threads are not comparable, so each session names its own.
    threads = re.search(r"OpenMP threads available: (\d+)", version)
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    kind = "avx512_bf16" if "avx512_bf16" in flags else "avx512" if "avx512f" in flags else \
        "avx2" if "avx2" in flags else "other"
    return {"commit": commit.group(1) if commit else "unknown", "cpu": model, "cpus": os.cpu_count(),
            "kind": kind, "onednn_isa": isa.group(1) if isa else "unknown", "host": platform.node(),
            "threads": int(threads.group(1)) if threads else None}


def resolved_recipe(binary, recipe):
    r = subprocess.run([binary, "train", "--recipe", recipe, "--dump-recipe"], capture_output=True, text=True)
    if r.returncode != 0:
        raise ExperimentError(f"{recipe}: the recipe does not load:\n{r.stdout}{r.stderr}")
    return r.stdout


def without_name(recipe_text):
    # The run name follows the file name (or --run-dir); the rest must match.
    return "\n".join(line for line in recipe_text.splitlines() if not line.startswith("name = "))


def file_digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def newest_state(run_dir):
    checkpoints = sorted(d for d in os.listdir(os.path.join(run_dir, "checkpoints")) if d.startswith("checkpoint_")
                         and os.path.exists(os.path.join(run_dir, "checkpoints", d, "DONE")))
    if not checkpoints:
        raise ExperimentError(f"{run_dir}: no complete checkpoint")
    with open(os.path.join(run_dir, "checkpoints", checkpoints[-1], "state.json")) as f:
        return json.load(f)["state"]


@contextlib.contextmanager
def results_lock(results, log):
    """Holds RESULTS for this process alone: two lanes of run_experiments.sh share it, and one
    writing a run's files or the READMEs while the other reads them would judge, or publish,
    half-written state. A lock on the folder itself (flock: released if the process dies)."""
    os.makedirs(results, exist_ok=True)
    fd = os.open(results, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for {results}: another run_experiments.sh is writing it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def run_one(name, recipe, args, machine, log):
    results = os.path.join(args.results, "runs", name)
    run_dir = os.path.join(args.runs_dir, name)
    resolved = resolved_recipe(args.binary, recipe)
    if os.path.exists(os.path.join(results, "run.json")) and not args.force:
        # The stored recipe resolved again by this binary: options added to the schema since then
        # appear with their defaults on both sides, so only a real change of the recipe differs.
        stored = resolved_recipe(args.binary, os.path.join(results, "recipe.toml"))
        if without_name(stored) != without_name(resolved):
            raise ExperimentError(f"{name}: {recipe} changed since {results} was made; rerun it with --force")
        log(f"{name}: up to date ({results})")
        return
    if args.force and os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    log(f"{name}: training {os.path.relpath(recipe, ROOT)} into {run_dir}")
    subprocess.run([args.binary, "prepare", "--recipe", recipe], check=True, stdout=subprocess.DEVNULL)
    os.makedirs(run_dir, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    time_file = os.path.join(run_dir, "session.time")
    metrics_before = file_digest(os.path.join(run_dir, "metrics.jsonl"))
    train = subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", "-o", time_file, args.binary, "train", "--recipe", recipe,
                            "--run-dir", run_dir, "--resume", "auto"])
    with open(time_file) as f:
        wall, rss_kb, user, system = f.read().split()[-4:]
    # A session that trained (a finished run resumed changes nothing and is not one). Its CPU
    # seconds over its wall seconds show how much of its threads' time it really got.
    if train.returncode != 0 or file_digest(os.path.join(run_dir, "metrics.jsonl")) != metrics_before:
        with open(os.path.join(run_dir, "sessions.jsonl"), "a") as f:
            f.write(json.dumps({"started": started, "wall_seconds": float(wall), "peak_rss_mb": int(rss_kb) / 1024,
                                "cpu_seconds": float(user) + float(system), "exit_code": train.returncode,
                                "machine": machine}) + "\n")
    if train.returncode != 0:
        raise ExperimentError(f"{name}: linformer train exited with {train.returncode} (log: {run_dir}/train.log)")

    state = newest_state(run_dir)
    best = os.path.join(run_dir, "checkpoints", f"checkpoint_{state['best_update']:08d}")
    test_json = os.path.join(run_dir, "test.json")
    subprocess.run([args.binary, "eval", "--checkpoint", best, "--split", "test", "--json", test_json], check=True,
                   stdout=subprocess.DEVNULL)
    with open(test_json) as f:
        test = json.load(f)
    sessions_file = os.path.join(run_dir, "sessions.jsonl")
    sessions = read_jsonl(sessions_file) if os.path.exists(sessions_file) else []
    finished_before = train.returncode == 0 and file_digest(os.path.join(run_dir, "metrics.jsonl")) == metrics_before
    if finished_before and (not sessions or sessions[-1]["exit_code"] != 0):
        sessions.append(record_untimed_session(run_dir, machine, log, name))
    if not sessions or sessions[-1]["exit_code"] != 0:
        raise ExperimentError(f"{name}: {run_dir}/sessions.jsonl does not end with a successful training session")

    with results_lock(args.results, log):
        os.makedirs(results, exist_ok=True)
        for file in ("metrics.csv", "metrics.jsonl", "recipe.toml"):
            shutil.copyfile(os.path.join(run_dir, file), os.path.join(results, file))
        run = {"name": name, "recipe": os.path.relpath(recipe, ROOT), "sessions": sessions,
               "best_update": state["best_update"],
               "test": {k: test.get(k) for k in ("perplexity", "unigram_perplexity", "ratio_to_unigram", "accuracy",
                                                  "masked", "loss")}}
        with open(os.path.join(results, "run.json"), "w") as f:
            json.dump(run, f, indent=2)
            f.write("\n")
        measure_word_order(name, best, args, log)
        measure_same_targets(name, best, args, log)
    log(f"{name}: done, results in {results}")


def record_untimed_session(run_dir, machine, log, name):
    """A run finished by `linformer train --run-dir` directly (or by a session whose driver was
    killed) has no timed session here: record one from its own files, its start from train.log's
    first line and its wall time from the metrics' elapsed seconds (summed over resumes by the
    trainer), but no peak memory: nothing measured it. The machine is this one, with the binary
    that publishes the run; its threads are the ones train.log names (None if its sessions differ)."""
    started = None
    with open(os.path.join(run_dir, "train.log")) as f:
        log_text = f.read()
    stamp = re.match(r"\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)", log_text)
    if stamp:  # the trainer's log stamps local time
        local = datetime.datetime.strptime(f"{stamp.group(1)} {stamp.group(2)}", "%Y-%m-%d %H:%M:%S")
        started = local.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")
    elapsed = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))[-1]["elapsed_seconds"]
    machine = dict(machine, threads=threads_that_trained(log_text))
    session = {"started": started, "wall_seconds": elapsed, "peak_rss_mb": None, "exit_code": 0, "machine": machine,
               "untimed": "trained outside scripts/run_experiments.sh: wall time from the metrics, peak memory not measured"}
    with open(os.path.join(run_dir, "sessions.jsonl"), "a") as f:
        f.write(json.dumps(session) + "\n")
    log(f"{name}: trained outside this script; recorded as one untimed session (no peak memory)")
    return session


def threads_that_trained(log_text):
    """The threads train.log's sessions that trained ran at (each session opens with its run
    directory and threads; one resumed after the end logs no update): one number, or None if
    they differ or none is named."""
    sessions = re.split(r"(?=\[[^]]*\] \[info\] run directory )", log_text)
    threads = {int(m.group(1)) for part in sessions if re.search(r"\] update \d+/", part)
               for m in [re.search(r"resolved recipe in recipe\.toml\), (\d+) threads?\b", part)] if m}
    return threads.pop() if len(threads) == 1 else None


def eval_flags(binary):
    """The eval flags of `binary` this module uses (older binaries lack some)."""
    r = subprocess.run([binary, "eval", "--help"], capture_output=True, text=True)
    return {flag for flag in ("--shuffle-words", "--by-context", "--same-targets") if flag in r.stdout}


def supports_word_order(binary):
    return "--shuffle-words" in eval_flags(binary)


def measure_word_order(name, checkpoint, args, log, retrained=None):
    """RESULTS/runs/<name>/word_order.json: the checkpoint's test perplexity with the words of each
    sentence shuffled (`eval --shuffle-words`, the same masked targets) against the ordered text's.
    A ratio near 1 says the model has learned which words occur together but not their order.
    With `eval --by-context`, also the scores of the targets whose word is elsewhere in their block
    (copyable) and of the others."""
    flags = eval_flags(args.binary)
    if "--shuffle-words" not in flags:
        log(f"{name}: word order not measured ({args.binary} predates eval --shuffle-words; "
            "run `experiments.py word-order` with a newer binary)")
        return
    out = os.path.join(checkpoint, "..", "..", "word_order_eval.json")
    subprocess.run([args.binary, "eval", "--checkpoint", checkpoint, "--split", "test", "--shuffle-words",
                    *(["--by-context"] if "--by-context" in flags else []), "--json", out],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        e = json.load(f)
    record = {"checkpoint": os.path.basename(os.path.normpath(checkpoint)), "perplexity": e["perplexity"],
              "shuffled_perplexity": e["shuffled_words"]["perplexity"], "ratio": e["word_order_ratio"],
              "accuracy": e["accuracy"], "shuffled_accuracy": e["shuffled_words"]["accuracy"],
              "masked": e["masked"], "eval_machine": machine_description(args.binary)}
    if retrained:
        record["retrained"] = retrained
    if "by_context" in e:
        record["by_context"] = e["by_context"]
    with open(os.path.join(args.results, "runs", name, "word_order.json"), "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    log(f"{name}: shuffled words {record['ratio']:.3f} × the ordered test perplexity")


def measure_same_targets(name, checkpoint, args, log, retrained=None):
    """RESULTS/runs/<name>/same_targets.json: the checkpoint's validation perplexity with each token's
    mask drawn from its place in the split's stream (`eval --same-targets`), so checkpoints of any n
    are scored on the same masked tokens; equal targets_digest values say they were."""
    if "--same-targets" not in eval_flags(args.binary):
        log(f"{name}: same-target score not measured ({args.binary} predates eval --same-targets)")
        return
    out = os.path.join(checkpoint, "..", "..", "same_targets_eval.json")
    subprocess.run([args.binary, "eval", "--checkpoint", checkpoint, "--split", "valid", "--same-targets",
                    "--json", out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        e = json.load(f)
    record = {"checkpoint": os.path.basename(os.path.normpath(checkpoint)), "split": "valid",
              "perplexity": e["perplexity"], "unigram_perplexity": e.get("unigram_perplexity"),
              "accuracy": e["accuracy"], "masked": e["masked"], "targets_digest": e["targets_digest"],
              "eval_machine": machine_description(args.binary)}
    if retrained:
        record["retrained"] = retrained
    with open(os.path.join(args.results, "runs", name, "same_targets.json"), "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    log(f"{name}: {record['perplexity']:.1f} on the same validation targets (digest {record['targets_digest']})")


def valid_ppl_at(metrics_jsonl, update):
    """The validation perplexity a run's metrics.jsonl logged at `update`; None without one."""
    if not os.path.exists(metrics_jsonl):
        return None
    return next((r["perplexity"] for r in read_jsonl(metrics_jsonl) if r.get("kind") == "valid"
                 and r.get("update") == update), None)


def retraining_of(name, folder, best, args):
    """None when RUNS/<name> holds the published run (the same validation perplexity at its best
    update), else what tells them apart: a run trained again (another machine, binary or thread
    count, e.g. by finetune_experiments.py), whose weights are close to the published ones but not
    them, so what is measured on it says so."""
    published = valid_ppl_at(os.path.join(folder, "metrics.jsonl"), best)
    again = valid_ppl_at(os.path.join(args.runs_dir, name, "metrics.jsonl"), best)
    if again is not None and again == published:
        return None
    return {"published_valid_ppl": published, "checkpoint_valid_ppl": again}


def measure_done_runs(experiments, args, log, file, measure, current=lambda record: True):
    """`word-order`, `same-targets`: measures every finished run whose best checkpoint is still in RUNS
    and whose RESULTS/runs/<run>/FILE is missing or not current (unless --force). A checkpoint of a
    run trained again is measured too, its record marked `retrained` (retraining_of)."""
    for name, folder in manifest_runs(experiments, args):
        path = os.path.join(folder, file)
        if os.path.exists(path) and not args.force:
            with open(path) as f:
                if current(json.load(f)):
                    continue
        with open(os.path.join(folder, "run.json")) as f:
            best = json.load(f)["best_update"]
        checkpoint = os.path.join(args.runs_dir, name, "checkpoints", f"checkpoint_{best:08d}")
        if not os.path.exists(os.path.join(checkpoint, "DONE")):
            log(f"{name}: no checkpoint {checkpoint} (re-create the run from its recipe to measure it)")
            continue
        retrained = retraining_of(name, folder, best, args)
        if retrained:
            log(f"{name}: {checkpoint} is of a run trained again (validation perplexity "
                f"{retrained['checkpoint_valid_ppl']} at update {best}, published {retrained['published_valid_ppl']}): "
                "measured and marked as such")
        measure(name, checkpoint, args, log, retrained)


def verify_run(name, args, log):
    """`verify`: trains a published run again from its stored recipe up to --updates (default: its
    first validation) in RUNS/verify/<name> and compares every logged row with the published one.
    The stop is set through train.max_tokens (the tokens the published run had seen by then), so the
    learning-rate schedule is the published one. Returns the largest relative perplexity difference."""
    folder = os.path.join(args.results, "runs", name)
    recipe = os.path.join(folder, "recipe.toml")
    if not all(os.path.exists(os.path.join(folder, f)) for f in ("metrics.jsonl", "recipe.toml", "run.json")):
        raise ExperimentError(f"{name}: no published run in {folder} (metrics.jsonl, recipe.toml and run.json)")
    published = read_jsonl(os.path.join(folder, "metrics.jsonl"))
    valid_updates = [r["update"] for r in published if r["kind"] == "valid"]
    stop = args.updates or (valid_updates[0] if valid_updates else 0)
    at_stop = [r for r in published if r["update"] == stop]
    if not at_stop:
        raise ExperimentError(f"{name}: --updates {stop}: the published run logged no row at that update "
                              f"(its validations: {', '.join(map(str, valid_updates))})")
    scratch = os.path.join(args.runs_dir, "verify", name)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    with open(os.path.join(folder, "run.json")) as f:
        machine = json.load(f)["sessions"][0]["machine"]
    log(f"{name}: training {stop} updates again from {os.path.relpath(recipe, ROOT)} into {scratch} "
        f"(published on {machine['cpu']}, oneDNN ISA {machine['onednn_isa']}, commit {machine['commit']}; "
        f"here: {machine_description(args.binary)['onednn_isa']})")
    for command in (["prepare", "--recipe", recipe],
                    ["train", "--recipe", recipe, "--run-dir", scratch, "--set", f"train.max_tokens={at_stop[0]['tokens']}"]):
        step = subprocess.run([args.binary, *command], capture_output=True, text=True)
        if step.returncode != 0:
            raise ExperimentError(f"{name}: linformer {command[0]} exited with {step.returncode}:\n{step.stderr[-2000:]}")
    again = {(r["kind"], r["update"]): r for r in read_jsonl(os.path.join(scratch, "metrics.jsonl"))}
    worst, compared = 0.0, 0
    for row in published:
        if row["update"] > stop or row["kind"] not in ("train", "valid"):
            continue
        twin = again.get((row["kind"], row["update"]))
        if twin is None:
            raise ExperimentError(f"{name}: the run again logged no {row['kind']} row at update {row['update']}")
        difference = abs(math.exp(twin["loss"] - row["loss"]) - 1)  # relative, in perplexity
        compared += 1
        if row["kind"] == "valid":
            log(f"{name}: update {row['update']}: validation perplexity {row['perplexity']:.2f} published, "
                f"{twin['perplexity']:.2f} again ({difference:.2e} apart)")
        if difference > worst:
            worst, worst_row = difference, row
    verdict = "identical" if worst == 0 else f"at most {worst:.2e} apart (update {worst_row['update']}, {worst_row['kind']})"
    log(f"{name}: {compared} rows compared: {verdict}; tolerance {args.tolerance:g}")
    if worst > args.tolerance:
        raise ExperimentError(f"{name}: the run again differs from the published curve by {worst:.2%} in perplexity "
                              f"at update {worst_row['update']} ({worst_row['kind']}), more than {args.tolerance:.2%}")
    shutil.rmtree(scratch)
    return worst


# ---------------------------------------------------------------------------------------------
# Reporting: everything below reads only RESULTS
# ---------------------------------------------------------------------------------------------


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def summarize(results, name):
    """One table row, computed from a run's metrics.jsonl and run.json."""
    folder = os.path.join(results, "runs", name)
    rows = read_jsonl(os.path.join(folder, "metrics.jsonl"))
    with open(os.path.join(folder, "run.json")) as f:
        run = json.load(f)
    valid = [r for r in rows if r["kind"] == "valid"]
    if not valid:
        raise ExperimentError(f"{folder}: no validation rows")
    last = valid[-1]
    best = min(valid, key=lambda r: r["loss"])
    sessions = run["sessions"]
    unigram = last.get("unigram_perplexity")
    word_order = {}
    if os.path.exists(os.path.join(folder, "word_order.json")):
        with open(os.path.join(folder, "word_order.json")) as f:
            word_order = json.load(f)
    return {
        "name": name,
        "updates": last["update"],
        "tokens": last["tokens"],
        "valid_ppl": last["perplexity"],
        "valid_unigram": unigram,
        "valid_ratio": last["perplexity"] / unigram if unigram else None,
        "best_valid_ppl": best["perplexity"],
        "best_update": best["update"],
        "accuracy": last["accuracy"],
        "test_ppl": run["test"]["perplexity"],
        "word_order_ratio": word_order.get("ratio"),
        "order_onset": order_onset(valid),
        "test_ratio": run["test"].get("ratio_to_unigram"),
        "tokens_per_second": last["tokens"] / last["elapsed_seconds"] if last["elapsed_seconds"] else None,
        "median_interval_tokens_per_second": median([r["tokens_per_second"] for r in rows
                                                     if r["kind"] == "train" and r.get("tokens_per_second")]),
        "within_minutes": within_minutes(rows, BUDGET_MINUTES),
        "wall_minutes": last["elapsed_seconds"] / 60,
        "peak_rss_mb": max((s["peak_rss_mb"] for s in sessions if s["peak_rss_mb"] is not None), default=None),
        "machine": "; ".join(sorted({machine_text(s["machine"]) for s in sessions})),
    }


def machine_text(machine):
    """One session's machine as the tables name it; the threads only where the session recorded them."""
    threads = machine.get("threads")
    return (f"{machine['kind']} ({machine['cpu']}), commit {machine['commit']}"
            + (f", {threads} thread{'s' if threads != 1 else ''}" if threads else ""))


BUDGET_MINUTES = (10, 15, 30)


def within_minutes(rows, budgets):
    """{minutes: [perplexity, ratio to unigram] of the last validation within that much training at the
    run's median interval speed}, None where the run ended sooner. The median speed, not the wall clock,
    so that a machine busy with other work does not move the answer."""
    speed = median([r["tokens_per_second"] for r in rows if r["kind"] == "train" and r.get("tokens_per_second")])
    valid = [r for r in rows if r["kind"] == "valid"]
    out = {}
    for minutes in budgets:
        tokens = speed * 60 * minutes if speed else 0
        reached = [r for r in valid if r["tokens"] <= tokens]
        if not reached or tokens > valid[-1]["tokens"] * 1.02:
            out[str(minutes)] = None
            continue
        r = reached[-1]
        unigram = r.get("unigram_perplexity")
        out[str(minutes)] = [r["perplexity"], r["perplexity"] / unigram if unigram else None]
    return out


def budget_cell(value):
    return "–" if value is None else f"{fmt(value[0])} ({fmt(value[1], 3)})"


def median(values):
    values = sorted(values)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def fmt(value, digits=1):
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


TABLE_HEADER = ("| run | updates | tokens (M) | valid ppl | × unigram | best valid ppl (update) | test ppl at best | "
                "test × unigram | words shuffled × | order from (update) | masked acc. | tokens/s | median tokens/s | "
                "peak RSS (MB) | wall (min) |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")

# A validation on shuffled words (validation.shuffle_words) at least this much worse than on the
# ordered text says the model has started to use word order: bag-of-words runs stay within
# 0.999–1.032 of it (results/brown/README.md, "Word order").
ORDER_ONSET_RATIO = 1.10


def order_onset(valid_rows):
    """The first validation update whose shuffled-words perplexity is ORDER_ONSET_RATIO × the ordered
    text's or more; "never" when every validation measured it and none is; None when none measured it."""
    measured = [r for r in valid_rows if r.get("shuffled_perplexity")]
    if not measured:
        return None
    onset = next((r["update"] for r in measured if r["shuffled_perplexity"] >= ORDER_ONSET_RATIO * r["perplexity"]), None)
    return onset if onset is not None else "never"


def table_row(s):
    return (f"| {s['name']} | {s['updates']} | {fmt(s['tokens'] / 1e6, 2)} | {fmt(s['valid_ppl'])} | "
            f"{fmt(s['valid_ratio'], 3)} | {fmt(s['best_valid_ppl'])} ({s['best_update']}) | {fmt(s['test_ppl'])} | "
            f"{fmt(s['test_ratio'], 3)} | {fmt(s['word_order_ratio'], 3)} | {fmt(s.get('order_onset'), 0)} | "
            f"{fmt(s['accuracy'], 3)} | {fmt(s['tokens_per_second'], 0)} | "
            f"{fmt(s['median_interval_tokens_per_second'], 0)} | "
            f"{fmt(s['peak_rss_mb'], 0)} | {fmt(s['wall_minutes'])} |\n")


def report(experiments, args, log, manifest=None):
    """Each experiment's README, table.json and figure; claims are judged with every seed of the
    manifest (`manifest`, by default the experiments given)."""
    manifest = manifest or experiments
    all_runs = list(dict.fromkeys(r for e in manifest.values() for r in e["names"]))
    for experiment, e in experiments.items():
        done = [n for n in e["names"] if os.path.exists(os.path.join(args.results, "runs", n, "run.json"))]
        missing = [n for n in e["names"] if n not in done]
        if not done:
            log(f"{experiment}: no finished runs yet")
            continue
        out = os.path.join(args.results, experiment)
        os.makedirs(out, exist_ok=True)
        summaries = [summarize(args.results, n) for n in done]
        subprocess.run([sys.executable, os.path.join(HERE, "plot_curves.py"),
                        *[os.path.join(args.results, "runs", n) for n in done], "--out",
                        os.path.join(out, "curves"), "--title", e["title"]], check=True, stdout=subprocess.DEVNULL)
        machines = sorted({s["machine"] for s in summaries})
        text = (f"# {e['title']}\n\n"
                + (f"{e['note']}\n\n" if e["note"] else "")
                + "![validation perplexity](curves.png)\n\n"
                + "Generated by `scripts/run_experiments.sh` from the runs' metrics files (`../runs/<run>/`); "
                  "do not edit. Validation perplexity is the last validation's; \"× unigram\" divides it by the unigram "
                  "baseline's perplexity on the same masked tokens; test perplexity is at the checkpoint with the best "
                  "validation loss; \"words shuffled ×\" is that checkpoint's test perplexity with the words of each "
                  "sentence shuffled (the same masked targets, `linformer eval --shuffle-words`) over the ordered "
                  "text's: near 1, the model knows which words occur together but not their order (– where the "
                  "checkpoint was gone before the measurement existed); \"order from\" is the first validation whose "
                  f"shuffled-words perplexity is {ORDER_ONSET_RATIO:.2f} × the ordered text's or more (runs validated "
                  "with `validation.shuffle_words`; \"never\": none was; –: not measured); tokens/s and wall time include validation and "
                  "checkpoints; the median tokens/s of the logged training intervals is the least disturbed by "
                  "anything else running on the machine.\n\n"
                + TABLE_HEADER + "".join(table_row(s) for s in summaries)
                + budget_table(summaries)
                + (("\n## The paper's claim\n\nJudged against the seed noise from the final validation "
                    "perplexities of every seed, the tolerance fixed in recipes/brown/experiments.toml before the runs "
                    "(how: `scripts/verdicts.py`):\n\n" + verdicts.VERDICT_HEADER
                    + verdicts.claim_rows(verdicts.claim_verdict(experiment, manifest, all_runs, args.results), link=False))
                   if e["claim"] else "")
                + ("\nNot run yet: " + ", ".join(missing) + "\n" if missing else "")
                + "\nMachine: " + " / ".join(machines) + "\n")
        with open(os.path.join(out, "README.md"), "w") as f:
            f.write(text)
        with open(os.path.join(out, "table.json"), "w") as f:
            json.dump(summaries, f, indent=2)
            f.write("\n")
        log(f"{experiment}: {len(done)} of {len(e['names'])} runs in {out}/README.md and curves.png/svg")


def with_dependent_claims(manifest, experiments):
    """The experiments given and, in manifest order, every experiment whose claim judges a model of
    theirs or borrows the noise of one (its `noise`, `same_targets`): a seed of a model moves those
    verdicts, so their READMEs' claim tables are made again with the experiments'."""
    models = {verdicts.model_of(n) for e in experiments.values() for n in e["names"]}

    def depends(e):
        claim = e["claim"]
        if not claim:
            return False
        lenders = [n for key in ("noise", "same_targets") if key in claim for n in manifest[claim[key]]["names"]]
        return any(verdicts.model_of(n) in models for n in verdicts.claim_runs(claim) + lenders)

    return {name: e for name, e in manifest.items() if name in experiments or depends(e)}


def write_verdicts(experiments, args, log):
    """RESULTS/README.md: one table of every claim judged against the seed noise, and the seed-to-seed
    spreads (scripts/verdicts.py); RESULTS/verdicts.json; the same table between the markers of the
    repository's README.md when the results are the repository's."""
    found = verdicts.build(experiments, args.results)
    with open(os.path.join(args.results, "README.md"), "w") as f:
        f.write("# Pretraining on the Brown corpus: the paper's claims, tested\n\n"
                "Generated by `scripts/run_experiments.sh` (do not edit). Each experiment's folder has its figure "
                "(validation perplexity against updates, tokens and wall time) and its table; `runs/` has every run's "
                "metrics, resolved recipe and record (commit, machine, wall time, peak memory). The verdicts judge each "
                "claim against the seed noise pooled over its models, and in the last column again with each model's own "
                "seed noise, a Welch interval: a check added after the pooled verdicts were known (how: "
                "`scripts/verdicts.py`; every number: `verdicts.json`).\n\n"
                + verdicts.table(found) + word_order_table(manifest_runs(experiments, args))
                + same_targets_table(manifest_runs(experiments, args)))
    repository = os.path.abspath(args.results) == os.path.join(ROOT, "results", "brown")
    if verdicts.write(found, args.results, os.path.join(ROOT, "README.md") if repository else None):
        raise ExperimentError("the verdicts were not written (above: why)")
    log(f"verdicts in {args.results}/README.md and verdicts.json")


def manifest_runs(experiments, args):
    """Every run of the experiments that has results, once, in manifest order."""
    names = []
    for e in experiments.values():
        names += [n for n in e["names"] if n not in names
                  and os.path.exists(os.path.join(args.results, "runs", n, "run.json"))]
    return [(n, os.path.join(args.results, "runs", n)) for n in names]


def word_order_table(runs):
    """How much each measured run uses word order (RESULTS/runs/<run>/word_order.json)."""
    measured = []
    for name, folder in runs:
        path = os.path.join(folder, "word_order.json")
        if os.path.exists(path):
            with open(path) as f:
                measured.append((name, json.load(f)))
    if not measured:
        return ""
    rows = "".join(f"| {name} | {checkpoint_cell(w)} | {fmt(w['perplexity'])} | {fmt(w['shuffled_perplexity'])} | "
                   f"{fmt(w['ratio'], 3)} | {fmt(w['accuracy'], 3)} | {fmt(w['shuffled_accuracy'], 3)} |\n"
                   for name, w in measured)
    return ("\n## Word order\n\nTest perplexity of each run's best checkpoint with the words of every sentence "
            "shuffled (`linformer eval --shuffle-words`: the same masked targets, carried with their words) against "
            "the ordered text's. A ratio near 1 means the model predicts from which words occur together, not from "
            "their order; a model that reads order scores far worse on shuffled text (the test "
            "`learning.word_order`: 800× on a corpus of word pairs). Runs whose checkpoints were gone before this "
            "measurement existed are missing" + RETRAINED_NOTE + ".\n\n"
            "| run | checkpoint | test ppl | words shuffled | ratio | masked acc. | shuffled acc. |\n"
            "|---|---|---|---|---|---|---|\n" + rows + context_table(measured))


def same_targets_table(runs):
    """Each measured run's validation score on targets that do not depend on n
    (RESULTS/runs/<run>/same_targets.json), by digest: runs of one digest scored the same tokens."""
    measured = []
    for name, folder in runs:
        path = os.path.join(folder, "same_targets.json")
        if os.path.exists(path):
            with open(path) as f:
                record = json.load(f)
            with open(os.path.join(folder, "recipe.toml"), "rb") as f:
                record["seq_len"] = tomllib.load(f)["data"]["seq_len"]
            measured.append((name, record))
    if not measured:
        return ""
    measured.sort(key=lambda m: (m[1]["targets_digest"], m[1]["seq_len"], m[0]))
    rows = "".join(f"| {name} | {m['seq_len']} | {checkpoint_cell(m)} | {m['masked']:,} | `{m['targets_digest']}` | "
                   f"{fmt(m['perplexity'])} | {fmt(m.get('unigram_perplexity'))} | "
                   f"{fmt(m['perplexity'] / m['unigram_perplexity'], 3) if m.get('unigram_perplexity') else '–'} | "
                   f"{fmt(m['accuracy'], 3)} |\n" for name, m in measured)
    return ("\n## The same targets at every n\n\nValidation perplexity of each run's best checkpoint with every "
            "token's mask drawn from its place in the split's token stream (`linformer eval --same-targets`), not "
            "from its place in a block of n: runs with one digest scored exactly the same masked tokens, so their "
            "perplexities compare across n (the validations of the training logs do not). Runs whose checkpoints "
            "were gone before this measurement existed are missing" + RETRAINED_NOTE + ".\n\n"
            "| run | n | checkpoint | masked | targets digest | valid ppl | unigram | × unigram | masked acc. |\n"
            "|---|---|---|---|---|---|---|---|---|\n" + rows)


RETRAINED_NOTE = ("; \"retrained\" marks a checkpoint of the run trained again from its recipe (another machine, "
                  "binary or thread count): close to the published weights, not them, with the validation perplexity "
                  "it logged at the best update beside the published run's")


def checkpoint_cell(record):
    """The measured checkpoint, marked when it is of a run trained again (retraining_of)."""
    r = record.get("retrained")
    if not r:
        return record["checkpoint"]
    return (f"{record['checkpoint']} (retrained: {fmt(r.get('checkpoint_valid_ppl'))} against "
            f"{fmt(r.get('published_valid_ppl'))})")


def context_table(measured):
    """Copying from context: the same test evaluation's targets whose word occurs elsewhere in their
    block, and the others; measured = [(run, its word_order.json)], the by_context part."""
    rows = ""
    for name, w in measured:
        if "by_context" not in w:
            continue
        c, o = w["by_context"]["in_context"], w["by_context"]["not_in_context"]
        share = c["masked"] / (c["masked"] + o["masked"])
        rows += (f"| {name} | {share:.1%} | {fmt(c['perplexity'])} | {fmt(c.get('unigram_perplexity'))} | "
                 f"{fmt(c['perplexity'] / c['unigram_perplexity'], 3) if 'unigram_perplexity' in c else '–'} | "
                 f"{fmt(o['perplexity'])} | {fmt(o.get('unigram_perplexity'))} | "
                 f"{fmt(o['perplexity'] / o['unigram_perplexity'], 3) if 'unigram_perplexity' in o else '–'} |\n")
    if not rows:
        return ""
    return ("\n## Copying from context\n\nThe same test evaluation (`linformer eval --by-context`), its masked targets "
            "in two groups: those whose word occurs elsewhere in their block of n tokens, which a model can copy if it "
            "can find them, and the others; perplexity and the unigram baseline's on each group. Full attention can "
            "look up any position; a Linformer sees keys and values only as k mixtures of positions.\n\n"
            "| run | targets in context | ppl in context | unigram | × unigram | ppl not in context | unigram | "
            "× unigram |\n|---|---|---|---|---|---|---|---|\n" + rows)


def budget_table(summaries):
    """What 10, 15 and 30 minutes of training reach; nothing when every run ended sooner."""
    if all(s["within_minutes"][str(m)] is None for s in summaries for m in BUDGET_MINUTES):
        return ""
    return ("\nValidation perplexity (× unigram) reached within "
            + ", ".join(str(m) for m in BUDGET_MINUTES)
            + " minutes of training at each run's median speed (the last validation within that many tokens; "
              "– where the run ended sooner; prepare, about 1.5 minutes, not included):\n\n"
            + "| run | " + " | ".join(f"{m} min" for m in BUDGET_MINUTES) + " |\n"
            + "|---|" + "---|" * len(BUDGET_MINUTES) + "\n"
            + "".join(f"| {s['name']} | " + " | ".join(budget_cell(s["within_minutes"][str(m)]) for m in BUDGET_MINUTES)
                      + " |\n" for s in summaries))


# ---------------------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "report", "list", "word-order", "same-targets", "verify"))
    parser.add_argument("experiments", nargs="*", help="experiment names (default: all); verify: run names")
    parser.add_argument("--manifest", default=os.path.join(ROOT, "recipes", "brown", "experiments.toml"))
    parser.add_argument("--runs-dir", default=os.path.join(ROOT, "runs", "experiments"))
    parser.add_argument("--results", default=os.path.join(ROOT, "results", "brown"))
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "linformer"))
    parser.add_argument("--force", action="store_true", help="train again runs that have results")
    parser.add_argument("--updates", type=int, default=0,
                        help="verify: train again up to this update (default: the run's first validation)")
    parser.add_argument("--tolerance", type=float, default=0.01,
                        help="verify: largest relative perplexity difference accepted (default 1%%)")
    parser.add_argument("--runs", nargs="+", metavar="RUN", default=[],
                        help="run: train only these runs of the selected experiments (to fit a session)")
    args = parser.parse_args(argv)

    def log(message):
        print(f"experiments: {message}", flush=True)

    try:
        if args.command == "verify":
            if not args.experiments:
                raise ExperimentError("verify: name the published runs to train again")
            for name in args.experiments:
                verify_run(name, args, log)
            return 0
        manifest = read_manifest(args.manifest)
        experiments = select(manifest, args.experiments, args.manifest)
        if args.command == "list":
            for name, e in experiments.items():
                done = [os.path.exists(os.path.join(args.results, "runs", n, "run.json")) for n in e["names"]]
                print(f"{name}: {e['title']} ({sum(done)} of {len(done)} done)")
                for n, d in zip(e["names"], done):
                    print(f"  {'done' if d else 'todo'}  {n}")
            return 0
        if args.command == "run":
            if not os.access(args.binary, os.X_OK):
                raise ExperimentError(f"{args.binary}: no linformer binary (build it with scripts/build.sh)")
            machine = machine_description(args.binary)
            known = {n for e in experiments.values() for n in e["names"]}
            for r in args.runs:
                if r not in known:
                    raise ExperimentError(f"--runs: no run '{r}' in the selected experiments")
            seen = set()
            for e in experiments.values():
                for name, recipe in zip(e["names"], e["recipes"]):
                    if name not in seen and (not args.runs or name in args.runs):
                        seen.add(name)
                        run_one(name, recipe, args, machine, log)
        with results_lock(args.results, log):
            if args.command == "word-order":
                # a measurement without the by-context scores this binary can add is not current
                by_context = "--by-context" in eval_flags(args.binary)
                measure_done_runs(experiments, args, log, "word_order.json", measure_word_order,
                                  lambda record: "by_context" in record or not by_context)
            if args.command == "same-targets":
                measure_done_runs(experiments, args, log, "same_targets.json", measure_same_targets)
            report(with_dependent_claims(manifest, experiments), args, log, manifest)
            write_verdicts(manifest, args, log)  # every experiment's claim, not only those just reported
    except ExperimentError as e:
        print(f"experiments: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"experiments: {' '.join(map(str, e.cmd))} exited with {e.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
