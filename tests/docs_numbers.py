#!/usr/bin/env python3
"""ctest docs_numbers: numbers that a documentation page quotes from a validation script's results
are the results' (issue "Physics round 2", item 3). Each entry names the page, the files a script
in the tree wrote, and how the page formats them; the check fails when the page and the files
disagree, so a rerun of the script that changes a number makes the page change with it.

  docs_numbers.py REPO
"""
import json
import os
import sys


def load(repo, path):
    with open(os.path.join(repo, path)) as f:
        return json.load(f)


def span(values, fmt="%.7f"):
    return (fmt + "-" + fmt) % (min(values), max(values))


def au_layer_quotes(repo):
    """docs/physics.md, the Au [001] layer's supercells (benchmarks/validation/potential_accuracy.py, case b)."""
    final = load(repo, "benchmarks/results/potential_accuracy_final.json")["b"]
    before = load(repo, "benchmarks/results/potential_accuracy_before.json")["b"]
    ref = load(repo, "benchmarks/validation/potential_accuracy_ref.json")
    exact, abtem = ref["numpy"]["crystal_tiles"], ref["abtem"]["b"]
    cells = ("1x1", "2x2", "3x3")

    def grids(d, cell):
        return [v for k, v in d.items() if k.startswith(cell + " N=")]

    row = ("| the same layer, 1 x 1, 2 x 2, 3 x 3 cells, 4 grids each (0.029-0.032 A) | exact cell mean (no grid): "
           + ", ".join("%.7f" % exact[c[0]] for c in cells) + "; abTEM 1.0.11 on the same grids: "
           + ", ".join(span(grids(abtem, c)) for c in cells) + " | "
           + ", ".join(span(grids(before, c)) for c in cells) + " | "
           + ", ".join(span(grids(final, c)) for c in cells) + " |")
    ours = [v / exact[c[0]] - 1 for c in cells for v in grids(final, c)]
    theirs = [v / exact[c[0]] - 1 for c in cells for v in grids(abtem, c)]
    text = ("stemsim lies %+.1f..%+.1f%% from each cell's exact mean, abTEM\n1.0.11 %+.1f..%+.1f%%"
            % (100 * min(ours), 100 * max(ours), 100 * min(theirs), 100 * max(theirs)))
    step = "(2 x 2\nis %.1f%% above 1 x 1)" % (100 * (exact["2"] / exact["1"] - 1))
    return "docs/physics.md", [row, text, step]


def imported_potential_quotes(repo):
    """docs/physics.md, abTEM's potential imported (benchmarks/validation/abtem_imported_potential.py)."""
    d = load(repo, "benchmarks/results/abtem_imported_potential.json")
    imported = " and ".join("%.1e (%s)" % (v["imported"], k) for k, v in d.items())
    own = " and ".join("%.1e (%s)" % (v["own"], k.split()[0]) for k, v in d.items())
    return "docs/physics.md", ["exit wave to\n%s (complex relative RMS; stemsim's own potential of the same atoms lies\n%s from it"
                               % (imported, own)]


def thick_au_quotes(repo):
    """docs/accuracy.md, Au [001] HAADF against thickness (benchmarks/validation/thick_au.py)."""
    sys.path.insert(0, os.path.join(repo, "benchmarks", "validation"))
    import thick_au
    res = load(repo, "benchmarks/results/thick_au.json")
    case = res["case"]
    return "docs/accuracy.md", [thick_au.table(res, case["cells"], case["every"]), thick_au.findings(res)]


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = 0
    for quotes in (au_layer_quotes, imported_potential_quotes, thick_au_quotes):
        page, wanted = quotes(repo)
        with open(os.path.join(repo, page)) as f:
            text = f.read()
        for w in wanted:
            if w not in text:
                print("FAIL %s does not quote, as its results say:\n  %s" % (page, w))
                bad += 1
            else:
                print("ok   %s: %s" % (page, w.replace("\n", " ")[:100]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
