#!/usr/bin/env python3
"""The paper's claims judged against seed noise, from the committed results alone.

  verdicts.py [--manifest M] [--results R] [--readme README.md]   write R/verdicts.json and the
                                   verdict summary between the README's verdict markers
  verdicts.py --check [...]        exit 1 when the README's verdict block or R/verdicts.json is not
                                   what the results give, or R/README.md lacks the full table or
                                   an experiment's README its claim's rows (nothing is written)

`scripts/experiments.py` (run, report) writes the same after every report, and R/README.md: the
full table, a row per check with its interval, and the seed spreads. The README's summary has a
row per claim (its `label`, the experiment, the headline numbers, each check's outcome), at most
12 (claims still waiting for runs last) and every cell at most 200 characters, then the seed noise of each seed_spread experiment and
a link to the full table.

Models and seeds. A model is a run name without a `_seedN` suffix; its seeds are the manifest's runs
named MODEL or MODEL_seedN (any experiment of the manifest, seed recipes are listed in the `seeds_*`
experiments) that have results. A claim names a model by the recipe of its first seed and is judged
on every seed of it that has results; a model with none is "runs missing".

Statistics. Each seed contributes x = ln(final validation perplexity): perplexities of one recipe
vary by a factor (12.8%, 54.7%), so differences and noise are taken on the log scale and a
comparison is a ratio of geometric means. Per model: n, mean ± sd of the perplexities, and of x.
The noise is one standard deviation σ of x between seeds, pooled over every model of the claim that
has two seeds or more and over the models of the claim's `noise` experiment (a `seed_spread` one:
a model with one seed borrows the noise of that recipe family, and the table names it); df = the
pooled seeds less one per model. Without any seeds the outcome is "cannot tell at this noise".

Interval: a two-sided 95% Student t interval on the difference of two models' means,
  ln(A/B) ± t(0.975, df) · σ · sqrt(1/n_A + 1/n_B).
Not a bootstrap: with one to three seeds a bootstrap over seeds has at most ten distinct resamples,
none at all for one seed, and is narrower than the t interval by a factor sqrt((n-1)/n); the t
interval is exact for normal noise and uses the noise measured on the other models for a model
with one seed, which a bootstrap cannot. It assumes the models of a claim share one seed noise on
the log scale (the pooled σ; stated next to every verdict).

Each model's own noise. Seeds do not always bear that out (σ from under 1% to 27% between recipes),
so every check is judged a second time, where each of its models has two seeds or more, with each
model's own σ: a Welch interval, ln(A/B) ± t(0.975, ν) · sqrt(s_A²/n_A + s_B²/n_B), ν the
Welch–Satterthwaite df rounded down (wider, never narrower), the same outcome rules and band (a
tolerance in σ keeps the pooled σ's width). The full table gives it in its last column; the
summary names it where it differs. Added on 2026-11-30, after the pooled verdicts were known: a
check on them, not the declared method.

Outcomes (the old claims' meaning, judged against the noise; band = ±ln(1 + tolerance)):
  on_par   the interval of ln(on_par / baseline) inside the band: "agrees"; outside it (not touching):
           "disagrees"; straddling an edge: "cannot tell at this noise".
  at_most  one-sided (a goal such as "within 1.25x of the Transformer", where lower is as good):
           the interval of ln(at_most / baseline) at or below ln(1 + tolerance): agrees; above it
           (not touching): disagrees; straddling it: cannot tell.
  equal    every pair's interval inside the band: agrees; some pair's outside: disagrees; else
           cannot tell. The table shows the pair of the largest and smallest mean, and after it
           the pair that disagrees where that one does not (with each model's own noise a pair of
           quiet models can be outside the band while the widest, with a noisy one, straddles it).
  ordered  every step's interval of ln(next / previous) below 0: agrees; some step's above 0:
           disagrees; else cannot tell.
A tolerance is relative (0.02: 2%) or in units of the noise ("3 sd": the band is ±3σ); the table
gives both, the noise as exp(σ) − 1.

The same targets. Validations at different n mask different tokens, so a claim across n (Figure 3d)
compares perplexities of different targets. A claim with `same_targets = "<seed_spread experiment>"`
is judged a second time, the same way, on each run's validation perplexity with every token's mask
drawn from its place in the split (RESULTS/runs/<run>/same_targets.json, `linformer eval
--same-targets`, one set of targets whatever n): the seeds are the runs that have that score, and
the noise is pooled over them and that experiment's scored seeds. A score of a checkpoint trained
again from the run's recipe (marked `retrained`: another machine, binary or thread count) counts as
a draw of that recipe, which the table says.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
AGREES, DISAGREES, CANNOT_TELL, MISSING = "agrees", "disagrees", "cannot tell at this noise", "runs missing"


class ExperimentError(Exception):
    pass


# Student t, 0.975 quantile, by degrees of freedom (standard tables); beyond 30 the next lower
# listed df is used, which errs on the wide side.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df):
    return T975[max(d for d in T975 if d <= df)]


# ---------------------------------------------------------------------------------------------
# Claims in the manifest
# ---------------------------------------------------------------------------------------------

LABEL_MAX = 120  # a claim's label: the first cell of the README's summary row
CLAIM_KEYS = {"paper", "label", "tolerance", "baseline", "on_par", "at_most", "ordered", "equal", "noise",
              "same_targets"}
PAIRED = ("on_par", "at_most")  # a run judged against `baseline`
SEED_SUFFIX = re.compile(r"_seed\d+$")


def read_tolerance(where, value):
    """{"relative": 0.02} or {"sd": 3.0} from 0.02 or "3 sd"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return {"relative": float(value)}
    m = re.fullmatch(r"\s*([0-9.]+)\s*sd\s*", value) if isinstance(value, str) else None
    if m and float(m.group(1)) > 0:
        return {"sd": float(m.group(1))}
    raise ExperimentError(f"{where}: tolerance must be a relative number ≥ 0 (0.02) or a multiple of the seed "
                          f"noise (\"3 sd\"), not {value!r}")


