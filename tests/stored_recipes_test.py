"""Every published pretraining run can be trained again from what results/ stores: its
recipe.toml loads with this binary and, for a run of the manifest, resolves to what the
manifest's recipe resolves to (the check run_experiments.sh makes before it calls a run up to
date, and what `--verify` trains from). A key renamed or removed without migrating the stored
recipes fails here, not on a reader's rerun. The other stored pretraining recipes (word pairs,
the archive) must load too.

Usage: stored_recipes_test.py LINFORMER_BINARY   (run from the repository root, as CTest does)
"""
import glob
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from experiments import ExperimentError, read_manifest, resolved_recipe, without_name  # noqa: E402

MANIFEST = os.path.join(ROOT, "recipes", "brown", "experiments.toml")
RUNS = os.path.join(ROOT, "results", "brown", "runs")
BINARY = None


def manifest_recipes():
    """{run name: its recipe in the manifest}, each run once."""
    recipes = {}
    for e in read_manifest(MANIFEST).values():
        for name, recipe in zip(e["names"], e["recipes"]):
            recipes.setdefault(name, recipe)
    return recipes


class StoredRecipes(unittest.TestCase):
    def test_every_published_run_resolves_as_its_manifest_recipe(self):
        recipes = manifest_recipes()
        published = sorted(os.listdir(RUNS))
        self.assertGreater(len(published), 100)
        self.assertEqual([n for n in published if n not in recipes], [],
                         "published runs the manifest does not declare")
        failures = []
        for name in published:
            stored = os.path.join(RUNS, name, "recipe.toml")
            try:
                if without_name(resolved_recipe(BINARY, stored)) != without_name(resolved_recipe(BINARY, recipes[name])):
                    failures.append(f"{stored}: resolves differently from {recipes[name]}")
            except ExperimentError as e:
                failures.append(str(e))
        self.assertEqual(failures, [])

    def test_every_other_stored_pretraining_recipe_loads(self):
        # results/finetune/runs/ is left out: a fine-tuning run before commit bd129b7 ran another
        # loop (finetune.epochs, no [train] stop), which no recipe of this binary reproduces key for
        # key; recipes/finetune/experiments.toml re-creates those runs.
        others = [r for r in glob.glob(os.path.join(ROOT, "results", "**", "recipe.toml"), recursive=True)
                  if not r.startswith((RUNS + os.sep, os.path.join(ROOT, "results", "finetune") + os.sep))]
        self.assertGreater(len(others), 20)
        for recipe in others:
            with self.subTest(recipe=os.path.relpath(recipe, ROOT)):
                resolved_recipe(BINARY, recipe)  # raises, naming the recipe and the binary's error

if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
