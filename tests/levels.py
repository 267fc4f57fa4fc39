#!/usr/bin/env python3
"""The source's levels, checked (docs/developers.md, "The levels").

Each file belongs to a level; a file may include headers of its own level or
of a level below, never above:

  0 ground     src/ (physics, engine, plan: no files, no MPI)
  1 primitives comm/ (communicators and collective operations, nothing of a run)
    device     cuda/ (the GPU engine: src/ headers only)
  2 files      io/ (reading and writing files; may agree over MPI)
  3 drivers    mpi/ (the parallel drivers of a run and of a series)
  4 main       app/ (the program: everything)

A file's folder is its level: there is no list of exceptions.

A module is a .c (or .cu) file with its .h; the modules' include graph (a module
uses another when its .c or .h includes the other's .h, directly or through
headers that have no .c, such as src/stem.h) must have no cycles.

A function a src/ header declares is defined in src/ (none of io/ or mpi/).

Usage: levels.py REPO_ROOT. Exit 0 when clean, 1 with a list of violations."""
import os
import re
import sys

# "device" sits beside "primitives": neither includes the other.
RANK = {"ground": 0, "primitives": 1, "device": 1, "files": 2, "drivers": 3, "main": 4}

# Known exceptions: whole lines of this script's report. A new violation fails;
# so does one listed here that is gone (then delete its line). Never add a line:
# fix the include. (Issue 28 removed the last ones.)
KNOWN = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


FOLDERS = {"src": "ground", "comm": "primitives", "cuda": "device", "io": "files", "mpi": "drivers", "app": "main"}


def level(path):
    return FOLDERS.get(path.split("/")[0])


def sources(root):
    for top in FOLDERS:
        for name in sorted(os.listdir(os.path.join(root, top))):
            if name.endswith((".c", ".h", ".cu", ".cuh")):
                yield f"{top}/{name}"


def includes(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        text = f.read()
    for inc in INCLUDE.findall(text):
        target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
        if os.path.exists(os.path.join(root, target)):
            yield target


def implemented(root, mod):
    return any(os.path.exists(os.path.join(root, mod + ext)) for ext in (".c", ".cu"))


def uses(root, path, seen=None):
    """The modules (with a .c) whose headers path includes, through header-only headers."""
    seen = set() if seen is None else seen
    for target in includes(root, path):
        if target in seen or level(target) is None:
            continue
        seen.add(target)
        mod = os.path.splitext(target)[0]
        if implemented(root, mod):
            yield mod
        else:
            yield from uses(root, target, seen)


def main(root):
    bad = []
    graph = {}
    for path in sources(root):
        lv = level(path)
        mod = os.path.splitext(path)[0]
        for target in includes(root, path):
            tl = level(target)
            if tl is None:
                continue
            edge = f"{path} -> {target}"
            wrong = RANK[tl] > RANK[lv] or {lv, tl} == {"primitives", "device"} \
                or (lv == "device" and tl != "ground" and tl != "device")
            if wrong:
                bad.append(f"level: {edge} ({lv} includes {tl})")
        graph.setdefault(mod, set()).update(m for m in uses(root, path) if m != mod)
    bad += misplaced(root)
    for cycle in cycles(graph):
        bad.append("cycle among: " + ", ".join(cycle))
    new = [line for line in bad if line not in KNOWN]
    gone = sorted(KNOWN - set(bad))
    for line in new:
        print(line)
    for line in gone:
        print(f"fixed, delete it from KNOWN in tests/levels.py: {line}")
    if new or gone:
        print(f"{len(new)} new violation(s) of the levels (docs/developers.md, 'The levels')")
        return 1
    print(f"levels: no new violation ({len(KNOWN)} known exceptions left)")
    return 0


FUNC = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(stem_\w+)\s*\(", re.M)


def functions(text, body):
    """Names declared (body False) or defined (body True) at the start of a line."""
    for m in FUNC.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        rest = text[i:i + 200].lstrip()
        if rest.startswith("{") == body and (body or rest.startswith(";")):
            yield m.group(1)


def misplaced(root):
    defined = {}
    for path in sources(root):
        if path.endswith((".c", ".cu")):
            with open(os.path.join(root, path), encoding="utf-8") as f:
                for name in functions(f.read(), True):
                    defined[name] = path
    out = []
    for path in sources(root):
        if not path.endswith(".h") or level(path) != "ground":
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            for name in functions(f.read(), False):
                where = defined.get(name)
                if where and level(where) != "ground":
                    out.append(f"declared: {path} declares {name}, defined in {where}")
    return out


def cycles(graph):
    """The modules of each include cycle (strongly connected component), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