def read_claim(path, experiment, claim, base, names):
    """The paper's claim an experiment tests, and how it is checked (all optional but `paper`):
    label: a short name of the claim for the README's summary (default: `paper`);
    baseline + on_par: on_par's perplexity within `tolerance` of baseline's; baseline + at_most:
    at_most's perplexity at most (1 + `tolerance`) times baseline's; ordered: perplexity
    falls along the list; equal: every pair within `tolerance`; noise: a seed_spread experiment
    whose seeds lend their noise to single-seed models; same_targets: the same checks again on
    the same-target scores, that seed_spread experiment lending the noise. Recipes become run names
    (the model's first seed); each must be one of the experiment's."""
    if claim is None:
        return None
    where = f"{path}: [{experiment}.claim]"
    if not isinstance(claim, dict) or not isinstance(claim.get("paper"), str):
        raise ExperimentError(f"{where} needs a string 'paper'")
    unknown = set(claim) - CLAIM_KEYS
    if unknown:
        raise ExperimentError(f"{where} has unknown keys {sorted(unknown)}")

    def run_of(recipe):
        run = os.path.splitext(os.path.basename(os.path.normpath(os.path.join(base, recipe))))[0]
        if run not in names:
            raise ExperimentError(f"{where}: '{recipe}' is not one of the experiment's recipes")
        return run

    out = {"paper": claim["paper"], "tolerance": read_tolerance(where, claim.get("tolerance", 0.02))}
    if "label" in claim:
        if not isinstance(claim["label"], str) or not 0 < len(claim["label"]) <= LABEL_MAX:
            raise ExperimentError(f"{where}: 'label' must be a string of 1 to {LABEL_MAX} characters")
        out["label"] = claim["label"]
    for key in ("baseline", *PAIRED):
        if key in claim:
            out[key] = run_of(claim[key])
    for key in ("ordered", "equal"):
        if key in claim:
            out[key] = [run_of(r) for r in claim[key]]
    if ("baseline" in out) != (sum(key in out for key in PAIRED) == 1):
        raise ExperimentError(f"{where}: 'baseline' goes with one of 'on_par' and 'at_most'")
    if "at_most" in out and "sd" in out["tolerance"]:
        raise ExperimentError(f"{where}: 'at_most' takes a relative tolerance (1.25x: 0.25), not one in sd")
    for key in ("noise", "same_targets"):
        if key in claim:
            if not isinstance(claim[key], str):
                raise ExperimentError(f"{where}: '{key}' must name a seed_spread experiment")
            out[key] = claim[key]
    return out


def check_noise_references(path, experiments):
    """Each claim's `noise` and `same_targets` name an experiment of the manifest with seed_spread = true."""
    for name, e in experiments.items():
        for key in ("noise", "same_targets"):
            noise = (e["claim"] or {}).get(key)
            if noise is not None and not experiments.get(noise, {}).get("seed_spread"):
                raise ExperimentError(f"{path}: [{name}.claim] {key} = '{noise}' is not an experiment of the "
                                      "manifest with seed_spread = true")


def claim_runs(claim):
    """The runs a claim compares, each once."""
    names = [claim.get("baseline"), *(claim.get(k) for k in PAIRED), *claim.get("ordered", []),
             *claim.get("equal", [])]
    return list(dict.fromkeys(n for n in names if n is not None))


# ---------------------------------------------------------------------------------------------
# Seeds and noise
# ---------------------------------------------------------------------------------------------


def model_of(run):
    return SEED_SUFFIX.sub("", run)


def final_validation(results, run):
    """The last validation row of RESULTS/runs/<run>/metrics.jsonl; None when the run has no results."""
    folder = os.path.join(results, "runs", run)
    if not os.path.exists(os.path.join(folder, "run.json")):
        return None
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        valid = [r for r in (json.loads(line) for line in f if line.strip()) if r["kind"] == "valid"]
    if not valid:
        raise ExperimentError(f"{folder}/metrics.jsonl: no validation rows")
    return valid[-1]


