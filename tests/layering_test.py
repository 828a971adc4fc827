"""Every #include "linformer/<folder>/…" points to the same floor or one below
(the floors are the table in docs/ARCHITECTURE.md); every folder has a floor."""
import os
import re
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"linformer/([a-z_]+)/', re.M)


def read_floors(architecture):
    with open(architecture) as f:
        text = f.read()
    table = text.split("<!-- floors:begin -->", 1)[1].split("<!-- floors:end -->", 1)[0]
    floors = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            floors[cells[1].strip("`").rstrip("/")] = int(cells[0])
    if not floors:
        raise ValueError(f"{architecture}: no floors table between the floors markers")
    return floors


def folder_of(root, path):
    """The floor folder of a source file: include/linformer/<folder>/… or src/<folder>/…."""
    parts = os.path.relpath(path, root).split(os.sep)
    if parts[0] == "include" and len(parts) > 3:
        return parts[2]
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    return None


def violations(root, floors):
    """(file, problem) for every upward include, every folder without a floor, and two folders
    of one floor that include each other (a cycle the floors' order does not forbid)."""
    found = []
    sideways = {}  # (folder, target) on one floor -> the first file with such an include
    for top in ("include", "src"):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".h.in")):
                    continue
                path = os.path.join(directory, name)
                folder = folder_of(root, path)
                if folder is None:
                    continue
                rel = os.path.relpath(path, root)
                if folder not in floors:
                    found.append((rel, f"folder '{folder}' has no floor in docs/ARCHITECTURE.md"))
                    continue
                with open(path) as f:
                    for target in INCLUDE.findall(f.read()):
                        if target not in floors:
                            found.append((rel, f"includes linformer/{target}/, a folder with no floor"))
                        elif floors[target] > floors[folder]:
                            found.append((rel, f"{folder}/ (floor {floors[folder]}) includes {target}/ "
                                               f"(floor {floors[target]}), which is above it"))
                        elif target != folder and floors[target] == floors[folder]:
                            sideways.setdefault((folder, target), rel)
    for (folder, target), rel in sorted(sideways.items()):
        if folder < target and (target, folder) in sideways:
            found.append((rel, f"{folder}/ and {target}/ (both floor {floors[folder]}) include each other "
                               f"(also {sideways[(target, folder)]})"))
    return found


def repeated_names(root):
    """{file name without extension: [folders]} for names that more than one folder of src/ or
    include/linformer/ uses (the .h and .cpp of one unit are one name)."""
    folders = {}
    for top in ("include", "src"):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                folder = folder_of(root, os.path.join(directory, name))
                if folder is not None and name.endswith((".h", ".cpp")):
                    folders.setdefault(os.path.splitext(name)[0], set()).add(folder)
    return {name: sorted(f) for name, f in folders.items() if len(f) > 1}


class Layering(unittest.TestCase):
    def test_file_names_are_unique_across_folders(self):
        self.assertEqual(repeated_names(ROOT), {}, "one name, two units: rename one so a name finds one file")

    def test_every_include_points_down(self):
        floors = read_floors(os.path.join(ROOT, "docs", "ARCHITECTURE.md"))
        found = violations(ROOT, floors)
        self.assertEqual(found, [], "\n" + "\n".join(f"{f}: {p}" for f, p in found))

    def test_an_upward_include_is_caught(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "include", "linformer", "core"))
            os.makedirs(os.path.join(d, "src", "extra"))
            with open(os.path.join(d, "include", "linformer", "core", "a.h"), "w") as f:
                f.write('#pragma once\n#include "linformer/core/b.h"\n#include "linformer/model/x.h"\n')
            with open(os.path.join(d, "src", "extra", "c.cpp"), "w") as f:
                f.write('#include "linformer/core/a.h"\n')
            found = violations(d, {"core": 1, "model": 7})
        self.assertEqual(len(found), 2, found)
        self.assertIn("core/ (floor 1) includes model/ (floor 7)", found[0][1] + found[1][1])
        self.assertIn("folder 'extra' has no floor", found[0][1] + found[1][1])

    def test_two_folders_of_one_floor_including_each_other_are_caught(self):
        with tempfile.TemporaryDirectory() as d:
            for folder, other in (("infer", "finetune"), ("finetune", "infer")):
                os.makedirs(os.path.join(d, "src", folder))
                with open(os.path.join(d, "src", folder, "a.cpp"), "w") as f:
                    f.write(f'#include "linformer/{other}/b.h"\n')
            found = violations(d, {"infer": 10, "finetune": 10})
            self.assertEqual(len(found), 1, found)
            self.assertIn("finetune/ and infer/ (both floor 10) include each other", found[0][1])
            os.remove(os.path.join(d, "src", "infer", "a.cpp"))
            self.assertEqual(violations(d, {"infer": 10, "finetune": 10}), [], "one direction alone is allowed")


if __name__ == "__main__":
    sys.exit(unittest.main())
