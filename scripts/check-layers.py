#!/usr/bin/env python3
"""Checks that src/ keeps its layers (docs/design.md, "Layers"): every #include "..." of a source file points
to its own folder or to a folder below it, and the graph of folders read from the include lines has no cycle.

    scripts/check-layers.py [--graph]      exit 0 when the layering holds, 1 (with every violation) otherwise

--graph prints the folder graph (folder -> folders it includes, with the number of include lines).
The suite runs it (tests/meson.build: 'layers'), so a change that runs an include up a layer fails CI.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")

# Folders from the top down, and which folders each may include besides itself. "Never" rules, in words:
# nothing includes api; planner and shm never include each other, exec, transpose or api; base includes nothing of src.
ALLOWED = {
    "api": {"exec", "transpose", "planner", "shm", "base"},
    "transpose": {"exec", "planner", "shm", "base"},
    "exec": {"planner", "shm", "base"},
    "planner": {"base"},
    "shm": {"base"},
    "base": set(),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    rel = os.path.relpath(path, SRC)
    return rel.split(os.sep)[0]


def resolve(src_file, target):
    """The file an #include "target" in src_file names: relative to the including file, then to src/."""
    for base in (os.path.dirname(src_file), SRC):
        cand = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(cand):
            return cand
    return None


def main():
    graph = {}
    problems = []
    files = []
    for dirpath, _, names in os.walk(SRC):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.join(dirpath, n))
    for f in sorted(files):
        src_folder = folder_of(f)
        if src_folder not in ALLOWED:
            problems.append(f"{os.path.relpath(f, ROOT)}: folder src/{src_folder} is not in the layer table")
            continue
        text = open(f, encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            target = resolve(f, m.group(1))
            if target is None or not os.path.abspath(target).startswith(os.path.abspath(SRC) + os.sep):
                continue  # the public header or a system header
            dst_folder = folder_of(target)
            if dst_folder == src_folder:
                continue
            graph.setdefault(src_folder, {}).setdefault(dst_folder, 0)
            graph[src_folder][dst_folder] += 1
            if dst_folder not in ALLOWED[src_folder]:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{os.path.relpath(f, ROOT)}:{line}: src/{src_folder} includes "
                                f"{os.path.relpath(target, ROOT)} (src/{dst_folder} is not below it)")
    # Cycles in the folder graph (depth-first search).
    state = {}
    stack = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in graph.get(u, {}):
            if state.get(v) == 1:
                cyc = stack[stack.index(v):] + [v]
                problems.append("folder cycle: " + " -> ".join("src/" + x for x in cyc))
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u)
    if "--graph" in sys.argv:
        for u in sorted(graph):
            print(f"src/{u} -> " + ", ".join(f"src/{v} ({n})" for v, n in sorted(graph[u].items())))
    for p in problems:
        print(p)
    print(f"layers: {len(files)} files, {sum(len(v) for v in graph.values())} folder arrows, "
          f"{len(problems)} violation{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