def final_perplexity(results, run):
    last = final_validation(results, run)
    return last["perplexity"] if last else None


def same_target_perplexity(results, run):
    """RESULTS/runs/<run>/same_targets.json's perplexity; None when the run has no such score."""
    path = os.path.join(results, "runs", run, "same_targets.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["perplexity"]


def retrained(results, run):
    """Whether the run's same-target score is of a checkpoint trained again (experiments.py)."""
    with open(os.path.join(results, "runs", run, "same_targets.json")) as f:
        return "retrained" in json.load(f)


def model_stats(model, manifest_runs, results, score=final_perplexity):
    """Every seed of `model` among the manifest's runs: its runs, declared and done (with a score),
    and the scores' mean, sd, and the mean and sd of their logs; the score is the final validation
    perplexity, or another (same_target_perplexity)."""
    declared = [r for r in manifest_runs if model_of(r) == model]
    scores = {r: score(results, r) for r in declared}
    done = [r for r in declared if scores[r] is not None]
    ppl = [scores[r] for r in done]
    logs = [math.log(p) for p in ppl]
    n = len(ppl)
    return {"model": model, "declared": declared, "seeds": done, "n": n, "valid_ppl": ppl,
            "mean": sum(ppl) / n if n else None, "sd": sample_sd(ppl), "log_mean": sum(logs) / n if n else None,
            "log_sd": sample_sd(logs)}


def sample_sd(values):
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def pooled_noise(stats):
    """(σ, df): the seed-to-seed sd of ln perplexity pooled over the models with two seeds or more."""
    squares, df = 0.0, 0
    for s in stats:
        if s["n"] >= 2:
            squares += sum((math.log(p) - s["log_mean"]) ** 2 for p in s["valid_ppl"])
            df += s["n"] - 1
    return (math.sqrt(squares / df), df) if df else (None, 0)


def interval(a, b, sigma, df):
    """ln(A/B) and its 95% t interval, A and B model stats."""
    d = a["log_mean"] - b["log_mean"]
    half = t975(df) * sigma * math.sqrt(1 / a["n"] + 1 / b["n"])
    return d, d - half, d + half


def welch_half_width(sd_a, n_a, sd_b, n_b):
    """The half width of a 95% Welch interval on the difference of two means, each sample with its
    own sd (n ≥ 2 each): t(0.975, ν) · sqrt(sd_A²/n_A + sd_B²/n_B), ν the Welch–Satterthwaite df
    rounded down (wider, never narrower)."""
    va, vb = sd_a ** 2 / n_a, sd_b ** 2 / n_b
    if va + vb == 0:
        return 0.0
    df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))
    return t975(max(1, math.floor(df + 1e-9))) * math.sqrt(va + vb)


def own_noise_interval(a, b):
    """ln(A/B) and its 95% Welch interval, each model with its own seed noise (its sd of ln
    perplexity), or None when either has fewer than two seeds."""
    if a["n"] < 2 or b["n"] < 2:
        return None
    d = a["log_mean"] - b["log_mean"]
    half = welch_half_width(a["log_sd"], a["n"], b["log_sd"], b["n"])
    return d, d - half, d + half


# ---------------------------------------------------------------------------------------------
# Judging a claim
# ---------------------------------------------------------------------------------------------


def within(lo, hi, band):
    """Where the interval [lo, hi] lies against [-band, band]."""
    if -band <= lo and hi <= band:
        return AGREES
    if hi < -band or lo > band:
        return DISAGREES
    return CANNOT_TELL


def worst(outcomes):
    """All agree: agrees; any disagrees: disagrees; else cannot tell."""
    if DISAGREES in outcomes:
        return DISAGREES
    return AGREES if all(o == AGREES for o in outcomes) else CANNOT_TELL


def short_labels(runs):
    """{run: label}: the runs without the suffix and then the prefix (cut at '_') they all share,
    no label left empty, and the pattern they share ("prefix…suffix"), so the table's cells stay short."""
    def common(strings):
        c = os.path.commonprefix(strings)
        c = c[:c.rfind("_") + 1] if "_" in c else ""
        return c if len(strings) > 1 and all(len(s) > len(c) for s in strings) else ""
    suffix = common([r[::-1] for r in runs])[::-1]
    stems = [r[:len(r) - len(suffix)] for r in runs]
    prefix = common(stems)
    labels = {r: stem[len(prefix):] for r, stem in zip(runs, stems)}
    return labels, (f"{prefix}…{suffix}" if prefix or suffix else "")


def ratio_text(d, lo, hi):
    return f"×{math.exp(d):.3g} [{math.exp(lo):.3g}, {math.exp(hi):.3g}]"


def model_text(s):
    """Mean ± sd (seeds done), "of" the seeds the manifest declares when some are not done."""
    seeds = f"{s['n']}" + (f" of {len(s['declared'])}" if len(s["declared"]) > s["n"] else "")
    if s["n"] == 1:
        return f"{s['mean']:,.1f} ({seeds})"
    return f"{s['mean']:,.1f} ± {s['sd']:,.1f} ({seeds})"


