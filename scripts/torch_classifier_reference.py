#!/usr/bin/env python3
"""Independent PyTorch reference of the sequence classifier used by fine-tuning.

The encoder is scripts/torch_reference.py's; on it, RoBERTa's classification head:
    h = encoder(ids)[:, 0]; logits = tanh(h W_denseᵀ + b_dense) W_outᵀ + b_out      (B, L)
and the mean cross-entropy over the B documents. Dropout is off; float64 by default.

    torch_classifier_reference.py --weights W.safetensors --batch B.safetensors --out OUT.safetensors
W: the encoder's tensors (no mlm_head.*) and classifier.{dense,out}.{weight,bias}, with the
weights format's metadata. B: ids (B, T), lengths (B), labels (B), all I32.
OUT: loss [1], logits (B, L) and grad.<name> for every trainable parameter.
Every input error exits with status 1 and a message naming the tensor.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402
import torch_reference as ref  # noqa: E402

HEAD = ("classifier.dense.weight", "classifier.dense.bias", "classifier.out.weight", "classifier.out.bias")


def read_classifier_weights(path):
    tensors, metadata = safetensors_io.load(path)
    if metadata.get("format") != ref.WEIGHTS_FORMAT or "model" not in metadata:
        raise ref.InputError(f"{path}: not a linformer weights file")
    cfg = ref.parse_config(json.loads(metadata["model"]), f"{path}: __metadata__['model']")
    for name in HEAD:
        if name not in tensors:
            raise ref.InputError(f"{path}: missing tensor '{name}'")
    encoder = {n: t for n, t in tensors.items() if n not in HEAD}
    expected = {n: s for n, s in ref.parameter_shapes(cfg).items() if not n.startswith("mlm_head.")}
    # check_weights wants the MLM head too: add it, zero, so only the encoder's tensors are checked here.
    full = dict(encoder)
    for name, shape in ref.parameter_shapes(cfg).items():
        if name.startswith("mlm_head."):
            if name in encoder:
                raise ref.InputError(f"{path}: unexpected tensor '{name}' in a classifier")
            full[name] = torch.zeros(shape)
    ref.check_weights(cfg, full, path)
    labels, C = tensors["classifier.out.weight"].shape
    if tuple(tensors["classifier.dense.weight"].shape) != (cfg.d_model, cfg.d_model) or C != cfg.d_model:
        raise ref.InputError(f"{path}: classifier tensors do not match d_model {cfg.d_model}")
    assert set(encoder) == set(expected)
    return cfg, tensors


def classify(params, cfg, batch, labels):
    h = ref.encode(params, cfg, batch)[:, 0, :]
    logits = ref.linear(torch.tanh(ref.linear(h, params, "classifier.dense")), params, "classifier.out")
    loss = F.cross_entropy(logits, labels, reduction="sum") / labels.shape[0]
    return loss, logits


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", required=True)
    p.add_argument("--batch", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    args = p.parse_args(argv)
    try:
        dtype = torch.float64 if args.dtype == "float64" else torch.float32
        cfg, weights = read_classifier_weights(args.weights)
        b, _ = safetensors_io.load(args.batch)
        for name in ("ids", "lengths", "labels"):
            if name not in b:
                raise ref.InputError(f"{args.batch}: missing tensor '{name}'")
        empty = torch.zeros(0, dtype=torch.int64)
        batch = ref.Batch(b["ids"].long(), b["lengths"].long(), empty, empty)
        params = {n: t.to(dtype).requires_grad_(n in HEAD or ref.is_trainable(cfg, n)) for n, t in weights.items()}
        loss, logits = classify(params, cfg, batch, b["labels"].long())
        trainable = [n for n, t in params.items() if t.requires_grad]
        grads = torch.autograd.grad(loss, [params[n] for n in trainable], allow_unused=True)
        out = {"loss": loss.detach().reshape(1), "logits": logits.detach()}
        out.update({"grad." + n: torch.zeros_like(params[n]) if g is None else g for n, g in zip(trainable, grads)})
        safetensors_io.save(args.out, {n: t.detach() for n, t in out.items()},
                            {"format": "linformer-reference-output", "mode": "classifier",
                             "source": "scripts/torch_classifier_reference.py"})
    except (ref.InputError, safetensors_io.SafetensorsError, OSError) as e:
        print(f"torch_classifier_reference.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
