#!/usr/bin/env python3
"""The house's floors, held against the code's own includes.

docs/ARCHITECTURE.md lists the floors in ```floors blocks: one floor a line, lowest first,
rooms on one floor separated by " | ". A room is a folder, or a file's path without its
extension (its header and source together). A file may
include files of its own room and of rooms on lower floors of the same block; an include of
a room on its own floor or a higher one is an arrow running up, and fails this check, naming
the file, its line and the rule. The first block holds the top-level folders; a block whose
rooms lie inside one folder (engine/, dataset/) orders that folder's inside, and a file there
outside every room fails too (a new folder is placed on a floor before it is used).
```forbidden blocks: "FOLDER: PATTERN" lines, an include (system or ours) FOLDER's files may never
have (dataset/ no Qt or Torch, eval/ no Torch, ui/ no engine).

Usage: check_includes.py [ROOT]         check the tree at ROOT (default: this repository)
       check_includes.py --self-test    plants an arrow up and a forbidden include in a copy of
                                        a small tree and checks that both are reported
"""
import os
import re
import shutil
import sys
import tempfile

SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_blocks(doc, kind):
    blocks, current = [], None
    for line in open(doc, encoding="utf-8"):
        stripped = line.strip()
        if current is None and stripped == "```" + kind:
            current = []
        elif current is not None and stripped == "```":
            blocks.append(current)
            current = None
        elif current is not None:
            text = stripped.split("#", 1)[0].strip()
            if text:
                current.append(text)
    return blocks


def floors_of(block):
    """{room: floor index} for one block."""
    rooms = {}
    for index, line in enumerate(block):
        for room in line.split("|"):
            rooms[room.strip().rstrip("/")] = index
    return rooms


def room_of(path, rooms):
    """The longest room that is `path` or a folder above it."""
    best = None
    stem = os.path.splitext(path)[0]
    for room in rooms:
        if path == room or stem == room or path.startswith(room + "/"):
            if best is None or len(room) > len(best):
                best = room
    return best


def source_files(root):
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        parts = [] if rel == "." else rel.split(os.sep)
        # Not rooms of the house: tests, build outputs, environments, hidden folders.
        if parts and (parts[0] in ("tests", "build", "docs", "scripts", "resources", "cmake")
                      or parts[0].startswith((".", "build"))):
            dirs[:] = []
            continue
        for name in files:
            if name.endswith(SOURCE_EXTS):
                yield "/".join(parts + [name])


def check(root):
    doc = os.path.join(root, "docs", "ARCHITECTURE.md")
    floor_blocks = [floors_of(b) for b in read_blocks(doc, "floors")]
    forbidden = []
    for block in read_blocks(doc, "forbidden"):
        for line in block:
            folder, pattern = line.split(":", 1)
            forbidden.append((folder.strip().rstrip("/"), re.compile(pattern.strip())))
    if not floor_blocks:
        return [f"{doc}: no ```floors block"]
    top, inner = floor_blocks[0], floor_blocks[1:]
    problems = []
    for path in sorted(source_files(root)):
        top_room = room_of(path, top)
        if top_room is None:
            problems.append(f"{path}: its folder is on no floor of docs/ARCHITECTURE.md")
            continue
        blocks = [b for b in inner if any(r.split("/")[0] == top_room for r in b)]
        inner_room = room_of(path, blocks[0]) if blocks else None
        if blocks and inner_room is None:
            problems.append(f"{path}: on no floor of the {top_room}/ block of docs/ARCHITECTURE.md")
        lines = open(os.path.join(root, path), encoding="utf-8", errors="replace").read().splitlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            quoted, target = m.group(1) == '"', m.group(2)
            for folder, pattern in forbidden:
                if (path == folder or path.startswith(folder + "/")) and pattern.search(target):
                    problems.append(f"{path}:{number}: includes {target}, which {folder}/ never may")
            if not quoted or not os.path.isfile(os.path.join(root, target)):
                continue
            target_top = room_of(target, top)
            if target_top is None or target_top == top_room:
                if blocks and target_top == top_room:
                    target_room = room_of(target, blocks[0])
                    if target_room and inner_room and target_room != inner_room and \
                            blocks[0][target_room] >= blocks[0][inner_room]:
                        problems.append(
                            f"{path}:{number}: includes {target}: {inner_room} (floor "
                            f"{blocks[0][inner_room] + 1}) may not include {target_room} (floor "
                            f"{blocks[0][target_room] + 1})")
                continue
            if top[target_top] >= top[top_room]:
                problems.append(f"{path}:{number}: includes {target}: {top_room}/ (floor "
                                f"{top[top_room] + 1}) may not include {target_top}/ (floor "
                                f"{top[target_top] + 1})")
    return problems


def self_test():
    tree = tempfile.mkdtemp()
    try:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(tree, path)), exist_ok=True)
            open(os.path.join(tree, path), "w").write(text)
        write("docs/ARCHITECTURE.md", "```floors\nlow\nhigh | side\n```\n```floors\nhigh/a\nhigh/b\n```\n"
              "```forbidden\nlow: ^torch/\n```\n")
        write("low/x.h", "#pragma once\n")
        write("high/a/y.h", '#include "low/x.h"\n')
        write("high/b/z.h", '#include "high/a/y.h"\n')
        write("side/w.h", '#include "low/x.h"\n')
        clean = check(tree)
        assert clean == [], clean
        write("high/a/y.h", '#include "low/x.h"\n#include "high/b/z.h"\n')  # up inside high/
        write("low/x.h", "#pragma once\n#include <torch/torch.h>\n")           # forbidden
        write("side/w.h", '#include "high/a/y.h"\n')                           # same floor
        write("low/v.h", '#include "side/w.h"\n')                              # up at the top
        write("high/c/u.h", "#pragma once\n")                                  # a folder on no floor
        found = check(tree)
        expected = ["high/a/y.h:2", "low/x.h:2", "side/w.h:1", "low/v.h:1", "high/c/u.h"]
        for e in expected:
            assert any(p.startswith(e) for p in found), (e, found)
        print(f"self-test: {len(found)} planted problems found")
    finally:
        shutil.rmtree(tree)


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    print(f"{len(problems)} include(s) against docs/ARCHITECTURE.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
