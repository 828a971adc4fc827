"""scripts/word_pairs.py: onsets and seed means from made-up validations, worked out here by hand;
bad input refused naming the file; the committed results/word_pairs/summary.json is what its
metrics give; one short run end to end.

Usage: word_pairs_test.py LINFORMER_BINARY
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import tomllib
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import word_pairs as wp  # noqa: E402

BINARY = None


def valid_row(update, ppl, shuffled, accuracy):
    return {"kind": "valid", "update": update, "perplexity": ppl, "shuffled_perplexity": shuffled, "accuracy": accuracy}


def write_metrics(folder, rows):
    os.makedirs(folder)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        f.write(json.dumps({"kind": "train", "update": 100, "perplexity": 50.0}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")


class Summaries(unittest.TestCase):
    def test_the_onset_is_the_first_validation_twice_as_bad_shuffled(self):
        rows = [valid_row(100, 10.0, 19.9, 0.1), valid_row(200, 10.0, 20.0, 0.2), valid_row(400, 2.0, 3.0, 0.9)]
        got = wp.summarize_run(rows)
        self.assertEqual(got["onset"], 200)  # 19.9 / 10 is below 2; 20 / 10 is not
        self.assertEqual(got["updates"], 400)
        self.assertAlmostEqual(got["word_order_ratio"], 1.5)
        self.assertEqual(got["accuracy_by_update"], {"100": 0.1, "200": 0.2, "400": 0.9})
        self.assertIsNone(wp.summarize_run([valid_row(100, 10.0, 19.0, 0.1)])["onset"])

    def test_a_model_is_the_mean_and_sd_over_its_seeds(self):
        runs = [{"accuracy": a, "accuracy_by_update": {str(wp.EARLY): e}, "onset": o, "word_order_ratio": r}
                for a, e, o, r in ((0.9, 0.2, 300, 5.0), (0.7, 0.4, None, 7.0))]
        got = wp.summarize_model(runs)
        self.assertAlmostEqual(got["accuracy_mean"], 0.8)
        self.assertAlmostEqual(got["accuracy_sd"], 0.1414213562, places=8)  # sqrt(0.02 / 1)
        self.assertAlmostEqual(got["early_accuracy_mean"], 0.3)
        self.assertEqual(got["onsets"], [300, None])

    def test_validations_without_shuffled_words_are_refused_naming_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            row = valid_row(100, 10.0, 20.0, 0.5)
            del row["shuffled_perplexity"]
            write_metrics(os.path.join(d, "r"), [row])
            with self.assertRaisesRegex(SystemExit, r"r/metrics.jsonl: validation at update 100 has no shuffled"):
                wp.validations(os.path.join(d, "r", "metrics.jsonl"))
            write_metrics(os.path.join(d, "empty"), [])
            with self.assertRaisesRegex(SystemExit, r"empty/metrics.jsonl: no validation rows"):
                wp.validations(os.path.join(d, "empty", "metrics.jsonl"))

    def test_summary_runs_are_grouped_by_model_and_strays_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for seed, accuracy in ((1, 0.6), (2, 0.8)):
                write_metrics(os.path.join(d, "runs", f"full_post_s{seed}"),
                              [valid_row(wp.EARLY, 4.0, 9.0, accuracy)])
            got = wp.summary_of(d, "linformer x", wp.EARLY)
            self.assertEqual(list(got["models"]), ["full_post"])
            self.assertAlmostEqual(got["models"]["full_post"]["accuracy_mean"], 0.7)
            self.assertEqual(got["models"]["full_post"]["onsets"], [wp.EARLY, wp.EARLY])
            with self.assertRaisesRegex(SystemExit, r"full_post_s1: ends at update 400, not 500"):
                wp.summary_of(d, "linformer x", 500)
            write_metrics(os.path.join(d, "runs", "nothing_s1"), [valid_row(wp.EARLY, 4.0, 9.0, 0.1)])
            with self.assertRaisesRegex(SystemExit, r"\['nothing_s1'\] are no model"):
                wp.summary_of(d, "linformer x", wp.EARLY)

    def test_every_recipe_is_valid_toml_with_its_model_and_seed(self):
        for model, (_, lines) in wp.MODELS.items():
            recipe = tomllib.loads(wp.recipe_text("/w", model, 3, 4000))
            self.assertEqual(recipe["seed"], 3)
            self.assertEqual(recipe["train"]["max_updates"], 4000)
            self.assertTrue(recipe["validation"]["shuffle_words"])
            for line in lines["model"]:
                key, value = (s.strip() for s in line.split("="))
                self.assertEqual(recipe["model"][key], tomllib.loads(f"v = {value}")["v"], (model, key))


class CommittedResults(unittest.TestCase):
    def test_the_committed_summary_is_what_its_metrics_give(self):
        wp.main(["check", os.path.join(ROOT, "results", "word_pairs")])

    def test_the_readme_table_is_the_scripts_output(self):
        folder = os.path.join(ROOT, "results", "word_pairs")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            wp.main(["table", folder])
        with open(os.path.join(folder, "README.md")) as f:
            self.assertIn(out.getvalue(), f.read())

    def test_the_guide_cites_the_summary(self):
        with open(os.path.join(ROOT, "results", "word_pairs", "summary.json")) as f:
            m = json.load(f)["models"]
        with open(os.path.join(ROOT, "docs", "results.md")) as f:
            guide = " ".join(f.read().split())

        def onsets(*models):
            o = [x for model in models for x in m[model]["onsets"]]
            return f"{min(o):,}–{max(o):,}"

        lowest = min(min(v["word_order_ratios"]) for v in m.values())
        early = {k: f"{m[k]['early_accuracy_mean']:.2f} ± {m[k]['early_accuracy_sd']:.2f}"
                 for k in ("full_post", "linformer_k8_post")}
        for text in (f"learns the pairs to {m['full_post']['accuracy_mean']:.2f} masked accuracy",
                     f"at least {lowest:,.0f}× worse on shuffled text",
                     f"comes after {onsets('full_post', 'full_pre')} updates with the recipes' initialisation",
                     f"and after {max(m['full_post_std05']['onsets'])} at every seed with σ = 0.05",
                     f"onsets at {onsets('linformer_k8_post', 'linformer_k8_pre')} updates",
                     f"{early['linformer_k8_post']} at 400 updates against full attention's {early['full_post']}"):
            self.assertIn(text, guide)
        self.assertEqual(len(set(m["full_post_std05"]["onsets"])), 1, "the guide says 'at every seed'")

    def test_a_changed_summary_is_caught(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(ROOT, "results", "word_pairs"), os.path.join(d, "wp"))
            path = os.path.join(d, "wp", "summary.json")
            with open(path) as f:
                summary = json.load(f)
            summary["models"]["full_post"]["accuracy_mean"] += 0.01
            with open(path, "w") as f:
                json.dump(summary, f)
            with self.assertRaisesRegex(SystemExit, "is not what"):
                wp.main(["check", os.path.join(d, "wp")])


class EndToEnd(unittest.TestCase):
    def test_one_short_run_gives_a_summary_and_a_table(self):
        with tempfile.TemporaryDirectory() as d:
            wp.main(["run", d, "--binary", BINARY, "--seeds", "1", "--updates", str(wp.EARLY), "--models", "full_pre"])
            wp.main(["check", d])
            with open(os.path.join(d, "summary.json")) as f:
                summary = json.load(f)
            self.assertEqual(list(summary["runs"]), ["full_pre_s1"])
            self.assertEqual(len(summary["runs"]["full_pre_s1"]["accuracy_by_update"]), wp.EARLY // wp.VALIDATE_EVERY)
            with self.assertRaisesRegex(SystemExit, r"unknown model\(s\) \['nope'\]"):
                wp.main(["run", d, "--binary", BINARY, "--models", "nope"])


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