def decide(kind, steps, band, limit):
    """The outcome of a check from its intervals (d, lo, hi) of ln ratios: `steps` as judge() gives
    them, `band` the two-sided tolerance, `limit` at_most's upper edge."""
    if kind == "ordered":
        return worst([AGREES if hi < 0 else DISAGREES if lo > 0 else CANNOT_TELL for _, lo, hi in steps])
    if kind == "on_par":
        return within(steps[0][1], steps[0][2], band)
    if kind == "at_most":  # only the upper edge counts
        _, lo, hi = steps[0]
        return AGREES if hi <= limit else DISAGREES if lo > limit else CANNOT_TELL
    return worst([within(lo, hi, band) for _, lo, hi in steps])  # equal


def judge(claim, stats, sigma, df):
    """[(kind, check, measured, outcome, steps, own)] of a claim whose models all have results; own:
    the same check with each model's own seed noise (Welch), {outcome, log_ratios}, or None when a
    model of it has one seed."""
    tol = claim["tolerance"]
    labels, pattern = short_labels(claim_runs(claim))
    if sigma is not None:
        band = math.log(1 + tol["relative"]) if "relative" in tol else tol["sd"] * sigma
        tol_text = (f"{tol['relative']:.0%} ({band / sigma:.2g} σ)" if "relative" in tol
                    else f"{tol['sd']:g} σ ({math.exp(band) - 1:.1%})")
    else:
        band, tol_text = None, (f"{tol['relative']:.0%}" if "relative" in tol else f"{tol['sd']:g} σ")
    limit = math.log(1 + tol["relative"]) if "relative" in tol else None
    where = f" ({pattern})" if pattern else ""
    rows = []

    def checked(kind, pairs):
        """(pooled steps or None, own-noise verdict or None) of the (A, B) pairs, each step ln(A/B)."""
        steps = [interval(stats[a], stats[b], sigma, df) for a, b in pairs] if sigma is not None else None
        own = [own_noise_interval(stats[a], stats[b]) for a, b in pairs]
        # A tolerance in units of σ is the pooled σ's: with each model's own noise it keeps that width.
        verdict = ({"outcome": decide(kind, own, band, limit), "log_ratios": [list(o) for o in own]}
                   if band is not None and None not in own else None)
        return steps, verdict

    if "ordered" in claim:
        order = claim["ordered"]
        steps, own = checked("ordered", list(zip(order[1:], order)))
        measured = " → ".join(model_text(stats[r]) for r in order)
        if steps is None:
            outcome = CANNOT_TELL
        else:
            outcome = decide("ordered", steps, band, limit)
            measured += ": " + ", ".join(ratio_text(*s) for s in steps)
        if own:
            own["measured"] = ", ".join(ratio_text(*s) for s in own["log_ratios"])
        rows.append(("ordered", "perplexity falls along " + " → ".join(labels[r] for r in order) + where,
                     measured, outcome, steps or [], own))
    for kind in (k for k in PAIRED if k in claim):
        a, b = claim[kind], claim["baseline"]
        steps, own = checked(kind, [(a, b)])
        measured = f"{model_text(stats[a])} vs {model_text(stats[b])}"
        outcome = CANNOT_TELL if steps is None else decide(kind, steps, band, limit)
        if steps is not None:
            measured += ": " + ratio_text(*steps[0])
        if own:
            own["measured"] = ratio_text(*own["log_ratios"][0])
        check = (f"{labels[a]} within {tol_text} of {labels[b]}" if kind == "on_par"
                 else f"{labels[a]} at most {1 + tol['relative']:g}× {labels[b]}")
        rows.append((kind, check + where, measured, outcome, steps or [None], own))
    if "equal" in claim:
        runs = claim["equal"]
        measured = ", ".join(model_text(stats[r]) for r in runs)
        pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:]]
        steps, own = checked("equal", pairs)
        by_mean = sorted(runs, key=lambda r: stats[r]["log_mean"])  # two models even when the means tie
        high, low = by_mean[-1], by_mean[0]

        def deciding_pair(intervals, outcome):
            """'; A/B ×r [lo, hi]', the pair outside the band that makes the check disagree, when the
            pair shown (largest over smallest mean) does not: with each model's own noise a pair of
            quiet models can disagree while the widest, with a noisy one, cannot tell."""
            outside = [(p, i) for p, i in zip(pairs, intervals) if within(i[1], i[2], band) == DISAGREES]
            if outcome != DISAGREES or any(set(p) == {high, low} for p, _ in outside):
                return ""
            (a, b), (d, lo, hi) = max(outside, key=lambda o: abs(o[1][0]))
            if d < 0:  # shown as the larger over the smaller, as the widest pair is
                a, b, d, lo, hi = b, a, -d, -hi, -lo
            return f"; {labels[a]}/{labels[b]} " + ratio_text(d, lo, hi)

        if steps is None:
            outcome, steps = CANNOT_TELL, []
        else:
            outcome = decide("equal", steps, band, limit)
            measured += (f": {labels[high]}/{labels[low]} " + ratio_text(*interval(stats[high], stats[low], sigma, df))
                         + deciding_pair(steps, outcome))
        if own:
            own["measured"] = (f"{labels[high]}/{labels[low]} " + ratio_text(*own_noise_interval(stats[high], stats[low]))
                               + deciding_pair(own["log_ratios"], own["outcome"]))
        rows.append(("equal", f"{', '.join(labels[r] for r in runs)} within {tol_text} of each other{where}",
                     measured, outcome, steps, own))
    return rows


