#!/usr/bin/env python3
"""Checks that src/ keeps its layers (docs/design.md, "Layers"): every #include "..." of a source file points
to its own folder or to a folder below it, and the graph of folders read from the include lines has no cycle.
Given a build directory, it checks calls too: every function or variable an object file of src/ uses from
another object of src/ (read with nm from the objects compile_commands.json lists) is defined in its own folder
or in a folder below it. An include or a call that runs up is the only way a circle between files of different
folders can form, so none of those means no such circle.

    scripts/check-layers.py [--graph] [BUILD_DIR]   exit 0 when the layering holds, 1 (with every violation) otherwise

--graph prints the folder graph (folder -> folders it includes, with the number of include lines).
The suite runs it (tests/meson.build: 'layers'), so a change that runs an include up a layer fails CI.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")

# Folders from the top down, and which folders each may include besides itself. "Never" rules, in words:
# nothing but the clients (dropin, fortran) reaches api; planner and shm never include each other, exec, transpose or api; base includes nothing of src.
ALLOWED = {
    # The drop-in layer (libplancoll-mpi) is a client of the public API: it links libplancoll.so, which exports
    # nothing but the public API (plancoll_* wherever in src/ it is defined: plancoll_strerror lives in base; see
    # call_problems), and includes only include/plancoll.h (outside src/): PUBLIC_HEADER_ONLY keeps its includes.
    "dropin": {"api"},
    # The Fortran interface's C shims (libplancoll_fortran, src/fortran): a client of the public API as dropin is.
    "fortran": {"api"},
    "api": {"exec", "transpose", "planner", "shm", "base"},
    "transpose": {"exec", "planner", "shm", "base"},
    "exec": {"planner", "shm", "base"},
    "planner": {"base"},
    "shm": {"base"},
    "base": set(),
}
# Folders whose files include no header of src/ outside their own folder (the public header only).
PUBLIC_HEADER_ONLY = {"dropin", "fortran"}
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


def nm_symbols(obj, flag):
    """Global symbols of an object file: defined (flag '--defined-only') or undefined ('-u'). Common symbols
    (type C) are not definitions of the object's own: they are Fortran COMMON blocks its MPI's headers declare
    (Open MPI's mpif.h: mpi_fortran_bottom_, mpi_fortran_in_place_, ...), which the MPI library defines and any
    object using them also declares."""
    out = subprocess.run(["nm", "-P", "-g", flag, obj], capture_output=True, text=True, check=True).stdout
    fields = [line.split() for line in out.splitlines() if line.strip()]
    return {f[0] for f in fields if not (flag == "--defined-only" and len(f) > 1 and f[1] == "C")}


def call_problems(build):
    """Uses of a symbol defined in a folder that is not the user's own folder or below it."""
    db = json.load(open(os.path.join(build, "compile_commands.json")))
    objects = {}  # src-relative path of the source -> object file
    for e in db:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if not src.startswith(os.path.abspath(SRC) + os.sep):
            continue
        obj = os.path.normpath(os.path.join(e["directory"], e["output"]))
        if os.path.isfile(obj):
            objects[os.path.relpath(src, SRC)] = obj
    if not objects:
        return [f"{build}: no object files of src/ in compile_commands.json (build first)"]
    defined_in = {}
    for rel, obj in objects.items():
        for sym in nm_symbols(obj, "--defined-only"):
            defined_in[sym] = rel
    problems = []
    for rel, obj in sorted(objects.items()):
        src_folder = rel.split(os.sep)[0]
        for sym in sorted(nm_symbols(obj, "-u")):
            target = defined_in.get(sym)
            if target is None:
                continue  # MPI, libc, hwloc: outside src/
            dst_folder = target.split(os.sep)[0]
            if dst_folder == "dropin" and sym.startswith(("MPI_", "MPIX_")):
                continue  # the drop-in layer's interpositions of MPI's own names (MPIX_: Open MPI's extensions)
            if src_folder in PUBLIC_HEADER_ONLY and sym.startswith("plancoll_"):
                continue  # the public API, exported from whichever folder defines it
            if dst_folder != src_folder and dst_folder not in ALLOWED.get(src_folder, set()):
                problems.append(f"src/{rel} calls {sym} of src/{target} (src/{dst_folder} is not below it)")
    return problems


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
            if dst_folder not in ALLOWED[src_folder] or src_folder in PUBLIC_HEADER_ONLY:
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
    builds = [a for a in sys.argv[1:] if not a.startswith("--")]
    for build in builds:
        problems += call_problems(build)
    if "--graph" in sys.argv:
        for u in sorted(graph):
            print(f"src/{u} -> " + ", ".join(f"src/{v} ({n})" for v, n in sorted(graph[u].items())))
    for p in problems:
        print(p)
    print(f"layers: {len(files)} files, {sum(len(v) for v in graph.values())} folder arrows, "
          f"{'calls checked, ' if builds else ''}{len(problems)} violation{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
