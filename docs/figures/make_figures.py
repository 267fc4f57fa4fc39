#!/usr/bin/env python3
"""The documentation's figures, drawn from runs this script makes, so that none can go stale
(the docs site test runs it before building the site; a page that shows a figure no entry of
FIGURES makes fails the build).

    make_figures.py --stemsim BIN --out docs/figures [--work DIR]   # run and draw every figure
    make_figures.py --check-pages                                   # every figure a page shows is made here

Each figure is a small run (seconds on 2 cores): full-size versions, where a GPU is needed,
belong in benchmarks/."""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


def quickstart(a):
    """The bundled example (examples/quickstart.ini: Si [100], multislice, 200 keV, 20 mrad) with
    its 4D patterns kept: its four images, and the pattern of one probe."""
    out = os.path.join(a.work, "quickstart.h5")
    subprocess.run([a.stemsim, os.path.join(ROOT, "examples", "quickstart.ini"), "-q", "--set",
                    "output.file=" + out, "--set", "detector.save_4d=true", "--set", "detector.cbed_max_angle=60"],
                   check=True)
    import matplotlib
    matplotlib.use("Agg")
    import stemsim
    from stemsim import plot
    with stemsim.read(out) as r:
        fig = plot.images(r, ncols=4)
        fig.savefig(os.path.join(a.out, "quickstart_images.png"), dpi=90, bbox_inches="tight")
        fig = plot.pattern(r, probe=(0, 0))
        fig.savefig(os.path.join(a.out, "quickstart_pattern.png"), dpi=90, bbox_inches="tight")


# figure file -> the function that draws it (one function may draw several)
FIGURES = {"quickstart_images.png": quickstart, "quickstart_pattern.png": quickstart}


def check_pages():
    """Every figures/NAME a docs page shows is one of FIGURES."""
    bad = 0
    for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(ROOT, "docs", name)) as f:
            for fig in re.findall(r"figures/([\w.-]+\.png)", f.read()):
                if fig not in FIGURES:
                    print("FAIL docs/%s shows figures/%s, which docs/figures/make_figures.py does not make" % (name, fig))
                    bad += 1
    return bad


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stemsim")
    p.add_argument("--out", default=HERE)
    p.add_argument("--work", default=None)
    p.add_argument("--check-pages", action="store_true")
    a = p.parse_args()
    if a.check_pages:
        return 1 if check_pages() else 0
    a.work = a.work or os.path.join(a.out, "work")
    os.makedirs(a.work, exist_ok=True)
    for draw in dict.fromkeys(FIGURES.values()):  # each function once
        draw(a)
    missing = [f for f in FIGURES if not os.path.exists(os.path.join(a.out, f))]
    if missing:
        print("FAIL figures not drawn: %s" % missing)
        return 1
    print("figures: %s" % ", ".join(sorted(FIGURES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