def claim_verdict(experiment, experiments, manifest_runs, results):
    """An experiment's claim judged against the seed noise: a dict for verdicts.json (and under
    `same_targets`, judged again on the same-target scores)."""
    claim = experiments[experiment]["claim"]
    out = {"experiment": experiment, "paper": claim["paper"], "label": claim.get("label", claim["paper"]),
           "tolerance": claim["tolerance"],
           **judged(claim, claim.get("noise"), experiments, manifest_runs, results, final_perplexity)}
    if "same_targets" in claim:
        out["same_targets"] = judged(claim, claim["same_targets"], experiments, manifest_runs, results,
                                     same_target_perplexity)
        scored = [r for s in out["same_targets"]["models"].values() for r in s["seeds"]]
        out["same_targets"]["retrained"] = [r for r in scored if retrained(results, r)]
    return out


def judged(claim, family, experiments, manifest_runs, results, score):
    """{noise, models, checks}: the claim's checks on `score`, the noise pooled with `family`'s seeds."""
    models = {r: model_stats(model_of(r), manifest_runs, results, score) for r in claim_runs(claim)}
    lenders = {}
    if family:
        for r in experiments[family]["names"]:
            lenders.setdefault(model_of(r), model_stats(model_of(r), manifest_runs, results, score))
    pool = {s["model"]: s for s in [*models.values(), *lenders.values()]}
    sigma, df = pooled_noise(pool.values())
    noise = {"sigma": sigma, "df": df, "relative": math.exp(sigma) - 1 if sigma is not None else None,
             "family": family, "models": sorted(m for m, s in pool.items() if s["n"] >= 2)}
    out = {"noise": noise, "models": models}
    missing = [r for r, s in models.items() if s["n"] == 0]
    if missing:
        out["checks"] = [{"kind": "missing", "check": "–", "outcome": MISSING, "runs": missing,
                          "measured": "missing: " + ", ".join(missing) + f" ({len(models) - len(missing)} of "
                                      f"{len(models)} models done)"}]
        return out
    out["checks"] = []
    for kind, check, measured, outcome, steps, own in judge(claim, models, sigma, df):
        if sigma is not None:
            measured += f"; σ {noise['relative']:.1%} (df {df}{', ' + family if family else ''})"
        else:
            measured += "; no seeds"
        runs = [claim[kind], claim["baseline"]] if kind in PAIRED else claim[kind]
        out["checks"].append({"kind": kind, "check": check, "measured": measured, "outcome": outcome,
                              "runs": runs, "log_ratios": [list(s) for s in steps if s is not None],
                              "own_noise": own})
    return out


# ---------------------------------------------------------------------------------------------
# The table, verdicts.json and the README's block
# ---------------------------------------------------------------------------------------------

VERDICT_HEADER = ("| claim (paper) | check | measured: final validation perplexity, mean ± sd (seeds); ratio of "
                  "geometric means [95% t interval]; seed noise σ of ln perplexity | verdict | with each model's own "
                  "noise: [95% Welch interval]; verdict |\n|---|---|---|---|---|\n")


def claim_rows(verdict, link=True):
    """The markdown rows of one claim's verdict, then those on the same targets."""
    e = verdict["experiment"]
    paper = verdict["paper"] + (f" ([{e}]({e}/))" if link else "")
    same = verdict.get("same_targets")
    checks = verdict["checks"] + [{**c, "check": "on the same targets: " + c["check"],
                                   "measured": c["measured"] + (retrained_note(same) if c["kind"] != "missing" else "")}
                                  for c in (same or {}).get("checks", [])]
    return "".join(f"| {paper if i == 0 else ''} | {c['check']} | {c['measured']} | {c['outcome']} | {own_text(c)} |\n"
                   for i, c in enumerate(checks))


def own_text(check):
    """The last column: the check judged with each model's own seed noise, or why it cannot be."""
    own = check.get("own_noise")
    if check["kind"] == "missing":
        return ""
    return f"{own['measured']}; {own['outcome']}" if own else "– (a model with one seed)"


def retrained_note(same):
    """How many same-target scores are of checkpoints trained again (the same-target table names them)."""
    scored = sum(s["n"] for s in same["models"].values())
    again = len(same.get("retrained", []))
    return f"; {again} of {scored} scores of checkpoints trained again" if again else ""


