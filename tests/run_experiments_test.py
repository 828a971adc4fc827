"""scripts/run_experiments.sh on the tiny recipe: runs, results, figures and a table that
agrees with numbers recomputed here from the metrics files; reruns skip finished runs;
a changed recipe and bad input are refused.

Usage: run_experiments_test.py LINFORMER_BINARY   (run from the repository root, as CTest does)
"""
import csv
import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "run_experiments.sh")
BINARY = None


class RunExperiments(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        tiny = os.path.join(ROOT, "recipes", "ci", "tiny.toml")
        self.variant = os.path.join(d, "tiny_k8.toml")
        with open(self.variant, "w") as f:
            f.write(f'base = "{tiny}"\n[data]\nseq_len = 32\n[model]\nk = 8\n[train]\nmax_updates = 10\n[validation]\nevery = 5\nshuffle_words = true\n'
                    "[checkpoint]\nevery = 5\n")
        self.manifest = os.path.join(d, "experiments.toml")
        with open(self.manifest, "w") as f:
            f.write(f'[tiny_k]\ntitle = "Tiny: effect of k"\nrecipes = ["{tiny}", "tiny_k8.toml"]\n'
                    f'[tiny_k.claim]\npaper = "Tiny claim"\nordered = ["{tiny}", "tiny_k8.toml"]\n'
                    f'baseline = "{tiny}"\non_par = "tiny_k8.toml"\ntolerance = 0.05\n'
                    f'[other]\nrecipes = ["tiny_k8.toml"]\n')
        self.runs = os.path.join(d, "runs")
        self.results = os.path.join(d, "results")

    def tearDown(self):
        self.dir.cleanup()

    def run_script(self, *args):
        # One thread for every call: measurements compared exactly across calls (word order
        # measured again) differ in their last bits at another thread count, and the threads a
        # run records are then known.
        env = dict(os.environ, OMP_NUM_THREADS="1")
        return subprocess.run([SCRIPT, *args, "--manifest", self.manifest, "--runs-dir", self.runs,
                               "--results", self.results, "--binary", BINARY], capture_output=True, text=True, env=env)

    def test_runs_reports_and_skips_what_is_done(self):
        r = self.run_script("tiny_k")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        table = os.path.join(self.results, "tiny_k", "README.md")
        for path in (table, os.path.join(self.results, "tiny_k", "curves.png"),
                     os.path.join(self.results, "tiny_k", "curves.svg")):
            self.assertTrue(os.path.exists(path), path)
        self.assertFalse(os.path.exists(os.path.join(self.results, "other")), "an experiment not asked for was made")

        with open(os.path.join(self.results, "tiny_k", "table.json")) as f:
            rows = {row["name"]: row for row in json.load(f)}
        self.assertEqual(sorted(rows), ["tiny", "tiny_k8"])
        for name, updates in (("tiny", 20), ("tiny_k8", 10)):
            folder = os.path.join(self.results, "runs", name)
            # Recomputed from metrics.csv (the table's generator reads metrics.jsonl).
            with open(os.path.join(folder, "metrics.csv")) as f:
                valid = [row for row in csv.DictReader(f) if row["kind"] == "valid"]
            last = valid[-1]
            self.assertEqual(int(last["update"]), updates)
            self.assertEqual(rows[name]["updates"], updates)
            self.assertAlmostEqual(rows[name]["valid_ppl"], float(last["perplexity"]), delta=1e-3)
            self.assertAlmostEqual(rows[name]["valid_ratio"],
                                   float(last["perplexity"]) / float(last["unigram_perplexity"]), delta=1e-4)
            best = min(valid, key=lambda row: float(row["loss"]))
            self.assertAlmostEqual(rows[name]["best_valid_ppl"], float(best["perplexity"]), delta=1e-3)
            with open(os.path.join(folder, "run.json")) as f:
                run = json.load(f)
            self.assertEqual(run["best_update"], int(best["update"]))
            self.assertGreater(run["test"]["perplexity"], 1.0)
            self.assertAlmostEqual(run["test"]["ratio_to_unigram"],
                                   run["test"]["perplexity"] / run["test"]["unigram_perplexity"], places=9)
            self.assertEqual(len(run["sessions"]), 1)
            self.assertGreater(run["sessions"][0]["peak_rss_mb"], 1.0)
            self.assertIn(run["sessions"][0]["machine"]["kind"], ("avx512_bf16", "avx512", "avx2", "other"))
            # The threads the run was given (run_script's one), and the CPU time it got: no more
            # than every CPU for its wall time (helper threads of a sanitizer or the runtime may
            # add to the one OpenMP thread; /usr/bin/time counts in 10 ms steps).
            session = run["sessions"][0]
            self.assertEqual(session["machine"]["threads"], 1)
            self.assertGreater(session["cpu_seconds"], 0.0)
            self.assertLessEqual(session["cpu_seconds"], session["wall_seconds"] * os.cpu_count() + 0.02)
            self.assertEqual(rows[name]["machine"].count(", 1 thread"), 1)
            self.assertTrue(os.path.exists(os.path.join(folder, "recipe.toml")))
            # Word order: the best checkpoint's test perplexity with shuffled words, over the ordered one's.
            with open(os.path.join(folder, "word_order.json")) as f:
                order = json.load(f)
            self.assertEqual(order["checkpoint"], f"checkpoint_{run['best_update']:08d}")
            self.assertAlmostEqual(order["perplexity"], run["test"]["perplexity"], places=6)
            self.assertAlmostEqual(order["ratio"], order["shuffled_perplexity"] / order["perplexity"], places=9)
            self.assertNotEqual(order["shuffled_perplexity"], order["perplexity"])
            self.assertAlmostEqual(rows[name]["word_order_ratio"], order["ratio"], places=9)
            # The same targets in two groups: copyable from their block or not.
            groups = order["by_context"]
            self.assertEqual(groups["in_context"]["masked"] + groups["not_in_context"]["masked"], order["masked"])
            self.assertGreater(groups["in_context"]["masked"], 0)
            total = sum(g["masked"] * g["loss"] for g in groups.values())
            self.assertAlmostEqual(total / order["masked"], math.log(order["perplexity"]), places=5)
            share = groups["in_context"]["masked"] / order["masked"]
            with open(os.path.join(self.results, "README.md")) as f:
                self.assertIn(f"| {name} | {share:.1%} | {groups['in_context']['perplexity']:,.1f} |", f.read())
            # "order from": the first validation on shuffled words 1.10 × worse or more (tiny_k8 validates
            # on shuffled words too; tiny does not).
            shuffled = [(int(v["update"]), float(v["shuffled_perplexity"]) / float(v["perplexity"]))
                        for v in valid if v.get("shuffled_perplexity")]
            self.assertEqual(bool(shuffled), name == "tiny_k8")
            onset = next((u for u, ratio in shuffled if ratio >= 1.10), "never") if shuffled else None
            self.assertEqual(rows[name]["order_onset"], onset)
            with open(table) as f:
                self.assertIn(f"| {name} | {updates} |", f.read())

        # The same validation targets at n = 64 (tiny) and 32 (tiny_k8): one digest, one count and
        # one unigram baseline (the unigram model scores the targets alone), different model scores.
        same = {}
        for name in ("tiny", "tiny_k8"):
            with open(os.path.join(self.results, "runs", name, "same_targets.json")) as f:
                same[name] = json.load(f)
        self.assertEqual(same["tiny"]["targets_digest"], same["tiny_k8"]["targets_digest"])
        self.assertEqual(same["tiny"]["masked"], same["tiny_k8"]["masked"])
        self.assertGreater(same["tiny"]["masked"], 100)
        self.assertAlmostEqual(same["tiny"]["unigram_perplexity"], same["tiny_k8"]["unigram_perplexity"], places=6)
        self.assertNotEqual(same["tiny"]["perplexity"], same["tiny_k8"]["perplexity"])
        with open(os.path.join(self.results, "README.md")) as f:
            overall = f.read()
        self.assertIn("## The same targets at every n", overall)
        for name, n in (("tiny", 64), ("tiny_k8", 32)):
            self.assertIn(f"| {name} | {n} | {same[name]['checkpoint']} | {same[name]['masked']:,} | "
                          f"`{same[name]['targets_digest']}` | {same[name]['perplexity']:,.1f} |", overall)

        # The claim's checks, from metrics.csv's final validations: one seed each and no seed noise
        # to borrow, so no interval and no verdict but "cannot tell".
        final = {}
        for name in ("tiny", "tiny_k8"):
            with open(os.path.join(self.results, "runs", name, "metrics.csv")) as f:
                final[name] = float([row for row in csv.DictReader(f) if row["kind"] == "valid"][-1]["perplexity"])
        with open(table) as f:
            report = f.read()
        self.assertIn("## The paper's claim", report)
        self.assertIn(f"| Tiny claim | perplexity falls along tiny → tiny_k8 | {final['tiny']:,.1f} (1) → "
                      f"{final['tiny_k8']:,.1f} (1); no seeds | cannot tell at this noise |", report)
        self.assertIn(f"| tiny_k8 within 5% of tiny | {final['tiny_k8']:,.1f} (1) vs {final['tiny']:,.1f} (1); no seeds | "
                      "cannot tell at this noise |", report)
        with open(os.path.join(self.results, "README.md")) as f:
            self.assertIn("| Tiny claim ([tiny_k](tiny_k/)) | perplexity falls along", f.read())
        with open(os.path.join(self.results, "verdicts.json")) as f:
            self.assertEqual(json.load(f)["claims"][0]["checks"][1]["outcome"], "cannot tell at this noise")

        # Everything is done: a second run trains nothing.
        r = self.run_script("tiny_k")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tiny: up to date", r.stdout)
        self.assertNotIn("training", r.stdout)
        r = self.run_script("--list")
        self.assertIn("tiny_k: Tiny: effect of k (2 of 2 done)", r.stdout)
        self.assertIn("other: other (1 of 1 done)", r.stdout)

        # Results made before an option joined the schema are still up to date: the stored recipe
        # lacks the option and resolves to its default.
        stored = os.path.join(self.results, "runs", "tiny", "recipe.toml")
        with open(stored) as f:
            text = f.read()
        self.assertIn("\n[finetune]", text)
        with open(stored, "w") as f:
            f.write(text[:text.index("\n[finetune]")] + "\n")
        r = self.run_script("tiny_k")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tiny: up to date", r.stdout)

        # word-order measures the runs that lack it while their checkpoint is there.
        order_file = os.path.join(self.results, "runs", "tiny", "word_order.json")
        with open(order_file) as f:
            order = json.load(f)
        os.remove(order_file)
        r = self.run_script("--word-order", "tiny_k")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(order_file) as f:
            self.assertEqual(json.load(f)["ratio"], order["ratio"])
        os.remove(order_file)

        # A checkpoint of the run trained again (here: its log altered at the best update) is
        # measured and marked as not the published weights, in its record and in the table.
        same_file = os.path.join(self.results, "runs", "tiny", "same_targets.json")
        with open(same_file) as f:
            self.assertNotIn("retrained", json.load(f))
        with open(os.path.join(self.results, "runs", "tiny", "run.json")) as f:
            best = json.load(f)["best_update"]

        def valid_rows(path):
            with open(path) as f:
                return [json.loads(line) for line in f if line.strip()]
        published = next(r["perplexity"] for r in valid_rows(os.path.join(self.results, "runs", "tiny", "metrics.jsonl"))
                         if r["kind"] == "valid" and r["update"] == best)
        log = os.path.join(self.runs, "tiny", "metrics.jsonl")
        rows = valid_rows(log)
        for row in rows:
            if row["kind"] == "valid" and row["update"] == best:
                row["perplexity"] = again = published * 1.5
        with open(log, "w") as f:
            f.write("".join(json.dumps(row) + "\n" for row in rows))
        os.remove(same_file)
        r = self.run_script("--same-targets", "tiny_k")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tiny: ", r.stdout)
        self.assertIn("measured and marked as such", r.stdout)
        with open(same_file) as f:
            record = json.load(f)
        self.assertEqual(record["retrained"], {"published_valid_ppl": published, "checkpoint_valid_ppl": again})
        with open(os.path.join(self.results, "README.md")) as f:
            self.assertIn(f"| tiny | 64 | {record['checkpoint']} (retrained: {again:,.1f} against {published:,.1f}) |",
                          f.read())
        shutil.rmtree(os.path.join(self.runs, "tiny", "checkpoints"))
        r = self.run_script("--word-order", "tiny_k")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tiny: no checkpoint", r.stdout)
        with open(table) as f:
            self.assertIn("| tiny | 20 |", f.read())

        # The report is made from the results alone.
        os.remove(os.path.join(self.results, "tiny_k", "README.md"))
        r = self.run_script("--report-only")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(table))
        self.assertTrue(os.path.exists(os.path.join(self.results, "other", "README.md")))

        # A report of one experiment keeps every other experiment's verdict, and makes again the
        # README of every experiment whose claim judges one of its models (tiny_k judges tiny_k8).
        os.remove(table)
        r = self.run_script("--report-only", "other")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.results, "README.md")) as f:
            self.assertIn("| Tiny claim ([tiny_k](tiny_k/)) | perplexity falls along", f.read())
        with open(table) as f:
            self.assertIn("## The paper's claim", f.read())

        # A recipe changed after its results were made is refused.
        with open(self.variant, "a") as f:
            f.write("[optim]\nlr = 0.01\n")
        r = self.run_script("other")
        self.assertEqual(r.returncode, 1)
        self.assertIn("tiny_k8:", r.stderr)
        self.assertIn("changed since", r.stderr)

    def test_verify_trains_a_published_run_again_and_compares_its_curve(self):
        r = self.run_script("other", "--runs", "tiny_k8")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The same binary on the same machine: the curve again is the published one, bit for bit,
        # and the learning-rate schedule is the published one although the run stops early.
        r = self.run_script("--verify", "tiny_k8", "--updates", "5")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("tiny_k8: training 5 updates again", r.stdout)
        self.assertIn("tiny_k8: update 5: validation perplexity", r.stdout)
        self.assertIn("rows compared: identical", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.runs, "verify", "tiny_k8")), "the scratch run was kept")

        # A published curve that the recipe does not give is caught, with the row named.
        metrics = os.path.join(self.results, "runs", "tiny_k8", "metrics.jsonl")
        with open(metrics) as f:
            rows = [json.loads(line) for line in f]
        for row in rows:
            if row["kind"] == "valid" and row["update"] == 10:
                row["loss"] += 0.05
        with open(metrics, "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
        r = self.run_script("--verify", "tiny_k8")  # default: up to the first validation, update 5
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.run_script("--verify", "tiny_k8", "--updates", "10")  # e^-0.05 - 1 = -4.88%
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("differs from the published curve by 4.88% in perplexity at update 10 (valid)", r.stderr)

        r = self.run_script("--verify", "tiny_k8", "--updates", "7")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--updates 7: the published run logged no row at that update (its validations: 5, 10)", r.stderr)
        r = self.run_script("--verify", "tiny")
        self.assertEqual(r.returncode, 1)
        self.assertIn("tiny: no published run in", r.stderr)

    def test_a_run_trained_directly_is_published_without_a_memory_it_never_measured(self):
        # `linformer train --run-dir` run by hand, then published by the script: one session recorded
        # afterwards, its wall time the metrics' elapsed seconds, no peak memory (nothing measured it).
        run_dir = os.path.join(self.runs, "tiny_k8")
        prepare = subprocess.run([BINARY, "prepare", "--recipe", self.variant], capture_output=True, text=True)
        self.assertEqual(prepare.returncode, 0, prepare.stderr)
        # Trained at two threads, published at one: the session names the two its train.log names.
        train = subprocess.run([BINARY, "train", "--recipe", self.variant, "--run-dir", run_dir],
                               capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
        self.assertEqual(train.returncode, 0, train.stderr)
        r = self.run_script("other")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("tiny_k8: trained outside this script; recorded as one untimed session", r.stdout)
        with open(os.path.join(self.results, "runs", "tiny_k8", "run.json")) as f:
            sessions = json.load(f)["sessions"]
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            elapsed = [json.loads(line) for line in f if line.strip()][-1]["elapsed_seconds"]
        self.assertEqual(len(sessions), 1)
        self.assertEqual((sessions[0]["exit_code"], sessions[0]["peak_rss_mb"], sessions[0]["wall_seconds"]),
                         (0, None, elapsed))
        self.assertIn("peak memory not measured", sessions[0]["untimed"])
        self.assertEqual(sessions[0]["machine"]["threads"], 2)
        with open(os.path.join(self.results, "other", "table.json")) as f:
            row = json.load(f)[0]
        self.assertIsNone(row["peak_rss_mb"])
        with open(os.path.join(self.results, "other", "README.md")) as f:
            line = next(x for x in f if x.startswith("| tiny_k8 | 10 |"))
        self.assertEqual(line.split(" | ")[-2], "–")  # the peak RSS column

    def test_a_report_waits_while_another_lane_writes_the_results(self):
        # Two lanes of run_experiments.sh share RESULTS: the one publishing a run or a report holds
        # it (a lock on the folder), and the other waits instead of reading half-written files.
        r = self.run_script("tiny_k")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        readme = os.path.join(self.results, "tiny_k", "README.md")
        os.remove(readme)
        lock = os.open(self.results, os.O_RDONLY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another lane writing
            report = subprocess.Popen([SCRIPT, "--report-only", "tiny_k", "--manifest", self.manifest, "--runs-dir",
                                       self.runs, "--results", self.results], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
            self.assertEqual(report.stdout.readline().strip(),
                             f"experiments: waiting for {self.results}: another run_experiments.sh is writing it")
            self.assertIsNone(report.poll())
            self.assertFalse(os.path.exists(readme), "the report wrote while another lane held the results")
        finally:
            os.close(lock)  # that lane done
        out, _ = report.communicate(timeout=300)
        self.assertEqual(report.returncode, 0, out)
        self.assertTrue(os.path.exists(readme))

    def test_the_shipped_manifest_loads(self):
        r = subprocess.run([SCRIPT, "--list"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sweep:", r.stdout)

    def test_bad_input_is_refused_with_the_reason(self):
        r = self.run_script("nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no experiment 'nope'", r.stderr)
        r = self.run_script("tiny_k", "--runs", "tiny_k9")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--runs: no run 'tiny_k9' in the selected experiments", r.stderr)
        self.assertFalse(os.path.exists(self.runs), "a run was trained although --runs named none")
        with open(self.manifest, "a") as f:
            f.write('[broken]\nrecipes = ["missing.toml"]\n')
        r = self.run_script("--list")
        self.assertEqual(r.returncode, 1)
        self.assertIn("[broken] recipe 'missing.toml' not found", r.stderr)


class SeedSpread(unittest.TestCase):
    """An experiment with seed_spread = true: one recipe at several seeds (no binary needed; the
    spread and the verdicts judged against it: tests/verdicts_test.py)."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import experiments
        self.experiments = experiments

    def test_the_manifest_key_must_be_a_boolean(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "a.toml"), "w") as f:
                f.write("seed = 2\n")
            manifest = os.path.join(d, "m.toml")
            with open(manifest, "w") as f:
                f.write('[s]\nrecipes = ["a.toml"]\nseed_spread = "yes"\n')
            with self.assertRaises(self.experiments.ExperimentError) as refused:
                self.experiments.read_manifest(manifest)
            self.assertIn("[s] seed_spread must be true or false", str(refused.exception))
            with open(manifest, "w") as f:
                f.write('[s]\nrecipes = ["a.toml"]\nseed_spread = true\n')
            self.assertTrue(self.experiments.read_manifest(manifest)["s"]["seed_spread"])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: run_experiments_test.py LINFORMER_BINARY")
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
