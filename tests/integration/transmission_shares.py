#!/usr/bin/env python3
"""The transmission functions shared by the ranks of a node (ctest label `mpi`; issue 44).

  transmission_shares.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

On the CPU the ranks of a group on one node build the node's share of the slices together
into the node's shared buffer (below one slice: [compute] node_queue), and only the nodes'
first ranks exchange slices between nodes. Read from stemsim's own -v report (what each rank
built, and with how many ranks of its node; what the exchange brought it by MPI, counted by
the collectives themselves), on 8 slices:
- 2 ranks on one node: both build all 8 slices together; no rank receives a byte.
- 2 ranks on one node, node_queue = off: each its own share, disjoint, covering every slice.
- 4 ranks as 2 emulated nodes of 2 ([debug] ranks_per_node): each node builds its half
  together; each node's first rank receives exactly the other node's slices, the others nothing.
- 3 ranks as nodes of 2 and 1: the nodes' shares are in proportion to their ranks (5 and 3).
- 2 ranks without node sharing ([compute] node_shared = false): each rank receives the
  other's slices (the report sees an exchange where there is one).
Every case's images equal one rank's bit for bit.
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import sys

import itest

A = None
SHARE = re.compile(r"transmission share: group rank (\d+) built slices \[(\d+), (\d+)\)(?: with the (\d+) ranks of its "
                   r"node)?, received (\d+) bytes by MPI \(node rank (\d+)\)")


def shares(ranks, extra, name):
    out = itest.run(A, ranks, ["-v", "--set", "simulation.slice_thickness=1.3575"] + extra, name)
    # (group rank, first, end, received, node rank, ranks building together: 0 = alone)
    rows = [(int(m[1]), int(m[2]), int(m[3]), int(m[5]), int(m[6]), int(m[4] or 0)) for m in SHARE.finditer(out)]
    if len(rows) != ranks:
        print(out)
        raise SystemExit("FAIL %s: %d share lines for %d ranks" % (name, len(rows), ranks))
    grid = re.search(r"grid\s+(\d+) x (\d+) pixels", out)
    slices = int(re.search(r"slices\s+(\d+) of", out).group(1))
    return rows, slices, int(grid.group(1)) * int(grid.group(2)) * 8  # bytes of one complex64 slice


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        raise SystemExit("FAIL %s" % what)


def covers(rows, slices, name):
    built = sorted({(b, e) for _, b, e, _, _, _ in rows})  # a node's ranks building together report its range
    check(built[0][0] == 0 and built[-1][1] == slices and all(built[i][1] == built[i + 1][0]
                                                               for i in range(len(built) - 1)),
          "%s: the ranks' shares %s are disjoint and cover the %d slices" % (name, built, slices))


def same_images(name):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(A.workdir, "np1.h5"), "r") as f, \
            h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as g:
        names = list(f["images"])
        check(names and all(np.array_equal(f["images/" + k][...], g["images/" + k][...]) for k in names),
              "%s: images equal one rank's bit for bit (%s)" % (name, ", ".join(names)))


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    itest.fresh_workdir(A, "transmission_shares")
    rows, slices, per_slice = shares(1, [], "np1")
    check(slices == 8 and rows[0][1:4] == (0, 8, 0), "one rank builds all 8 slices and receives nothing")

    rows, _, _ = shares(2, [], "node")
    covers(rows, slices, "2 ranks, one node")
    check(all(r[5] == 2 and r[1:3] == (0, 8) for r in rows), "2 ranks, one node: both build the 8 slices together")
    check(all(r[3] == 0 for r in rows), "2 ranks, one node: no rank receives a byte of the shared slices (%s)"
          % [r[3] for r in rows])
    same_images("node")

    rows, _, _ = shares(2, ["--set", "compute.node_queue=off"], "node_whole")
    covers(rows, slices, "2 ranks, one node, whole slices")
    check(len({r[1:3] for r in rows}) == 2 and all(r[5] == 0 and r[3] == 0 for r in rows),
          "2 ranks, one node, node_queue off: each builds its own slices, receives nothing")
    same_images("node_whole")

    rows, _, _ = shares(4, ["--set", "debug.ranks_per_node=2"], "nodes2x2")
    covers(rows, slices, "4 ranks, 2 emulated nodes of 2")
    for g, b, e, got, node_rank, together in rows:
        node = g // 2
        other = sum(e2 - b2 for b2, e2 in {(r[1], r[2]) for r in rows if r[0] // 2 != node})
        want = other * per_slice if node_rank == 0 else 0
        check(together == 2 and got == want, "2 nodes: group rank %d (node rank %d) built with its node's 2 ranks and "
              "received %d bytes, the other node's slices are %d" % (g, node_rank, got, want))
    same_images("nodes2x2")

    rows, _, _ = shares(3, ["--set", "debug.ranks_per_node=2"], "nodes2p1")
    covers(rows, slices, "3 ranks as nodes of 2 and 1")
    ranges = sorted({(r[1], r[2]) for r in rows})
    check(ranges == [(0, 5), (5, 8)], "nodes of 2 and 1 ranks hold slices in proportion to their ranks (8 x 2 / 3 "
          "= 5 and 3; a split by ranks gave 6 and 2, and 20 slices on 4 nodes of 16 ranks 16, 4, 0, 0): %s" % ranges)
    same_images("nodes2p1")

    rows, _, _ = shares(2, ["--set", "compute.node_shared=false"], "private")
    covers(rows, slices, "2 ranks, node sharing off")
    for g, b, e, got, _, _ in rows:
        check(got == (slices - (e - b)) * per_slice, "no sharing: group rank %d received the other's %d slices"
              % (g, slices - (e - b)))
    same_images("private")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
