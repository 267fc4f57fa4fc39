#!/usr/bin/env python3
"""ctest house: the size rules of docs/developers.md ("The house"), measured on the product
sources (app/, src/, comm/, io/, mpi/, cuda/): no file over 950 lines and at most 2 over 800; no function
over 80 lines and at most 8 over 60; the test hooks read in src/test_hooks.c alone (no other
getenv("STEMSIM_TEST_...")); no stacked comments (a block comment ending where another begins,
at the same indentation: one comment says one thing, or they are merged). Prints the measures; exit 1 when a rule is broken.

    python3 tests/house.py [REPO]
"""
import os
import re
import sys

DIRS = ("app", "src", "comm", "io", "mpi", "cuda")
FILE_MAX, FILE_BIG, FILES_BIG = 950, 800, 2
FUNC_MAX, FUNC_LONG, FUNCS_LONG = 80, 60, 8
# a function's head: a line at column 0 that names it and opens its parameter list, its body the
# lines up to the closing brace at column 0
HEAD = re.compile(r"^(?:static\s+|extern\s+\"C\"\s+|__global__\s+|__device__\s+|__host__\s+|inline\s+|"
                  r"template\s*<[^>]*>\s*)*[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\([^;]*$")


def sources(repo):
    for d in DIRS:
        for name in sorted(os.listdir(os.path.join(repo, d))):
            if name.endswith((".c", ".cu", ".h", ".cuh")):
                yield os.path.join(d, name)


def functions(lines):
    """(name, first line, length) of each function defined at the top level of a file."""
    out, i = [], 0
    while i < len(lines):
        m = HEAD.match(lines[i])
        if m and not lines[i].startswith(("typedef", "#", " ", "\t", "}")) and "=" not in lines[i].split("(")[0]:
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                out.append((m.group(1), i + 1, k - i + 1))
                i = k
        i += 1
    return out


def stacked(lines):
    """Lines where a whole-line block comment ends and another begins right below it (section
    rulers "/* ----" excepted)."""
    out = []
    for i in range(len(lines) - 1):
        a, b = lines[i].strip(), lines[i + 1].strip()
        same = len(lines[i]) - len(lines[i].lstrip()) == len(lines[i + 1]) - len(lines[i + 1].lstrip())
        if a.endswith("*/") and a.startswith(("/*", "*")) and b.startswith("/*") and not b.startswith("/* --") and same:
            out.append(i + 1)
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = []
    sizes, funcs, hooks, stacks = {}, [], [], []
    for path in sources(repo):
        with open(os.path.join(repo, path)) as f:
            lines = f.read().split("\n")
        sizes[path] = len(lines) - (lines[-1] == "")
        funcs += [(n, path, l, ln) for n, l, ln in functions(lines)]
        stacks += ["%s:%d" % (path, k) for k in stacked(lines)]
        if path != "src/test_hooks.c":
            hooks += ["%s:%d" % (path, k + 1) for k, t in enumerate(lines) if re.search(r'getenv\("STEMSIM_TEST', t)]
    big = sorted((n, p) for p, n in sizes.items() if n > FILE_BIG)
    long_f = sorted(((ln, n, p, l) for n, p, l, ln in funcs if ln > FUNC_LONG), reverse=True)
    print("files over %d lines: %s" % (FILE_BIG, ", ".join("%s %d" % (p, n) for n, p in big) or "none"))
    print("functions over %d lines: %s" % (FUNC_LONG, ", ".join("%s (%s:%d) %d" % (n, p, l, ln)
                                                                for ln, n, p, l in long_f) or "none"))
    print("test hooks read outside src/test_hooks.c: %s" % (", ".join(hooks) or "none"))
    print("stacked comments: %s" % (", ".join(stacks) or "none"))
    if any(n > FILE_MAX for n, _ in big):
        bad.append("a product source over %d lines" % FILE_MAX)
    if len(big) > FILES_BIG:
        bad.append("%d product sources over %d lines (at most %d)" % (len(big), FILE_BIG, FILES_BIG))
    if any(ln > FUNC_MAX for ln, *_ in long_f):
        bad.append("a function over %d lines" % FUNC_MAX)
    if len(long_f) > FUNCS_LONG:
        bad.append("%d functions over %d lines (at most %d)" % (len(long_f), FUNC_LONG, FUNCS_LONG))
    if hooks:
        bad.append("test hooks read outside src/test_hooks.c")
    if stacks:
        bad.append("stacked comments")
    for b in bad:
        print("FAIL", b)
    print("PASS" if not bad else "FAIL: %d rule(s) broken" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
