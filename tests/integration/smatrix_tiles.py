#!/usr/bin/env python3
"""PRISM's S-matrix distributed by space (ctest label `mpi`; mpi/smatrix_tiles.h).

  smatrix_tiles.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

A cell scaled so that the S-matrix (about 0.13 GiB, interpolation 8) is most of a rank's
memory, its whole surface scanned:
- Images and 4D patterns on 2 and 4 ranks without node sharing (each rank its own tile),
  and on 4 ranks as 2 emulated nodes of 2 sharing their node's tile ([debug]
  ranks_per_node), equal one rank's bit for bit; and with rounds of one beam ([debug]
  smatrix_round_beams = 1: many exchanges, every band of every beam moved on its own).
- The plan's S-matrix per rank falls as 1/ranks plus the window's halo: at most
  1.2 x (one rank's / ranks) + the halo (the window's rows of the whole box, per unit).
- The measured peak per rank falls with it: one rank's peak minus N ranks' is at least 80%
  of what the plan says N ranks save, and every peak is within the plan's estimate + 10%.
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import sys

import itest

A = None
CASE = """
[sample]
xyz = {data}/Si100_unitcell.xyz
tile_x = 8
tile_y = 8
tile_z = 1
[beam]
energy = 200
[probe]
semiangle = 20
[simulation]
algorithm = prism
pixel_size = 0.06
slice_thickness = 2.715
interpolation_x = 8
interpolation_y = 8
thermal = false
[scan]
units = angstrom
step = 1.0
[detector]
save_3d = false
save_4d = true
cbed_max_angle = 10
[compute]
threads = 1
"""


def run(ranks, extra, name):
    out = itest.run(A, ranks, extra, name)
    est = re.search(r"memory per rank\s+([\d.]+) GiB \(.*S-matrix ([\d.]+),", out)
    peak = re.search(r"peak resident memory per rank: ([\d.]+) to ([\d.]+) GiB", out)
    if not est or not peak:
        print(out)
        raise SystemExit("FAIL %s: no plan estimate or peak in the log" % name)
    return {"total": float(est.group(1)), "smatrix": float(est.group(2)), "peak": float(peak.group(2))}


def same(name):
    import h5py
    import numpy as np

    def load(n):
        out = {}
        with h5py.File(os.path.join(A.workdir, n + ".h5"), "r") as f:
            f.visititems(lambda k, o: out.__setitem__(k, o[()]) if isinstance(o, h5py.Dataset) and
                         o.dtype.kind == "f" else None)
        return out
    a, b = load("np1"), load(name)
    bad = [k for k in a if not np.array_equal(a[k], b[k], equal_nan=True)]
    if bad or not a:
        raise SystemExit("FAIL %s differs from one rank in %s" % (name, bad or "(nothing read)"))


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    itest.fresh_workdir(A, "smatrix_tiles")
    A.ini = os.path.join(A.workdir, "tiles.ini")  # the case below, not small.ini
    with open(A.ini, "w") as f:
        f.write(CASE.format(data=os.path.join(A.repo, "data")))
    private = ["--set", "compute.node_shared=false"]
    m = {1: run(1, [], "np1")}
    for n in (2, 4):
        m[n] = run(n, private, "np%d" % n)
        same("np%d" % n)
    run(4, ["--set", "debug.ranks_per_node=2"], "nodes2x2")
    same("nodes2x2")
    run(3, private + ["--set", "debug.smatrix_round_beams=1"], "round1")
    same("round1")
    print("2 and 4 ranks (own tiles), 2 emulated nodes of 2 (node tiles), 3 ranks in rounds of one beam: "
          "bitwise one rank's")
    # the window is 1/8 of the box: a rank's band of 1/N of the rows plus 1/8 (its halo)
    one = m[1]["smatrix"]
    for n in (2, 4):
        bound = 1.2 * one / n + one / 8
        print("%d ranks: plan S-matrix %.3f GiB per rank (bound %.3f), peak %.3f GiB (plan %.3f); one rank: "
              "S-matrix %.3f, peak %.3f" % (n, m[n]["smatrix"], bound, m[n]["peak"], m[n]["total"], one, m[1]["peak"]))
        if m[n]["smatrix"] > bound:
            raise SystemExit("FAIL %d ranks: the plan holds %.3f GiB of S-matrix per rank, over 1.2 x 1/%d + halo"
                             % (n, m[n]["smatrix"], n))
        saved, said = m[1]["peak"] - m[n]["peak"], one - m[n]["smatrix"]
        if saved < 0.8 * said:
            raise SystemExit("FAIL %d ranks: the peak fell by %.3f GiB, the plan said %.3f" % (n, saved, said))
    for n in m:
        if m[n]["peak"] > 1.1 * m[n]["total"]:
            raise SystemExit("FAIL %d ranks: peak %.3f GiB over the plan's %.3f + 10%%" % (n, m[n]["peak"],
                                                                                          m[n]["total"]))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
