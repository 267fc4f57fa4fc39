#!/usr/bin/env python3
"""[scan] positions (ctest label `mpi`): probes at the positions of a text file.

  positions.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini
               --workdir DIR --algorithm multislice|prism

The small case's grid positions, shuffled (a fixed permutation), one repeated, written
to a positions file with comments and a blank line: every dataset of the positions run
has one probe axis, /axes/probe_x and /axes/probe_y hold the file's positions, and probe
k equals the grid run's probe at the same position to 1e-6 (2D images, rings, 4D
patterns, DPC); 1 and 3 ranks agree to 1e-6. Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import subprocess
import sys

import itest

A = None


def run(ranks, config, extra):
    base = [A.stemsim] if ranks == 1 else [A.mpiexec] + A.mpi_flag + ["-np", str(ranks), A.stemsim]
    p = subprocess.run(base + [config] + extra, cwd=A.workdir, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        raise SystemExit("FAIL stemsim exited %d" % p.returncode)


def datasets(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out


def main():
    global A
    A = itest.parse_args(("--algorithm", {"default": "multislice"}))
    if not itest.have_numpy_h5py():
        return 77
    import numpy as np
    text = open(itest.small_case(A, "positions_" + A.algorithm,
                                 replace=(("algorithm = multislice", "algorithm = " + A.algorithm),))).read()
    grid_ini = os.path.join(A.workdir, "grid.ini")
    open(grid_ini, "w").write(text.replace("file = small.h5", "file = grid.h5"))
    run(2, grid_ini, [])
    grid = datasets(os.path.join(A.workdir, "grid.h5"))
    sx, sy = grid["axes/scan_x"], grid["axes/scan_y"]
    flat = [(x, y) for y in sy for x in sx]  # probe p = iy * nx + ix
    perm = list(np.random.default_rng(5).permutation(len(flat))) + [0]
    with open(os.path.join(A.workdir, "probes.txt"), "w") as f:
        f.write("# x y (Angstrom): the grid's positions, shuffled\n\n")
        for k in perm:
            f.write("%.17g %.17g   # grid probe %d\n" % (flat[k][0], flat[k][1], k))
    # the [scan] grid keys go: positions replace them
    lines = [l for l in text.split("\n") if not any(l.startswith(k) for k in
                                                     ("units", "x_start", "x_end", "y_start", "y_end", "step"))]
    pos_text = "\n".join(lines).replace("[scan]", "[scan]\npositions = probes.txt").replace("file = small.h5",
                                                                                            "file = pos.h5")
    pos_ini = os.path.join(A.workdir, "pos.ini")
    open(pos_ini, "w").write(pos_text)
    bad = 0
    results = {}
    for ranks in (1, 3):
        run(ranks, pos_ini, ["--set", "output.file=pos%d.h5" % ranks])
        results[ranks] = datasets(os.path.join(A.workdir, "pos%d.h5" % ranks))
    pos = results[1]
    n = len(perm)
    if not (np.allclose(pos["axes/probe_x"], [flat[k][0] for k in perm], rtol=0, atol=1e-12) and
            np.allclose(pos["axes/probe_y"], [flat[k][1] for k in perm], rtol=0, atol=1e-12)):
        print("FAIL /axes/probe_x, probe_y do not hold the file's positions")
        bad += 1
    worst = 0.0
    for key, g in grid.items():
        if key.startswith("axes/") or key in ("pacbed",):
            continue
        p = pos.get(key)
        g = np.asarray(g, dtype=float)
        want = g.reshape((g.shape[0] * g.shape[1],) + g.shape[2:])[perm]
        if p is None or p.shape != want.shape:
            print("FAIL %s: shape %s, expected %s (one probe axis of %d)" % (key, None if p is None else p.shape,
                                                                             want.shape, n))
            bad += 1
            continue
        err = np.max(np.abs(p - want)) / max(np.max(np.abs(want)), 1e-300)
        worst = max(worst, err)
        if err > 1e-6:
            print("FAIL %s: probe k vs the grid's probe at the same position: relative max difference %.3g" % (key, err))
            bad += 1
        r3 = results[3][key]
        err3 = np.max(np.abs(r3 - p)) / max(np.max(np.abs(p)), 1e-300)
        if err3 > 1e-6:
            print("FAIL %s: 3 ranks vs 1 rank relative max difference %.3g" % (key, err3))
            bad += 1
    print("%d positions, %d datasets: worst relative difference to the grid run %.3g" % (n, len(grid), worst))
    print("PASS" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
