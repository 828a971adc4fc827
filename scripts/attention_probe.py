#!/usr/bin/env python3
"""What a trained encoder's attention does, per layer and head, on blocks of real text: how spread
it is, how much of each query's output comes from its neighbours' values, and its rank; the same
measures for full attention and a Linformer, so the two can be compared position by position.

  attention_probe.py CHECKPOINT_OR_RUN_DIR ... --prepared DIR [--split valid] [--blocks 8]
                     [--window 2] [--json FILE]

Each block is <s> and the next seq_len - 1 tokens of the split's token stream, at evenly spaced
places (fixed windows, never padded: padding plays no part), unmasked. The model is the PyTorch
reference's (scripts/torch_reference.py), run in float32. For each layer and head, averaged over
queries and blocks:

  entropy     of each query's attention over its keys (T positions, or a Linformer's K compressed
              keys, and with a local band its up to 2w + 1 band keys), over ln(keys): 1 uniform,
              0 all on one key
  band        with a local band (model.local_window = w): the share of each query's attention on
              its band keys (the rest is on the compressed keys)
  value mix   A = P for full attention, A = P M for a Linformer (M the K x T matrix its values are
              compressed by: F's first T columns, or the pooling): row i is the weight query i's
              output puts on each position's value (the value bias adds the same to every row).
              From |A|, each row scaled to sum 1:
    neighbours  the share on positions 1 to w away
    self        the share on the query's own position
    distance    the mean distance |i - j|
  rank90      how many of A's singular values hold 90% of their sum (median over blocks): the
              paper's Figure 1 measure; a Linformer's A has rank at most K

Each is printed beside its value for uniform weights. For each learned projection tensor (E, F,
per head when unshared): rank90 of its K x n matrix. Max pooling has no matrix M: only entropy.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import projection_locality  # noqa: E402
import torch_reference as ref  # noqa: E402

SHARD_HEADER = struct.Struct("<8sIIQQQIIQ8s")  # include/linformer/data/shard.h, ShardHeader
SHARD_MAGIC = b"LFSHARD\0"


def read_tokens(path):
    """The token stream of a shard file (every document, in order) as an int64 array."""
    with open(path, "rb") as f:
        head = f.read(SHARD_HEADER.size)
        if len(head) < SHARD_HEADER.size:
            raise SystemExit(f"attention_probe: {path}: shorter than a shard header ({len(head)} bytes)")
        magic, version, token_bytes, count = SHARD_HEADER.unpack(head)[:4]
        if magic != SHARD_MAGIC or version != 1 or token_bytes not in (2, 4):
            raise SystemExit(f"attention_probe: {path}: not a version-1 token shard (magic {magic!r}, "
                             f"version {version}, {token_bytes} bytes a token)")
        tokens = np.fromfile(f, dtype="<u2" if token_bytes == 2 else "<u4", count=count)
    if len(tokens) != count:
        raise SystemExit(f"attention_probe: {path}: truncated: {len(tokens)} of {count} tokens")
    return tokens.astype(np.int64)


def blocks(tokens, bos, seq_len, count):
    """(count, seq_len) ids: <s> and the next seq_len - 1 tokens, at evenly spaced stream offsets."""
    if len(tokens) < seq_len - 1:
        raise SystemExit(f"attention_probe: the split has {len(tokens)} tokens, fewer than a block's {seq_len - 1}")
    starts = np.linspace(0, len(tokens) - (seq_len - 1), count).astype(np.int64)
    ids = np.stack([tokens[s:s + seq_len - 1] for s in starts])
    return torch.from_numpy(np.concatenate([np.full((count, 1), bos), ids], axis=1))


def distances(T):
    i = torch.arange(T)
    return (i[:, None] - i[None, :]).abs().double()  # (T, T)


def rank90(matrices):
    """(..., R, C) -> (...,) the number of singular values holding 90% of their sum."""
    s = torch.linalg.svdvals(matrices.double())
    share = s.cumsum(-1) / s.sum(-1, keepdim=True)
    return (share < 0.9 - 1e-12).sum(-1) + 1


def value_mix_stats(A, window):
    """A (B, H, T, T) -> per head (H,) neighbours, self, distance, rank90 (see the module doc)."""
    T = A.shape[-1]
    W = A.double().abs()
    W = W / W.sum(-1, keepdim=True)
    d = distances(T)
    near = ((d >= 1) & (d <= window)).double()
    return {"neighbours": (W * near).sum(-1).mean((0, 2)).tolist(),
            "self": W.diagonal(dim1=-2, dim2=-1).mean((0, 2)).tolist(),
            "distance": (W * d).sum(-1).mean((0, 2)).tolist(),
            "rank90": rank90(A).median(0).values.tolist()}


def uniform_stats(T, window):
    """The value-mix measures of uniform weights over T positions (one block, one head)."""
    return {k: v[0] for k, v in value_mix_stats(torch.full((1, 1, T, T), 1.0 / T), window).items()}


def entropies(P, keys=None):
    """P (B, H, T, columns) -> per head (H,) mean entropy over ln(keys): keys (T,) the keys each
    query can attend to, or every column."""
    P = P.double()
    h = -(P * torch.log(P.clamp_min(1e-300))).sum(-1)
    keys = torch.full((P.shape[-2],), P.shape[-1], dtype=torch.float64) if keys is None else keys.double()
    return (h / torch.log(keys)).mean((0, 2)).tolist()


def band_keys(T, window):
    """(T,) how many positions lie at most `window` away from each of T positions, itself included."""
    i = torch.arange(T)
    return torch.clamp(i, max=window) + torch.clamp(T - 1 - i, max=window) + 1


def projection_ranks(tensors):
    """{tensor: rank90, or a list per head} of each learned K x n projection."""
    out = {}
    for name in sorted(t for t in tensors if t.rsplit(".", 1)[-1] in projection_locality.PROJECTIONS):
        w = tensors[name]
        if w.dim() >= 2:  # a conv projection's kernel is a vector
            r = rank90(w)
            out[name] = r.tolist() if w.dim() == 3 else int(r)
    return out


def probe(path, prepared, split="valid", count=8, window=2):
    """{model, layers: [{entropy, neighbours, self, distance, rank90} per head], uniform, projections}."""
    cfg, tensors = ref.read_weights(projection_locality.weights_file(path))
    with open(os.path.join(prepared, "meta.json")) as f:
        bos = json.load(f)["special_ids"]["bos"]
    ids = blocks(read_tokens(os.path.join(prepared, f"{split}.bin")), bos, cfg.seq_len, count)
    if int(ids.max()) >= cfg.vocab_size:
        raise SystemExit(f"attention_probe: {prepared}: token id {int(ids.max())} is outside the model's vocabulary "
                         f"of {cfg.vocab_size}: not the data this model was trained on")
    batch = ref.Batch(ids=ids, lengths=torch.full((count,), cfg.seq_len, dtype=torch.int64),
                      masked_positions=torch.zeros(0, dtype=torch.int64), targets=torch.zeros(0, dtype=torch.int64))
    layers = [None] * cfg.layers

    w = cfg.local_window if cfg.linformer else 0

    def observe(layer, probs, value_mix):
        stats = {"entropy": entropies(probs), "keys": probs.shape[-1]}
        if w:  # the reference's probabilities: K compressed keys, then T band columns (0 off the band)
            K = probs.shape[-1] - cfg.seq_len
            stats.update(entropy=entropies(probs, K + band_keys(cfg.seq_len, w)), keys=f"{K} + {2 * w + 1}",
                         band=probs[..., K:].double().sum(-1).mean((0, 2)).tolist())
        if not cfg.linformer:
            stats.update(value_mix_stats(probs, window))
        elif value_mix is not None:
            stats.update(value_mix_stats(probs @ value_mix, window))
        layers[layer] = stats

    with torch.no_grad():
        ref.encode(tensors, cfg, batch, observe)
    model = {"attention": cfg.attention, "seq_len": cfg.seq_len, "k_per_layer": list(cfg.k_per_layer),
             "sharing": cfg.sharing, "projection": cfg.projection, "heads": cfg.heads}
    return {"model": model, "split": split, "blocks": count, "window": window, "layers": layers,
            "uniform": uniform_stats(cfg.seq_len, window), "projections": projection_ranks(tensors)}


def report_text(path, r):
    m, u = r["model"], r["uniform"]
    kind = "full attention" if m["attention"] == "full" else \
        f"Linformer k = {m['k_per_layer']}, {m['sharing']}, {m['projection']}"
    lines = [f"{path}: {kind}, n = {m['seq_len']}; {r['blocks']} blocks of the {r['split']} split; "
             f"uniform weights: neighbours (1-{r['window']} away) {u['neighbours']:.3f}, self {u['self']:.4f}, "
             f"distance {u['distance']:.1f}, rank90 {u['rank90']}"]
    for i, layer in enumerate(r["layers"]):
        for h in range(m["heads"]):
            cells = [f"entropy {layer['entropy'][h]:.2f} of {layer['keys']} keys"]
            if "band" in layer:
                cells.append(f"band {layer['band'][h]:.3f}")
            if "neighbours" in layer:
                cells += [f"neighbours {layer['neighbours'][h]:.3f}", f"self {layer['self'][h]:.3f}",
                          f"distance {layer['distance'][h]:.1f}", f"rank90 {layer['rank90'][h]}"]
            lines.append(f"  layer {i} head {h}: " + ", ".join(cells))
    for name, rank in r["projections"].items():
        lines.append(f"  {name}: rank90 {rank}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--prepared", required=True, help="the prepared data directory the models were trained on")
    parser.add_argument("--split", default="valid", choices=("train", "valid", "test"))
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--window", type=int, default=2, help="neighbours: positions 1 to WINDOW away")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    if args.blocks < 1 or args.window < 1:
        parser.error("--blocks and --window must be at least 1")
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    report = {}
    for path in args.checkpoints:
        try:
            report[path] = probe(path, args.prepared, args.split, args.blocks, args.window)
        except (ref.InputError, OSError) as e:
            raise SystemExit(f"attention_probe: {path}: {e}") from None
        print(report_text(path, report[path]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
