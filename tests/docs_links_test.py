"""The front door cannot rot: every relative link and every backticked repository path in the
README, CONTRIBUTING.md, RELIABILITY.md and the guide (docs/*.md) exists, every heading a link
names exists on its page, every folder of results/ has its line in results/INDEX.md, and no
Markdown table cell of the README (the generated verdict block's included) is over 200 characters.

Usage: docs_links_test.py   (no binary needed)
"""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A backticked span that is a repository path, or a command whose first word is one (its other
# words may name outputs that do not exist yet, so only the first is checked).
PATH_ROOTS = ("results/", "recipes/", "scripts/", "docs/", "tests/", "src/", "include/", ".ci/")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
INDEX = os.path.join("results", "INDEX.md")
MAX_CELL = 200  # characters in one README table cell (issue 49: a front page, not a results log)


def documents():
    docs = sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    return ["README.md", "CONTRIBUTING.md", "RELIABILITY.md"] + docs


def prose(text):
    """The text outside fenced code blocks (commands there may name files they create)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(path):
    """GitHub's heading anchors of a Markdown file: lower case, punctuation dropped, spaces as '-'."""
    with open(path) as f:
        text = prose(f.read())
    out = set()
    for heading in re.findall(r"^#+\s+(.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def cited_paths(text):
    """Repository paths in backticks: the whole span, or a command's first word."""
    for span in CODE_SPAN.findall(prose(text)):
        word = span.split()[0] if span.split() else ""
        # not a pattern, a placeholder or a message's file:line
        if word.startswith(PATH_ROOTS) and not re.search(r"[*?{}<>…\[\]|$]|:\d", word):
            yield word.rstrip(".,;:")


def table_cells(text):
    """(line number, cell) for every cell of every Markdown table row outside fenced code blocks:
    a line starting with '|', split on the pipes that are not escaped (GitHub splits inside code
    spans too), the outer pipes dropped, each cell stripped of its padding."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        row = line.strip()
        if fenced or not row.startswith("|"):
            continue
        cells = re.split(r"(?<!\\)\|", row)[1:]
        if cells and cells[-1].strip() == "":
            cells = cells[:-1]
        for cell in cells:
            yield number, cell.strip()


def long_cells(text, limit=MAX_CELL):
    return [f"line {n}: {len(c)} characters: {c[:60]}…" for n, c in table_cells(text) if len(c) > limit]


class TableCells(unittest.TestCase):
    def test_a_made_up_table(self):
        ok = "| a | b |\n|---|---|\n| " + "x" * 200 + " | `p \\| q` |\n"
        self.assertEqual(long_cells(ok), [])
        self.assertEqual([c for _, c in table_cells(ok)], ["a", "b", "---", "---", "x" * 200, "`p \\| q`"])
        too_long = ok + "| short | " + "y" * 201 + " |\n"
        self.assertEqual(len(long_cells(too_long)), 1)
        self.assertIn("line 4: 201 characters", long_cells(too_long)[0])
        self.assertEqual(long_cells("```\n| " + "z" * 300 + " |\n```\n"), [])  # code, not a table

    def test_readme_cells_are_at_most_200_characters(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            text = f.read()
        self.assertIn("<!-- verdict:begin -->", text)  # the generated verdict table is checked too
        self.assertGreater(len(list(table_cells(text))), 20, "the table pattern no longer finds the tables")
        self.assertEqual(long_cells(text), [])


class Links(unittest.TestCase):
    def test_the_documents_exist(self):
        for doc in documents():
            self.assertTrue(os.path.isfile(os.path.join(ROOT, doc)), doc)

    def test_every_relative_link_resolves(self):
        broken = []
        for doc in documents():
            with open(os.path.join(ROOT, doc)) as f:
                text = prose(f.read())
            for target in LINK.findall(text):
                if re.match(r"[a-z]+:", target):  # https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                file = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), path)) if path else \
                    os.path.join(ROOT, doc)
                if not os.path.exists(file):
                    broken.append(f"{doc}: link to {target}: no such file")
                elif anchor and file.endswith(".md") and anchor not in anchors(file):
                    broken.append(f"{doc}: link to {target}: no such heading")
        self.assertEqual(broken, [])

    def test_every_backticked_repository_path_exists(self):
        count, missing = 0, []
        for doc in documents():
            with open(os.path.join(ROOT, doc)) as f:
                text = f.read()
            for path in cited_paths(text):
                count += 1
                if not os.path.exists(os.path.join(ROOT, path)):
                    missing.append(f"{doc}: `{path}`: no such file or folder")
        self.assertEqual(missing, [])
        self.assertGreater(count, 50, "the path pattern no longer finds the cited paths")

    def test_every_results_folder_is_in_the_index(self):
        with open(os.path.join(ROOT, INDEX)) as f:
            index = f.read()
        folders = [d for d in sorted(os.listdir(os.path.join(ROOT, "results")))
                   if os.path.isdir(os.path.join(ROOT, "results", d)) and d != "archive"]
        archive = os.path.join(ROOT, "results", "archive")
        if os.path.isdir(archive):
            folders += ["archive/" + d for d in sorted(os.listdir(archive)) if os.path.isdir(os.path.join(archive, d))]
        self.assertGreater(len(folders), 10)
        for folder in folders:
            self.assertIn(f"]({folder}/)", index, f"results/{folder}/ has no line in {INDEX}")

    def test_exactly_one_current_main_job_result(self):
        with open(os.path.join(ROOT, INDEX)) as f:
            rows = [line for line in f if line.startswith("| [") and "brown_default" in line]
        current = [r for r in rows if "superseded" not in r and "current" in r]
        self.assertEqual(len(current), 1, current)


if __name__ == "__main__":
    unittest.main()
