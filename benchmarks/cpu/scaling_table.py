#!/usr/bin/env python3
"""The strong-scaling tables of benchmarks/results/SCALING.md from the CSV that
`benchmarks/cpu/device_cpu_scaling.sh strong` writes (issue 44).

    python3 benchmarks/cpu/scaling_table.py benchmarks/results/cpu_strong.csv
    python3 benchmarks/cpu/scaling_table.py --reps benchmarks/results/cpu_reps_f49a90c.csv   # `reps` mode's CSV
    python3 benchmarks/cpu/scaling_table.py --queue benchmarks/results/cpu_queue.csv        # `queue` mode's CSV

Columns of the CSV: case, label (cold, warm, warm_rN), layout (RANKSxTHREADS[_unbound|_4nodes]),
wall seconds (process start to exit, mpirun included), rc, then three phase lists (rank 0, each
phase's largest over the ranks, each phase's mean), "name=seconds;..." as stemsim -v prints them.
"""
import csv
import sys

PHASES = ("transmission", "broadcast", "S-matrix", "arrange", "probes", "wait", "write", "other")


def phases(text):
    out = {}
    for part in (text or "").split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = float(v)
    return out


def load(path):
    with open(path) as f:
        rows = [r for r in csv.reader(f)]
    out = []
    for r in rows[1:]:
        if len(r) < 8 or r[4] != "0":
            continue
        out.append({"case": r[0], "label": r[1], "layout": r[2], "wall": float(r[3]), "rank0": phases(r[5]),
                    "max": phases(r[6]), "mean": phases(r[7])})
    return out


def best(rows, case, layout, prefix):
    """The fastest run of a layout among labels starting with prefix (the spread beside it)."""
    sel = [r for r in rows if r["case"] == case and r["layout"] == layout and r["label"].startswith(prefix)]
    if not sel:
        return None, ""
    walls = sorted(r["wall"] for r in sel)
    spread = "%.2f-%.2f" % (walls[0], walls[-1]) if len(walls) > 1 else "%.2f" % walls[0]
    return min(sel, key=lambda r: r["wall"]), spread


def ranks_vs_threads(rows):
    lines = ["| job | cache | 1 rank x 16 threads (s) | 16 ranks x 1 thread (s) | 16 ranks unbound (s) | "
             "16 ranks / 16 threads |", "|---|---|---|---|---|---|"]
    for case in ("ms", "prism"):
        for cache in ("cold", "warm"):
            t, ts = best(rows, case, "1x16", cache)
            r, rs = best(rows, case, "16x1", cache)
            u, us = best(rows, case, "16x1_unbound", cache)
            if not t or not (r or u):
                continue
            fastest = min(x["wall"] for x in (r, u) if x)
            lines.append("| %s | %s | %s | %s | %s | %.2f |" % (
                {"ms": "multislice", "prism": "PRISM f = 8"}[case], cache, ts, rs or "-", us or "-",
                fastest / t["wall"]))
    return "\n".join(lines)


def scaling(rows, case):
    one, _ = best(rows, case, "1x1", "warm")
    lines = ["| layout | wall (s) | speed-up | efficiency | " + " | ".join("%s mean / max" % p for p in PHASES) + " |",
             "|" + "---|" * (4 + len(PHASES))]
    layouts = ["1x1", "2x1", "4x1", "8x1", "16x1", "16x1_unbound", "1x16", "64x1_4nodes"]
    for lay in layouts:
        r, _ = best(rows, case, lay, "warm")
        if not r:
            continue
        n = int(lay.split("x")[0]) * int(lay.split("x")[1].split("_")[0])
        cores = min(n, 16)
        speed = one["wall"] / r["wall"] if one else float("nan")
        cells = ["%.2f / %.2f" % (r["mean"].get(p, 0), r["max"].get(p, 0)) if p in r["max"] else "-" for p in PHASES]
        lines.append("| %s | %.2f | %.2f | %.0f%% | %s |" % (lay, r["wall"], speed, 100 * speed / cores,
                                                            " | ".join(cells)))
    return "\n".join(lines)


def reps(path):
    """The `reps` mode's CSV (case_rN, planning, layout, wall, ...): each layout's fastest and slowest
    round, and 16 ranks against 16 threads."""
    with open(path) as f:
        rows = [r for r in csv.reader(f)][1:]
    walls = {}
    for r in rows:
        if len(r) > 4 and r[4] == "0":
            walls.setdefault((r[0].rsplit("_r", 1)[0], r[2]), []).append(float(r[3]))
    lines = ["| job | " + " | ".join(LAYOUTS) + " | 16 ranks / 16 threads (fastest) |", "|" + "---|" * (len(LAYOUTS) + 2)]
    for case in ("ms", "prism"):
        cells = ["%.2f-%.2f" % (min(walls[(case, l)]), max(walls[(case, l)])) if (case, l) in walls else "-"
                 for l in LAYOUTS]
        ratio = min(walls[(case, "16x1")]) / min(walls[(case, "1x16")])
        lines.append("| %s | %s | %.2f |" % ({"ms": "multislice", "prism": "PRISM f = 8"}[case], " | ".join(cells),
                                             ratio))
    return "\n".join(lines)


LAYOUTS = ("16x1", "1x16", "2x8", "4x4")


def queue(path):
    """The `queue` mode's CSV: every round of 1 x 16, 16 x 1 with the probe queue and without, with
    the probe step's and the wait's mean / largest over the ranks."""
    rows = load(path)
    lines = ["| job | round | layout | wall (s) | transmission + broadcast mean / max | probes mean / max | "
             "wait mean / max | 16 ranks / 16 threads |", "|" + "---|" * 8]
    for r in rows:
        one = [x for x in rows if x["case"] == r["case"] and x["label"] == r["label"] and x["layout"] == "1x16"]
        tb = [r[k].get("transmission", 0) + r[k].get("broadcast", 0) for k in ("mean", "max")]
        ratio = "%.2f" % (r["wall"] / one[0]["wall"]) if one and r["layout"] != "1x16" else "-"
        lines.append("| %s | %s | %s | %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %s |" % (
            {"ms": "multislice", "prism": "PRISM f = 8"}[r["case"]], r["label"], r["layout"], r["wall"], tb[0], tb[1],
            r["mean"].get("probes", 0), r["max"].get("probes", 0), r["mean"].get("wait", 0), r["max"].get("wait", 0),
            ratio))
    return "\n".join(lines)


def main():
    if sys.argv[1] == "--queue":
        print(queue(sys.argv[2]))
        return 0
    if sys.argv[1] == "--reps":
        print("Whole process, seconds, the fastest and slowest of three alternating rounds (warm cache):\n")
        print(reps(sys.argv[2]))
        return 0
    rows = load(sys.argv[1])
    print("16 ranks against 16 threads (fastest of the rounds; the spread of the rounds):\n")
    print(ranks_vs_threads(rows))
    for case, name in (("ms", "multislice, 100 probes"), ("prism", "PRISM f = 8, 15 625 probes")):
        print("\nStrong scaling, %s (warm cache; 1-8 ranks one thread each, unbound; phases in seconds, the mean and "
              "the largest over the ranks; efficiency against 1 rank on min(ranks, 16) cores):\n" % name)
        print(scaling(rows, case))
    return 0


if __name__ == "__main__":
    sys.exit(main())
