"""scripts/finetune_experiments.py report: the table's means and standard deviations over seeds,
seconds per epoch from the validation rows, missing runs said, the average over tasks marked
incomplete when a task lacks a run; run refuses a --task, --encoder or --seed the manifest does
not list, naming what it lists."""
import json
import math
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import finetune_experiments as fe  # noqa: E402

MACHINE = {"kind": "avx2", "cpu": "test CPU", "commit": "abc1234"}


def write_run(results, task, encoder, seed, accuracy, epoch_seconds, peak_rss_mb=1000.0, encoder_valid_ppl=None):
    d = os.path.join(results, "runs", task, f"{encoder}_s{seed}")
    os.makedirs(d)
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump({"valid": {"accuracy": accuracy}, "test": {"accuracy": accuracy, "macro_f1": accuracy / 2}}, f)
    with open(os.path.join(d, "run.json"), "w") as f:
        json.dump({"machine": MACHINE, "peak_rss_mb": peak_rss_mb, "encoder_valid_ppl": encoder_valid_ppl}, f)
    rows = ["kind,update,elapsed_seconds"]
    for e in range(1, 4):
        rows.append(f"train,{e},{e * epoch_seconds - 1}")
        rows.append(f"valid,{e},{e * epoch_seconds}")
    with open(os.path.join(d, "metrics.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


def fake_binary(folder, script):
    """FOLDER/linformer, a shell script logging each call's arguments to FOLDER/calls; and that log's path."""
    binary, calls = os.path.join(folder, "linformer"), os.path.join(folder, "calls")
    with open(binary, "w") as f:
        f.write(script.format(calls=calls))
    os.chmod(binary, 0o755)
    return binary, calls


class Report(unittest.TestCase):
    def test_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifest = os.path.join(tmp, "m.toml")
            with open(manifest, "w") as f:
                f.write('budget = "Two tasks, two seeds; n = 2048 cut."\n'
                        '[[table]]\nname = "n512"\ntasks = ["a.toml", "b.toml"]\n'
                        'encoders = ["tr", "lin", "lin2", "none"]\nseeds = [1, 2]\nreference = "tr"\n'
                        'tolerance = 0.5\n')
            results = os.path.join(tmp, "results")
            write_run(results, "a", "lin", 1, 0.80, 10)
            write_run(results, "a", "lin", 2, 0.90, 12, peak_rss_mb=1200.0)
            write_run(results, "b", "lin", 1, 0.50, 30)
            write_run(results, "a", "none", 1, 0.60, 10)
            write_run(results, "a", "tr", 1, 0.86, 10)
            write_run(results, "b", "tr", 1, 0.60, 10)
            write_run(results, "a", "lin2", 1, 0.857, 10)
            fe.report(lambda m: None, manifest, results)
            with open(os.path.join(results, "README.md")) as f:
                text = f.read()
            # mean 85.0, sample standard deviation 7.07, two seeds; median epoch time of 10 and 12.
            self.assertIn("| lin | 85.0 ± 7.1 (2) | 42.5 ± 3.5 (2) | 85.0 ± 7.1 (2) | 12 | 1,200 |", text)
            self.assertIn("| none | not run yet | | | | |", text.split("### b")[1])
            self.assertIn("| lin | 67.5 | 2 of 2 |", text)  # (85 + 50) / 2
            self.assertIn("| none | 60.0 (incomplete) | 1 of 2 |", text)
            self.assertIn("avx2 (test CPU), commit abc1234", text)
            self.assertIn("## Budget: what was run and what was cut\n\nTwo tasks, two seeds; n = 2048 cut.", text)
            # lin against tr over both tasks: (85 + 50) / 2 = 67.5 against (86 + 60) / 2 = 73.0; none lacks task b.
            # No encoder has two seeds on both tasks: no noise, so no interval and no verdict.
            self.assertIn("| lin | 2 of 2 | 1–2 | 67.5 | 73.0 | -5.5 | – | cannot tell at this noise |", text)
            # lin2 on task a only: 85.7 against 86.0, (85.7 - 60) / (86 - 60) = 99% of the gain kept.
            self.assertIn("| lin2 | 1 of 2 | 1 | 85.7 | 86.0 | -0.3 | 99% | cannot tell at this noise (not all tasks) |",
                          text)
            self.assertNotIn("| tr | 1 of 2", text)

    @staticmethod
    def two_task_report(encoders, runs):
        """The report of a table of tasks a and b, reference tr, the paper's half point, from runs
        (encoder, seed, accuracy on a, accuracy on b)."""
        with tempfile.TemporaryDirectory() as tmp:
            manifest = os.path.join(tmp, "m.toml")
            with open(manifest, "w") as f:
                f.write('[[table]]\nname = "n512"\ntasks = ["a.toml", "b.toml"]\n'
                        f'encoders = {json.dumps(encoders)}\nseeds = [1, 2, 3]\nreference = "tr"\ntolerance = 0.5\n')
            results = os.path.join(tmp, "results")
            for encoder, seed, a, b in runs:
                write_run(results, "a", encoder, seed, a, 10)
                write_run(results, "b", encoder, seed, b, 10)
            fe.report(lambda m: None, manifest, results)
            with open(os.path.join(results, "README.md")) as f:
                return f.read()

    def test_verdicts_are_judged_against_the_fine_tuning_seed_noise(self):
        # tr at three seeds whose two-task means are 74, 75, 76: sd 1.0 point, df 2; each Linformer
        # one seed: the difference's interval is ± 4.303 · 1.0 · sqrt(1 + 1/3) = ± 4.97 points.
        tr = [("tr", seed, a, b) for seed, (a, b) in enumerate(((0.84, 0.64), (0.85, 0.65), (0.86, 0.66)), start=1)]
        text = self.two_task_report(["tr", "low", "close", "high"], tr + [
            ("low", 1, 0.70, 0.50), ("close", 1, 0.86, 0.66), ("high", 1, 0.90, 0.70)])
        self.assertIn("σ = 1.00 points (df 2)", text)
        # low 60 against 75: -15 ± 4.97, all below -0.5; close 76: +1 ± 4.97 straddles it; high 80: +5 ± 4.97.
        self.assertIn("| low | 2 of 2 | 1 | 60.0 | 75.0 | -15.0 [-20.0, -10.0] | – | disagrees |", text)
        self.assertIn("| close | 2 of 2 | 1 | 76.0 | 75.0 | +1.0 [-4.0, +6.0] | – | cannot tell at this noise |", text)
        self.assertIn("| high | 2 of 2 | 1 | 80.0 | 75.0 | +5.0 [+0.0, +10.0] | – | agrees |", text)

    def test_each_encoders_own_noise_is_a_welch_interval_worked_out_here(self):
        # tr's two-task means 74, 75, 76 (sd 1.0), wide's 70, 74, 78 (sd 4.0), one's a single seed.
        # Pooled: σ² = (2 + 32) / 4, ± 2.776 · σ · sqrt(2/3) = ± 6.61 around -1. Welch: variances of
        # the means 16/3 and 1/3, df (17/3)² / ((16/3)² / 2 + (1/3)² / 2) = 2.25, so t(0.975, 2) =
        # 4.303 and ± 4.303 · sqrt(17/3) = ± 10.24; one (a seed): ± 2.776 · σ · sqrt(4/3) = ± 9.35 around -5.
        runs = [("one", 1, 0.80, 0.60)]
        for seed, (tr, wide) in enumerate(((0.74, 0.70), (0.75, 0.74), (0.76, 0.78)), start=1):
            runs += [("tr", seed, tr + 0.09, tr - 0.09), ("wide", seed, wide + 0.09, wide - 0.09)]
        text = self.two_task_report(["tr", "wide", "one"], runs)
        self.assertIn(f"σ = {math.sqrt(34 / 4):.2f} points (df 4)", text)
        self.assertIn("| wide | 2 of 2 | 3 | 74.0 | 75.0 | -1.0 [-7.6, +5.6] | – | cannot tell at this noise | "
                      "[-11.2, +9.2]; cannot tell at this noise |", text)
        self.assertIn("| one | 2 of 2 | 1 | 70.0 | 75.0 | -5.0 [-14.3, +4.3] | – | cannot tell at this noise | "
                      "– (one seed) |", text)

    def test_an_encoder_pretrained_twice_is_named(self):
        # lin's seed 3 read a checkpoint pretrained again (another final validation perplexity);
        # same's runs agree, old's predate the field (and read the published pretraining): neither
        # is named; mixed's seed 1 predates the field, its seed 2 read another pretraining than the
        # published one: named.
        with tempfile.TemporaryDirectory() as tmp:
            manifest = os.path.join(tmp, "m.toml")
            with open(manifest, "w") as f:
                f.write('[[table]]\nname = "n512"\ntasks = ["a.toml", "b.toml"]\n'
                        'encoders = ["lin", "same", "old", "mixed"]\nseeds = [1, 2, 3]\n')
            published = os.path.join(tmp, "pretraining")
            for encoder, ppl in (("old", 60.0), ("mixed", 384.375)):
                os.makedirs(os.path.join(published, encoder))
                with open(os.path.join(published, encoder, "metrics.jsonl"), "w") as f:
                    f.write(json.dumps({"kind": "valid", "update": 10, "perplexity": 999.0}) + "\n")
                    f.write(json.dumps({"kind": "valid", "update": 20, "perplexity": ppl}) + "\n")
            write_run(os.path.join(tmp, "results"), "a", "mixed", 1, 0.8, 10)
            write_run(os.path.join(tmp, "results"), "a", "mixed", 2, 0.8, 10, encoder_valid_ppl=250.5)
            results = os.path.join(tmp, "results")
            for seed, ppl in ((1, 45.51), (2, 45.51), (3, 47.125)):
                write_run(results, "a", "lin", seed, 0.8, 10, encoder_valid_ppl=ppl)
            write_run(results, "b", "lin", 1, 0.8, 10, encoder_valid_ppl=45.51)
            write_run(results, "a", "same", 1, 0.8, 10, encoder_valid_ppl=50.0)
            write_run(results, "b", "same", 1, 0.8, 10, encoder_valid_ppl=50.0)
            write_run(results, "a", "old", 1, 0.8, 10)
            fe.report(lambda m: None, manifest, results, published)
            with open(os.path.join(results, "README.md")) as f:
                text = f.read()
            self.assertIn("`results/brown/runs/<encoder>/`): lin (45.51, 47.12); mixed (250.50, 384.38).", text)
            self.assertNotIn("same (", text)
            self.assertNotIn("old (", text)

    def test_a_table_without_a_reference_has_no_verdict(self):
        # A length with no Transformer pretrained (n = 2048): accuracies and costs, no claim checked.
        with tempfile.TemporaryDirectory() as tmp:
            manifest = os.path.join(tmp, "m.toml")
            with open(manifest, "w") as f:
                f.write('[[table]]\nname = "n2048"\ntasks = ["a.toml"]\nencoders = ["lin", "none"]\nseeds = [1]\n')
            results = os.path.join(tmp, "results")
            write_run(results, "a", "lin", 1, 0.75, 20, peak_rss_mb=2345.6)
            fe.report(lambda m: None, manifest, results)
            with open(os.path.join(results, "README.md")) as f:
                text = f.read()
            self.assertIn("| lin | 75.0 ± 0.0 (1) | 37.5 ± 0.0 (1) | 75.0 ± 0.0 (1) | 20 | 2,346 |", text)
            self.assertIn("| none | not run yet | | | | |", text)
            self.assertNotIn("the paper's claim", text)

    def test_a_reference_without_a_tolerance_and_the_reverse_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifest = os.path.join(tmp, "m.toml")
            base = '[[table]]\nname = "t"\ntasks = ["a.toml"]\nencoders = ["tr", "none"]\nseeds = [1]\n'
            for extra, message in (("tolerance = 0.5\n", "'reference' must name"),
                                   ('reference = "none"\ntolerance = 0.5\n', "'reference' must name"),
                                   ('reference = "tr"\n', "'tolerance' must be"),
                                   ('reference = "tr"\ntolerance = -1\n', "'tolerance' must be")):
                with open(manifest, "w") as f:
                    f.write(base + extra)
                with self.assertRaises(SystemExit) as refused:
                    fe.read_manifest(manifest)
                self.assertIn(message, str(refused.exception))


class Selection(unittest.TestCase):
    def test_a_name_not_in_the_manifest_is_refused_before_anything_runs(self):
        manifest = [{"name": "n512", "tasks": ["spam.toml"], "encoders": ["lin", "none"], "seeds": [1, 2]}]
        for option, value, listed in (("task", "spam.toml", "spam"), ("encoder", "linformer", "lin, none"),
                                      ("seed", 3, "1, 2")):
            args = fe.argparse.Namespace(task=None, encoder=None, seed=None)
            setattr(args, option, [value])
            with self.assertRaises(SystemExit) as refused:
                fe.check_selection(args, manifest)
            self.assertIn(f"--{option} {value}: not in", str(refused.exception))
            self.assertIn(f"it lists {listed}", str(refused.exception))
        fe.check_selection(fe.argparse.Namespace(task=["spam"], encoder=["none"], seed=[2]), manifest)

    def test_missing_task_data_is_refused_before_any_pretraining(self):
        # a_long.toml takes a.toml's valid and test files through `base`.
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "recipes", "finetune")
            os.makedirs(folder)
            with open(os.path.join(folder, "a.toml"), "w") as f:
                f.write('[finetune]\ntrain = "data/a/train.jsonl"\nvalid = "data/a/valid.jsonl"\n'
                        'test = "data/a/test.jsonl"\n')
            with open(os.path.join(folder, "a_long.toml"), "w") as f:
                f.write('base = "a.toml"\n[finetune]\ntrain = "data/b/train.jsonl"\n')
            for name in ("a/train", "a/valid", "a/test", "b/train"):
                os.makedirs(os.path.join(tmp, "data", os.path.dirname(name)), exist_ok=True)
                open(os.path.join(tmp, "data", name + ".jsonl"), "w").close()
            manifest = [{"name": "t", "tasks": ["a.toml", "a_long.toml"], "encoders": ["none"], "seeds": [1]}]
            args = fe.argparse.Namespace(task=None, encoder=None, seed=None)
            saved, fe.ROOT = fe.ROOT, tmp
            try:
                fe.check_task_data(args, manifest)  # every file there
                os.remove(os.path.join(tmp, "data", "a", "test.jsonl"))
                for task, recipe in ((None, "a.toml"), (["a_long"], "a_long.toml")):
                    args.task = task
                    with self.assertRaises(SystemExit) as refused:
                        fe.check_task_data(args, manifest)
                    self.assertIn(f"recipes/finetune/{recipe}: finetune.test = 'data/a/test.jsonl' does not exist "
                                  "(scripts/get_classification_data.sh", str(refused.exception))
            finally:
                fe.ROOT = saved


class Encoders(unittest.TestCase):
    def test_an_encoders_final_validation_is_its_last_valid_row(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIsNone(fe.final_valid_ppl(tmp))
            with open(os.path.join(tmp, "metrics.jsonl"), "w") as f:
                for kind, ppl in (("train", 9.0), ("valid", 60.5), ("valid", 45.25), ("train", 8.0)):
                    f.write(json.dumps({"kind": kind, "perplexity": ppl}) + "\n")
            self.assertEqual(fe.final_valid_ppl(tmp), 45.25)

    def test_every_encoder_of_the_manifest_is_a_pretraining_run(self):
        # Each resolves to its recipe, wherever it lives under recipes/brown/ (the warm-up runs are in warmup/).
        encoders = {e for m in fe.read_manifest() for e in m["encoders"]}
        recipes = fe.pretraining_recipes(encoders)
        self.assertEqual(set(recipes), encoders - {fe.RANDOM})
        for encoder, recipe in recipes.items():
            self.assertTrue(os.path.isfile(recipe), recipe)
            self.assertEqual(os.path.basename(recipe), encoder + ".toml")
        self.assertTrue(recipes["linformer_n512_k64_long_sinusoidal_warmup128"].endswith(
            os.path.join("recipes", "brown", "warmup", "linformer_n512_k64_long_sinusoidal_warmup128.toml")))

    def test_a_failed_pretraining_step_stops_naming_it_without_a_traceback(self):
        # The binary fails `prepare` (as when another process holds the prepared data's lock):
        # one line naming the encoder, step and recipe, and `train` never starts.
        with tempfile.TemporaryDirectory() as tmp:
            binary, calls = fake_binary(tmp, '#!/bin/sh\necho "$1" >> {calls}\n[ "$1" = prepare ] && exit 3\nexit 0\n')
            recipe = os.path.join(fe.ROOT, "recipes", "brown", "transformer_n512.toml")
            saved, fe.ROOT = fe.ROOT, tmp
            try:
                with self.assertRaises(SystemExit) as stopped:
                    fe.pretrained("transformer_n512", {"transformer_n512": recipe}, binary, lambda line: None)
            finally:
                fe.ROOT = saved
            self.assertIn("transformer_n512: linformer prepare --recipe", str(stopped.exception))
            self.assertIn("exited with 3", str(stopped.exception))
            with open(calls) as f:
                self.assertEqual(f.read().split(), ["prepare"])

    def test_a_pretraining_stopped_part_way_is_resumed_before_fine_tuning(self):
        # A checkpoint (here at update 678, as a stopped pretraining leaves) does not make an encoder:
        # `train --resume auto` runs first (it finishes the run, or does nothing on a finished one);
        # no checkpoint: prepare, then train.
        with tempfile.TemporaryDirectory() as tmp:
            binary, calls = fake_binary(tmp, '#!/bin/sh\necho "$1 $7" >> {calls}\n')
            recipes = {"a": os.path.join(fe.ROOT, "recipes", "brown", "transformer_n512.toml")}
            saved, fe.ROOT = fe.ROOT, tmp
            try:
                self.assertEqual(fe.pretrained("a", recipes, binary, lambda line: None),
                                 os.path.join(tmp, "runs", "experiments", "a"))
                os.makedirs(os.path.join(tmp, "runs", "experiments", "a", "checkpoints", "checkpoint_00000678"))
                open(os.path.join(tmp, "runs", "experiments", "a", "checkpoints", "checkpoint_00000678", "DONE"),
                     "w").close()
                fe.pretrained("a", recipes, binary, lambda line: None)
                self.assertEqual(fe.pretrained(fe.RANDOM, recipes, binary, lambda line: None), fe.RANDOM)
            finally:
                fe.ROOT = saved
            with open(calls) as f:
                self.assertEqual(f.read().splitlines(), ["prepare ", "train auto", "train auto"])

    def test_an_encoder_with_no_pretraining_run_is_refused_naming_it(self):
        with self.assertRaises(SystemExit) as refused:
            fe.pretraining_recipes({"transformer_n512", "linformer_n512_k65", fe.RANDOM})
        self.assertIn("encoder(s) linformer_n512_k65: no pretraining run of that name", str(refused.exception))


if __name__ == "__main__":
    unittest.main()