def seed_spread(experiment, e, results):
    """One recipe at several seeds (an experiment with seed_spread = true): the final validation
    perplexities, their mean ± sd, largest over smallest, and the sd of their logs."""
    finals = [(r, final_validation(results, r)) for r in e["names"]]
    done = [(r, v["perplexity"]) for r, v in finals if v is not None]
    values = [p for _, p in done]
    out = {"experiment": experiment, "title": e["title"], "runs": dict(done), "declared": len(e["names"]),
           "mean": sum(values) / len(values) if values else None, "sd": sample_sd(values),
           "spread": max(values) / min(values) - 1 if len(values) >= 2 else None,
           "log_sd": sample_sd([math.log(v) for v in values])}
    head = f"- **Seed-to-seed spread** ([{experiment}]({experiment}/)), {e['title']}: "
    if len(values) < 2:
        out["line"] = head + f"{len(values)} of {len(e['names'])} runs done; it needs two.\n"
    else:
        out["line"] = (head + ", ".join(f"{r} {p:,.1f}" for r, p in done)
                       + f": mean {out['mean']:,.1f} ± {out['sd']:,.1f}, spread {out['spread']:.1%} (largest over "
                         f"smallest, {len(values)} of {len(e['names'])} runs), σ of ln perplexity "
                         f"{math.exp(out['log_sd']) - 1:.1%}. A difference between single-seed runs of that kind "
                         "smaller than this is within what the seed alone moves.\n")
    return out


def run_numbers(results, run):
    """The numbers the README cites of one run: final validation, test and word order."""
    last = final_validation(results, run)
    folder = os.path.join(results, "runs", run)
    with open(os.path.join(folder, "run.json")) as f:
        test = json.load(f)["test"]
    out = {"updates": last["update"], "tokens": last["tokens"], "valid_ppl": last["perplexity"],
           "valid_ratio_to_unigram": last["perplexity"] / last["unigram_perplexity"]
           if last.get("unigram_perplexity") else None,
           "valid_shuffled_ratio": last["shuffled_perplexity"] / last["perplexity"]
           if last.get("shuffled_perplexity") else None,
           "test_ppl": test["perplexity"], "test_ratio_to_unigram": test.get("ratio_to_unigram")}
    if os.path.exists(os.path.join(folder, "word_order.json")):
        with open(os.path.join(folder, "word_order.json")) as f:
            out["test_shuffled_ratio"] = json.load(f)["ratio"]
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        train = [r for r in (json.loads(line) for line in f if line.strip())
                 if r["kind"] == "train" and r.get("tokens_per_second")]
    if train:
        out["median_tokens_per_second"] = statistics.median(r["tokens_per_second"] for r in train)
    switch = 0
    if os.path.exists(os.path.join(folder, "recipe.toml")):
        with open(os.path.join(folder, "recipe.toml"), "rb") as f:
            switch = tomllib.load(f).get("train", {}).get("short_seq_updates", 0)
    after = [r["tokens_per_second"] for r in train if r["update"] > switch]
    if switch and after:  # the sequence-length warm-up's second phase: blocks of n
        out["median_tokens_per_second_after_warmup"] = statistics.median(after)
    return out


# Figure 3 at 20 M tokens (no warm-up): the README cites the spread within each and across them.
FIGURE3_20M = ("k_n512", "sharing_n512", "k_n1024", "length_k64")


def finetune_numbers(root):
    """{task/encoder_sSEED: [correct, total, accuracy]} of every committed fine-tuning run."""
    out = {}
    runs = os.path.join(root, "results", "finetune", "runs")
    for task in sorted(os.listdir(runs)) if os.path.isdir(runs) else []:
        for run in sorted(os.listdir(os.path.join(runs, task))):
            path = os.path.join(runs, task, run, "results.json")
            if os.path.exists(path):
                with open(path) as f:
                    test = json.load(f)["test"]
                k = math.isqrt(len(test["confusion"]))
                correct = sum(test["confusion"][i * k + i] for i in range(k))
                out[f"{task}/{run}"] = [correct, sum(test["confusion"]), test["accuracy"]]
    return out


def build(experiments, results):
    """Everything verdicts.json holds: each claim's verdict, each seed spread, each run's numbers,
    the spreads of final validation perplexity within and across experiments, fine-tuning counts."""
    manifest_runs = list(dict.fromkeys(r for e in experiments.values() for r in e["names"]))
    done = [r for r in manifest_runs if final_validation(results, r) is not None]
    runs = {r: run_numbers(results, r) for r in done}
    spreads = {}
    for name, e in experiments.items():
        values = [runs[r]["valid_ppl"] for r in e["names"] if r in runs]
        spreads[name] = max(values) / min(values) - 1 if len(values) >= 2 else None
    across = [runs[r]["valid_ppl"] for x in FIGURE3_20M if x in experiments for r in experiments[x]["names"] if r in runs]
    return {"method": ("scripts/verdicts.py: ln perplexity, pooled seed sd, 95% Student t intervals; as a check, "
                       "each model's own seed sd, 95% Welch intervals (own_noise)"),
            "claims": [claim_verdict(x, experiments, manifest_runs, results) for x, e in experiments.items() if e["claim"]],
            "seed_spreads": [seed_spread(x, e, results) for x, e in experiments.items() if e["seed_spread"]],
            "runs": runs, "experiment_spreads": spreads,
            "figure3_20m_spread_across": max(across) / min(across) - 1 if len(across) >= 2 else None,
            "finetune": finetune_numbers(os.path.dirname(os.path.dirname(os.path.abspath(results))))}


