#!/usr/bin/env python3
"""The one-page benchmark summary: benchmarks/results/summary.csv -> benchmarks/README.md.

    python3 benchmarks/summary.py merge ROWS.csv      # rows a benchmark wrote (same columns, by key)
    python3 benchmarks/summary.py --write-readme       # regenerate the README's summary table
    python3 benchmarks/summary.py --check-readme       # exit 1 when the README's table is stale (ctest)

Benchmark scripts write their headline rows (same header as summary.csv) under $OUT;
`merge` replaces the rows with the same key and keeps the rest, so the table always says
what was last measured, with its machine and the results file that holds the details.
"""
import csv
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CSV = os.path.join(HERE, "results", "summary.csv")
README = os.path.join(HERE, "README.md")
BEGIN, END = "<!-- summary: begin (benchmarks/summary.py) -->", "<!-- summary: end -->"
COLUMNS = ["key", "case", "measure", "stemsim", "peers", "floor", "machine", "source"]


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        missing = [c for c in COLUMNS if c not in r]
        if missing:
            sys.exit(f"summary.py: {path}: row {r.get('key')!r} lacks {missing}")
    return rows


def write_rows(rows):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows({c: r[c] for c in COLUMNS} for r in rows)
    tmp = CSV + ".tmp"
    with open(tmp, "w") as f:
        f.write(out.getvalue())
    os.replace(tmp, CSV)


def merge(path):
    rows, new = read_rows(CSV), read_rows(path)
    keys = [r["key"] for r in rows]
    for r in new:
        if r["key"] in keys:
            rows[keys.index(r["key"])] = r
        else:
            rows.append(r)
            keys.append(r["key"])
    write_rows(rows)


def table():
    lines = ["| case | measure | stemsim | peers | floor | machine | details |", "|---|---|---|---|---|---|---|"]
    for r in read_rows(CSV):
        cells = [r[c].replace("|", "/") for c in COLUMNS[1:7]] + [f"`{r['source']}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_with_table():
    text = open(README).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"summary.py: {README} lacks the markers {BEGIN} ... {END}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return text, head + BEGIN + "\n" + table() + "\n" + END + tail


def main(argv):
    if len(argv) == 3 and argv[1] == "merge":
        merge(argv[2])
        argv = [argv[0], "--write-readme"]
    if len(argv) == 2 and argv[1] in ("--write-readme", "--check-readme"):
        old, new = readme_with_table()
        if argv[1] == "--check-readme":
            if old != new:
                print("benchmarks/README.md's summary table differs from benchmarks/results/summary.csv: "
                      "run python3 benchmarks/summary.py --write-readme")
                return 1
            print("benchmarks/README.md's summary table is current")
            return 0
        with open(README, "w") as f:
            f.write(new)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
