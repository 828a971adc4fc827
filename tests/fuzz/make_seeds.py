#!/usr/bin/env python3
"""Writes the hand-made seeds of the corpus, shard and recipe fuzz targets into
tests/fuzz/<target>/seeds/ (the other targets export theirs: tests/fuzz/README.md), and the
libFuzzer dictionaries tests/fuzz/<target>/<target>.dict that scripts/fuzz.sh passes. Run it again after changing it; the seeds are committed, so CI does not run it."""
import gzip
import os
import re
import shutil
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "corpus")


def write(target, name, data):
    path = os.path.join(HERE, target, "seeds", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def corpus_seeds():
    # Byte 0 is the options byte of fuzz_corpus.cpp: format (bits 0-1), document_per_line
    # (bit 2), file named .jsonl (bit 3). gzip's mtime is fixed so the bytes are reproducible.
    def gz(data):
        return gzip.compress(data, mtime=0)
    write("corpus", "text_auto", b"\x00" + fixture("mixed.txt"))
    write("corpus", "text_per_line", b"\x05" + fixture("mixed.txt"))
    write("corpus", "jsonl", b"\x02" + fixture("docs.jsonl"))
    write("corpus", "jsonl_by_name", b"\x08" + fixture("docs.jsonl"))
    write("corpus", "wikiextractor_auto", b"\x00" + fixture("wiki.txt"))
    write("corpus", "wikiextractor", b"\x03" + fixture("wiki.txt"))
    write("corpus", "text_gzip", b"\x00" + gz(fixture("mixed.txt")))
    write("corpus", "jsonl_gzip", b"\x0a" + gz(fixture("docs.jsonl")))
    write("corpus", "invalid_utf8", b"\x01" + b"caf\xe9 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf end\r\n\n\xff\n")


SHARD_MAGIC = b"LFSHARD\0"


def shard(documents, vocab_size, vocab_hash=0x1234_5678_9ABC_DEF0):
    """A token shard as data::ShardWriter writes it (include/linformer/data/shard.h)."""
    width = 2 if vocab_size <= 65536 else 4
    tokens = [t for d in documents for t in d]
    body = struct.pack(f"<{len(tokens)}{'H' if width == 2 else 'I'}", *tokens)
    body += b"\0" * ((-(64 + len(body))) % 8)
    offsets = [0]
    for d in documents:
        offsets.append(offsets[-1] + len(d))
    body += struct.pack(f"<{len(offsets)}Q", *offsets)
    file_bytes = 64 + len(body)

    def header(checksum):
        return struct.pack("<8sIIQQQIIQ8s", SHARD_MAGIC, 1, width, len(tokens), len(documents), vocab_hash,
                           vocab_size, checksum, file_bytes, b"\0" * 8)
    return header(zlib.crc32(header(0) + body)) + body


def shard_seeds():
    write("shard", "three_documents", shard([[1, 7, 8, 2], [1, 9, 2], [1, 10, 11, 12, 2]], 16))
    write("shard", "wide_ids", shard([[1, 70000, 2], [1, 65536, 69999, 2]], 70001))
    write("shard", "empty", shard([], 16))
    write("shard", "empty_documents", shard([[], [1, 5, 2], []], 8))


def recipe_seeds():
    # The fuzz target puts recipes/brown/base.toml beside the recipe as base.toml.
    def recipe(path):
        with open(os.path.join(ROOT, "recipes", path), "rb") as f:
            return f.read().replace(b'base = "../brown/base.toml"', b'base = "base.toml"')
    for name in ("brown/base.toml", "brown/default.toml", "ci/tiny.toml", "brown/linformer_n512_k64_nonuniform.toml",
                 "brown/transformer_n512.toml", "paper/base.toml"):
        write("recipe", name.replace("/", "_"), recipe(name))
    write("recipe", "empty.toml", b"")
    write("recipe", "overrides.toml", b'name = "x"\n[model]\nk = 8\n#--set\nmodel.k=16\ndata.corpus=["a.txt", "b.jsonl.gz"]\n'
          b"model.attention=full\ntrain.max_minutes=1.5\n")
    write("recipe", "errors.toml", b'[model]\nkk = 3\nlayers = "four"\nheads = 3\n[optim]\nlr = -1\n'
          b"[nosuch]\nx = 1\n")
    write("recipe", "every_type.toml", b'seed = 7\nthreads = 2\n[data]\ncorpus = ["x", "y/*.txt"]\n'
          b'format = "jsonl"\ndocument_per_line = true\nvalid_fraction = 0.1\n[model]\nk_per_layer = [8, 8, 4, 4]\n'
          b'dropout = 0.0\nlayer_norm_eps = 1e-6\n[optim]\nschedule = "cosine"\nlr = 3e-4\n')


# Tokens a mutation is unlikely to spell by chance: the numbers at the edges of the integer
# types, and every key the parsers look up.
EDGE_NUMBERS = ["0", "-1", "1", "2147483647", "2147483648", "4294967295", "4294967296", "9223372036854775807",
                "9223372036854775808", "18446744073709551615", "1e308", "-1e308", "1e-320", "0.5"]
JSON_TOKENS = ["null", "true", "false", "[]", "{}", '""', "[0, 0]"] + EDGE_NUMBERS


def write_dict(target, tokens):
    path = os.path.join(HERE, target, f"{target}.dict")
    with open(path, "w") as f:
        f.write(f"# libFuzzer dictionary of fuzz_{target} (written by tests/fuzz/make_seeds.py)\n")
        for token in dict.fromkeys(tokens):  # libFuzzer's escapes: \\, \" and \xAB only
            f.write('"' + "".join(c if " " <= c <= "~" and c not in '"\\' else
                                  "".join(f"\\x{b:02X}" for b in c.encode()) for c in token) + '"\n')


def dictionaries():
    # The recipe keys and their choices from the guide's reference (a test keeps it current).
    with open(os.path.join(ROOT, "docs", "recipes.md")) as f:
        reference = f.read().split("<!-- recipe-reference:begin -->")[1].split("<!-- recipe-reference:end -->")[0]
    keys = re.findall(r"^\| `([a-z_0-9.]+)` \|", reference, re.M)
    choices = [c for line in re.findall(r"\| one of: ([^|]+) \|", reference) for c in re.split(r", | or ", line.strip())]
    sections = sorted({k.split(".")[0] for k in keys if "." in k})
    toml = ["base", '"base.toml"', "\n#--set\n", "inf", "nan", "-inf", "1_000", "0x10", "1979-05-27", '"""', "'''"]
    write_dict("recipe", [f"[{s}]" for s in sections] + keys + [k.split(".")[-1] for k in keys] +
               [f'"{c}"' for c in choices] + toml + EDGE_NUMBERS)
    write_dict("safetensors", JSON_TOKENS + ['"__metadata__"', '"dtype"', '"shape"', '"data_offsets"', '"F32"', '"F64"',
                                             '"I32"', '"I64"', '"format"', '"format_version"', '"model"',
                                             '"linformer-weights"', '"1"'])
    write_dict("checkpoint", JSON_TOKENS + ['"format"', '"format_version"', '"linformer-checkpoint"', '"files"',
                                            '"state"', '"model"', '"model.safetensors"', '"optimizer.safetensors"',
                                            '"tokenizer.model"', '"recipe.toml"', '"update"', '"micro_step"',
                                            '"tokens"', '"epoch"', '"position"', '"elapsed_seconds"',
                                            '"best_valid_loss"', '"best_update"', '"validations_since_best"',
                                            '"interval"', '"data"', '"../"', '"/dev/zero"'])
    write_dict("prepared_meta", JSON_TOKENS + ['"format"', '"version"', '"linformer-prepared"', '"tokenizer"',
                                               '"hash"', '"file"', '"spm.model"'])


if __name__ == "__main__":
    for target in ("corpus", "shard", "recipe"):
        shutil.rmtree(os.path.join(HERE, target, "seeds"), ignore_errors=True)
    corpus_seeds()
    shard_seeds()
    recipe_seeds()
    dictionaries()
