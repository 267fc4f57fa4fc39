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


def _run(a, name, *sets):
    """The quick-start example with --set overrides, into the work directory; the output's path."""
    out = os.path.join(a.work, name + ".h5")
    cmd = [a.stemsim, os.path.join(ROOT, "examples", "quickstart.ini"), "-q", "--set", "output.file=" + out,
           "--set", "output.overwrite=true"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    return out


def algorithms(a):
    """What each algorithm gives for the quick-start sample: multislice and PRISM (f = 4) HAADF
    over the same scan, an HRTEM image (Scherzer-like defocus, 20 mrad objective aperture) and
    one probe's CBED pattern."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import stemsim
    runs = [("multislice: HAADF 70-140 mrad", _run(a, "alg_multislice"), "images/HAADF"),
            ("PRISM f = 4: HAADF 70-140 mrad", _run(a, "alg_prism", "simulation.algorithm=prism",
                                                     "simulation.interpolation_x=4",
                                                     "simulation.interpolation_y=4"), "images/HAADF"),
            ("HRTEM: image, defocus 60 A", _run(a, "alg_hrtem", "simulation.algorithm=hrtem", "probe.defocus=60",
                                               "hrtem.objective_aperture=20"), "hrtem"),
            ("CBED: one probe's pattern (log)", _run(a, "alg_cbed", "simulation.algorithm=cbed",
                                                     "detector.cbed_max_angle=40"), "cbed_pattern")]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    for ax, (title, path, name) in zip(axes, runs):
        with stemsim.read(path) as r:
            key = name if name in r else next(k for k in r if k.startswith(name) or k.endswith(name))
            da = r[key].squeeze()
            img = np.log10(np.maximum(da.values, 1e-9)) if "CBED" in title else da.values
            ax.imshow(img, origin="lower", cmap="gray" if "CBED" not in title else "magma")
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.savefig(os.path.join(a.out, "algorithms.png"), dpi=80, bbox_inches="tight")


def _thick_au():
    import json
    with open(os.path.join(ROOT, "benchmarks", "results", "thick_au.json")) as f:
        return json.load(f)


def thick_au(a):
    """Au [001] HAADF against thickness and against the pixel size at the deepest plane, stemsim
    and abTEM (benchmarks/results/thick_au.json, written by benchmarks/validation/thick_au.py)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = _thick_au()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for code, style in (("stemsim", "-"), ("abtem", "--")):
        for key, r in res.get(code, {}).items():
            if code == "stemsim" and key.endswith("m=1"):
                label = "stemsim %.4f A, transmission on the grid" % r["pixel"]
            else:
                label = "%s %.4f A" % ("stemsim" if code == "stemsim" else "abTEM 1.0.11", r["pixel"])
            left.plot(r["depth"], r["haadf"], style, marker="o", ms=3, label=label)
    left.set_xlabel("thickness (A)")
    left.set_ylabel("HAADF 70-200 mrad (fraction of the beam)")
    left.legend(fontsize=7)
    for code, marker in (("stemsim", "o"), ("abtem", "s")):
        runs = [r for k, r in res.get(code, {}).items() if not k.endswith("m=1")]
        right.plot([r["pixel"] for r in runs], [r["haadf"][-1] for r in runs], marker=marker, label=code)
    right.set_xlabel("pixel size (A)")
    right.set_ylabel("HAADF at %.1f A" % res["stemsim"][next(iter(res["stemsim"]))]["depth"][-1])
    right.invert_xaxis()
    right.legend(fontsize=8)
    fig.savefig(os.path.join(a.out, "thick_au.png"), dpi=80, bbox_inches="tight")


def multi_gpu(a):
    """Speed-up against one GPU, best variant per GPU count, of the newest 4-GPU measurement
    (benchmarks/results/multi_gpu.csv, written by benchmarks/gpu/device_multi_gpu.sh)."""
    import csv
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(os.path.join(ROOT, "benchmarks", "results", "multi_gpu.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["rc"] == "0"]
    newest = [r for r in rows if r["commit"] == max((r["commit"] for r in rows if r["gpus"] == "4"),
                                                     key=lambda c: [x["commit"] for x in rows].index(c))]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for case in sorted({r["case"] for r in newest}):
        best = {}
        for r in newest:
            if r["case"] == case:
                g = int(r["gpus"])
                best[g] = min(best.get(g, 1e30), float(r["wall_s"]))
        if 1 in best and len(best) > 1:
            gpus = sorted(best)
            ax.plot(gpus, [best[1] / best[g] for g in gpus], marker="o", label=case)
    ax.plot([1, 4], [1, 4], "k:", label="ideal")
    ax.set_xlabel("GPUs (H200)")
    ax.set_ylabel("speed-up, whole process")
    ax.legend(fontsize=7)
    fig.savefig(os.path.join(a.out, "multi_gpu.png"), dpi=80, bbox_inches="tight")


# figure file -> the function that draws it (one function may draw several)
FIGURES = {"quickstart_images.png": quickstart, "quickstart_pattern.png": quickstart, "algorithms.png": algorithms,
           "thick_au.png": thick_au, "multi_gpu.png": multi_gpu}


def check_pages():
    """Every figures/NAME a docs page or the README shows is one of FIGURES (the README's is kept in
    git, so that it shows where the site is not built: redrawn, it changes only with the example)."""
    bad = 0
    pages = ["docs/" + n for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")] + ["README.md"]
    for page in pages:
        with open(os.path.join(ROOT, page)) as f:
            for fig in re.findall(r"figures/([\w.-]+\.png)", f.read()):
                if fig not in FIGURES:
                    print("FAIL %s shows figures/%s, which docs/figures/make_figures.py does not make" % (page, fig))
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