def table(verdicts):
    """The verdict table and the seed-spread lines (links relative to RESULTS)."""
    text = VERDICT_HEADER + "".join(claim_rows(v) for v in verdicts["claims"])
    lines = "".join(s["line"] for s in verdicts["seed_spreads"])
    return text + ("\n" + lines if lines else "")


BEGIN, END = "<!-- verdict:begin -->\n", "<!-- verdict:end -->"

# The README's summary: one row per claim, at most SUMMARY_ROWS (the rest named in a last row),
# every cell at most CELL_MAX characters; the full table (table() above) is in RESULTS/README.md.
SUMMARY_ROWS = 12
CELL_MAX = 200
SUMMARY_HEADER = ("| claim | experiment | final validation perplexity (mean over seeds); on-par ratio of geometric "
                  "means [95% interval]; seed noise σ | verdict |\n|---|---|---|---|\n")
CHECK_NAMES = {"ordered": "ordered", "on_par": "on par", "at_most": "at most", "equal": "equal"}


def mean_text(s):
    return f"{s['mean']:,.1f}" + (f" ({s['n']} seeds)" if s["n"] > 1 else "")


def summary_measured(v, brief=0):
    """A claim's headline numbers: the ordered chain, the on-par ratio, the equal ones' extremes;
    then, for a claim judged on the same targets too, the same from those scores. Shortened as far
    as the cell needs: brief 1, the chains' ends and the number of equal ones only; brief 2, the
    same-target reading's ratios only."""
    text = headline(v, min(brief, 1))
    if "same_targets" in v:
        text += "; on the same targets: " + headline(v["same_targets"], brief)
    return summary_measured(v, brief + 1) if len(text) > CELL_MAX and brief < 2 else text


def headline(v, brief):
    """summary_measured's numbers of one judgement ({noise, models, checks}); brief as there (2: no
    means, no chain)."""
    models, noise = v["models"], v["noise"]
    if v["checks"][0]["kind"] == "missing":
        missing = v["checks"][0]["runs"]
        return (f"no results yet: {', '.join(missing)}" if len(", ".join(missing)) <= 120
                else f"{len(missing)} of {len(models)} models without results")

    def ratio(a, b):  # the ratio of geometric means, with its interval when there is a noise
        if noise["sigma"] is None:
            return f"×{math.exp(a['log_mean'] - b['log_mean']):.3g}"
        return ratio_text(*interval(a, b, noise["sigma"], noise["df"]))

    parts = []
    for c in v["checks"]:
        group = [models[r] for r in c["runs"]]
        if c["kind"] == "ordered" and brief < 2:
            chain = [group[0], group[-1]] if brief and len(group) > 2 else group
            parts.append((" → … → " if len(chain) < len(group) else " → ").join(mean_text(s) for s in chain))
        elif c["kind"] in PAIRED:  # after an ordered chain that ends with it, its mean alone
            a, b = group
            if brief >= 2:
                parts.append(ratio(a, b))
                continue
            parts.append(f"{a['mean']:,.1f}" if len(v["checks"]) > 1 else mean_text(a))
            parts[-1] += f" vs {mean_text(b)}: {ratio(a, b)}"
        elif c["kind"] == "equal":
            by_mean = sorted(group, key=lambda s: s["log_mean"])  # two models even when the means tie
            high, low = by_mean[-1], by_mean[0]
            parts.append(("" if brief >= 2 else f"{len(group)} models; " if brief else
                          ", ".join(mean_text(s) for s in group) + "; ") + f"largest / smallest {ratio(high, low)}")
    parts.append(f"σ {noise['relative']:.1%}" if noise["sigma"] is not None else "no seeds")
    return "; ".join(parts)


def short_outcome(outcome):
    return "cannot tell" if outcome == CANNOT_TELL else f"**{outcome}**" if outcome in (AGREES, DISAGREES) else outcome


def outcomes_text(checks):
    """Each check's outcome, and its outcome with each model's own noise where that differs."""
    def text(c):
        own = c.get("own_noise")
        differs = f" (own noise: {short_outcome(own['outcome'])})" if own and own["outcome"] != c["outcome"] else ""
        return f"{CHECK_NAMES[c['kind']]}: {short_outcome(c['outcome'])}{differs}"
    return "; ".join(text(c) if c["kind"] != "missing" else c["outcome"] for c in checks)


def summary_row(v):
    e = v["experiment"]
    outcomes = outcomes_text(v["checks"])
    if "same_targets" in v:
        outcomes += "; on the same targets: " + outcomes_text(v["same_targets"]["checks"])
    label = v["label"] if len(v["label"]) <= LABEL_MAX else v["label"][:LABEL_MAX - 1] + "…"  # `paper` may be long
    return f"| {label} | [{e}]({e}/) | {summary_measured(v)} | {outcomes} |\n"


