#!/usr/bin/env python3
"""How local a Linformer's learned projections are: for each row of E and F (one compressed key or
value, a weighted sum over the n positions), the number of positions it effectively mixes, the
participation ratio of its squared weights, (sum e^2)^2 / sum e^4: 1 for a row on one position,
n for equal weights, about n/3 for the N(0, sigma) rows a model starts from. A row can only stand
for a query's neighbours if it mixes few positions.

  projection_locality.py CHECKPOINT_OR_RUN_DIR ... [--json FILE]

Prints, per checkpoint and projection tensor, the median, smallest and largest participation
ratio over its rows, beside n/3 (random) and n (uniform); for per-head projections (sharing
"none", shape heads x k x n) also each head's median.
"""

import argparse
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


# A layer's E and F (sharing none, headwise, kv: F absent) and the whole model's E = F (layerwise).
PROJECTIONS = ("proj_e", "proj_f", "shared_proj")


def participation_ratios(rows):
    """(rows, n) weights -> (rows,) effective number of positions each mixes."""
    p = np.asarray(rows, dtype=np.float64) ** 2
    p = p / p.sum(axis=1, keepdims=True)
    return 1.0 / (p ** 2).sum(axis=1)


def weights_file(path):
    """A checkpoint directory's model.safetensors, or a run directory's newest checkpoint's."""
    if os.path.isfile(os.path.join(path, "model.safetensors")):
        return os.path.join(path, "model.safetensors")
    done = sorted(c for c in glob.glob(os.path.join(path, "checkpoints", "checkpoint_*"))
                  if os.path.exists(os.path.join(c, "DONE")))
    if not done:
        raise SystemExit(f"projection_locality: {path}: neither a checkpoint (model.safetensors) nor a run "
                         f"directory with a finished checkpoint")
    return os.path.join(done[-1], "model.safetensors")


def locality(path):
    """[{tensor, shape, n, median, min, max}] for each learned projection of a checkpoint."""
    tensors, _ = safetensors_io.load(weights_file(path))
    out = []
    for name in sorted(t for t in tensors if t.rsplit(".", 1)[-1] in PROJECTIONS):
        w = tensors[name].numpy()
        n = w.shape[-1]
        pr = participation_ratios(w.reshape(-1, n))
        row = {"tensor": name, "shape": list(w.shape), "n": n, "median": float(np.median(pr)),
               "min": float(pr.min()), "max": float(pr.max())}
        if w.ndim == 3:  # sharing "none": (heads, k, n), one projection per head
            row["head_medians"] = [float(np.median(h)) for h in pr.reshape(w.shape[0], -1)]
        out.append(row)
    if not out:
        raise SystemExit(f"projection_locality: {path}: no learned projections (proj_e, proj_f, shared_proj): not a Linformer "
                         f"with linear projections")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    report = {}
    for path in args.checkpoints:
        report[path] = locality(path)
        for r in report[path]:
            heads = (", per head " + ", ".join(f"{m:.0f}" for m in r["head_medians"])) if "head_medians" in r else ""
            print(f"{path}: {r['tensor']} {tuple(r['shape'])}: positions mixed per row: median {r['median']:.0f}{heads}, "
                  f"min {r['min']:.0f}, max {r['max']:.0f} (random about {r['n'] / 3:.0f}, uniform {r['n']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
