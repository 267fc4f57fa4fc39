#!/usr/bin/env python3
"""benchmarks/results/scaling/scaling.png from the CSVs beside it (needs matplotlib):
speed-up over one rank against ranks (one thread each) for multislice and PRISM
f = 8, before and after the round of changes in SCALING.md, with the ideal line and
one rank of 16 threads as a marker."""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))


def load(name, case):
    rows = [r for r in csv.DictReader(open(os.path.join(here, name))) if r["case"] == case]
    one = next(float(r["wall_s"]) for r in rows if r["ranks"] == "1" and r["threads"] == "1")
    ranks = [(int(r["ranks"]), one / float(r["wall_s"])) for r in rows if r["threads"] == "1"]
    threads = next((one / float(r["wall_s"]) for r in rows if r["threads"] == "16"), None)
    return sorted(ranks), threads


fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
for ax, (title, before, after, case) in zip(axes, [
        ("multislice, 100 probes", "before_multislice.csv", "after_multislice.csv", "multislice"),
        ("PRISM f = 8, 15 625 probes", "before_prism_f8.csv", "after_prism_f8.csv", "prism_f8")]):
    for label, name, style in (("before (f01637e)", before, "o--"), ("after", after, "s-")):
        pts, thr = load(name, case)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
        if thr:
            ax.plot([16], [thr], "*" if label == "after" else "x", ms=11, label=f"1 rank x 16 threads, {label.split()[0]}")
    ax.plot([1, 16], [1, 16], "k:", lw=1, label="ideal")
    ax.plot([1, 16], [1, 16 * 0.85], color="0.6", lw=1, label="85% efficiency")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    ax.set_yticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    ax.set_xlabel("ranks (1 thread each, bound to cores)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
axes[0].set_ylabel("speed-up over 1 rank (whole process)")
axes[1].legend(fontsize=7, loc="upper left")
fig.suptitle("CPU strong scaling, 16-core Xeon (the GPU machine), 100 A amorphous carbon, 80 keV", fontsize=10)
fig.tight_layout()
out = os.path.join(here, "scaling.png")
fig.savefig(out, dpi=110)
print("wrote", out)
sys.exit(0)