def summary(verdicts):
    """The README's verdict summary (links relative to RESULTS): a row per claim, the seed noise
    references in one line, and a link to the full table (RESULTS/README.md)."""
    # Claims still waiting for runs give their rows up first (in manifest order otherwise).
    claims = sorted(verdicts["claims"], key=lambda v: any(c["kind"] == "missing" for c in v["checks"]))
    text = SUMMARY_HEADER + "".join(summary_row(v) for v in claims[:SUMMARY_ROWS])
    rest = claims[SUMMARY_ROWS:]
    if rest:
        names = ", ".join(v["experiment"] for v in rest)
        text += (f"| {len(rest)} more claims, in the full table: "
                 + (names if len(names) <= 150 else names[:149] + "…") + " | | | |\n")
    return (text + "\nSeed noise σ of ln perplexity, one recipe at several seeds: " + noise_range(verdicts["seed_spreads"])
            + ". \"Cannot tell\": at this noise the 95% interval straddles the tolerance. \"Own noise\": the "
            "verdict where it differs when each model keeps its own seed noise (a Welch interval) instead of the "
            "pooled σ. Every check with both intervals, and every recipe's seed noise: [the full table](README.md).\n")


def noise_range(spreads):
    """The seed_spread experiments in a few words: how many, the smallest and largest σ (linked),
    how many still wait for their seeds."""
    measured = sorted((s for s in spreads if s["log_sd"] is not None), key=lambda s: s["log_sd"])
    waiting = len(spreads) - len(measured)

    def named(s):
        return f"{math.exp(s['log_sd']) - 1:.1%} ([{s['experiment']}]({s['experiment']}/), {len(s['runs'])} seeds)"

    if not measured:
        text = "none measured"
    elif len(measured) == 1:
        text = "1 recipe, " + named(measured[0])
    else:
        text = f"{len(measured)} recipes, from {named(measured[0])} to {named(measured[-1])}"
    return text + (f"; {waiting} more waiting for their seeds" if waiting else "")


def readme_block(verdicts):
    """The text between the repository README's markers (links from the repository's root)."""
    return summary(verdicts).replace("](", "](results/brown/")


def with_block(text, block):
    if BEGIN not in text or END not in text:
        return None
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + block + rest[rest.index(END):]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", default=os.path.join(ROOT, "recipes", "brown", "experiments.toml"))
    parser.add_argument("--results", default=os.path.join(ROOT, "results", "brown"))
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    parser.add_argument("--check", action="store_true", help="compare, write nothing; exit 1 on a difference")
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    import experiments as manifest  # the manifest reader; imported here, experiments.py imports this module
    try:
        verdicts = build(manifest.read_manifest(args.manifest), args.results)
    except (ExperimentError, manifest.ExperimentError) as e:  # run as a script, this module is __main__
        print(f"verdicts: {e}", file=sys.stderr)
        return 1
    return write(verdicts, args.results, args.readme, args.check)


def write(verdicts, results, readme, check=False):
    """RESULTS/verdicts.json and the README's verdict block; with check, only compares (0: equal).
    RESULTS/README.md, when there, must hold the full table and each RESULTS/<experiment>/README.md
    its claim's rows (scripts/experiments.py report writes both); else nothing is written."""
    full = os.path.join(results, "README.md")
    if os.path.exists(full):
        with open(full) as f:
            if table(verdicts) not in f.read():
                print(f"verdicts: {full} lacks the full verdict table the results give "
                      "(run scripts/experiments.py report)", file=sys.stderr)
                return 1
    stale = []
    for v in verdicts["claims"]:  # each experiment's README repeats its claim's rows (experiments.py report)
        report = os.path.join(results, v["experiment"], "README.md")
        if os.path.exists(report):
            with open(report) as f:
                if claim_rows(v, link=False) not in f.read():
                    stale.append(report)
    if stale:
        print("verdicts: the claim table is not what the results give in " + ", ".join(stale)
              + " (run scripts/run_experiments.sh --report-only)", file=sys.stderr)
        return 1
    path = os.path.join(results, "verdicts.json")
    wanted = {path: json.dumps(verdicts, indent=1, ensure_ascii=False) + "\n"}
    if readme and os.path.exists(readme):
        with open(readme) as f:
            text = with_block(f.read(), readme_block(verdicts))
        if text is not None:
            wanted[readme] = text
    stale = []
    for file, text in wanted.items():
        with open(file) if os.path.exists(file) else open(os.devnull) as f:
            if f.read() == text:
                continue
        stale.append(file)
        if not check:  # whole or not at all: a temporary file renamed over the old one
            with open(file + ".tmp", "w") as f:
                f.write(text)
            os.replace(file + ".tmp", file)
    if check and stale:
        print("verdicts: not what the results give: " + ", ".join(stale) + " (run scripts/verdicts.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
