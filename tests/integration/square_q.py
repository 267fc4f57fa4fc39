#!/usr/bin/env python3
"""4D patterns on equal q steps ([detector] cbed_square_q; issue 39: virtual images in tools with
one Q pixel size on a non-square cell).

  square_q.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

small.ini's Si cell made non-square (3 x 4 unit cells: q steps in the ratio 4 : 3, so the coarser axis's beams fall between the square bins' centres), images BF
0-20 and ADF 30-70 mrad, 4D patterns and PACBED:
- the cell's own steps (cbed_square_q = 0): a virtual detector drawn with one Q pixel size (what
  py4DSTEM and hyperspy assume) is more than 10% off stemsim's images (the failure this fixes);
- cbed_square_q = 2: equal steps (half the finer), zero angle at the centre bin, every pattern's
  and the PACBED's sum equal to the cell-step run's (1e-6), the virtual BF and ADF drawn with
  one Q pixel size within 1% of stemsim's images; N = 1 within 2.5%;
- 2 ranks write the square patterns of 1 rank bit for bit; the EMD layout's py4DSTEM
  calibration has Q_pixel_size_x = Q_pixel_size_y = the step.
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import sys

import itest

A = None
RANGES = {"BF": (0.0, 20.0), "ADF": (30.0, 70.0)}


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        raise SystemExit("FAIL %s" % what)


def run(ranks, square, name, extra=()):
    sets = ["--set", "sample.tile_x=3", "--set", "sample.tile_y=4", "--set", "detector.save_pacbed=true", "--set", "detector.cbed_square_q=%d" % square,
            "--set", "images.BF=0 20", "--set", "images.ADF=30 70"] + list(extra)
    itest.run(A, ranks, ["-q"] + sets, name)
    return os.path.join(A.workdir, name + ".h5")


def virtual(path, one_step):
    """Each named range drawn from the 4D patterns by bin-centre angle: with one_step, both axes
    at the x step (a tool with one Q pixel size), else at the file's own axes."""
    import h5py
    import numpy as np
    with h5py.File(path, "r") as f:
        c = f["cbed"][...].astype(np.float64)
        qx, qy = f["axes/cbed_qx_mrad"][...], f["axes/cbed_qy_mrad"][...]
        if one_step:
            d = f["cbed"].attrs["qx_step_mrad"]
            qx, qy = (np.arange(len(qx)) - len(qx) // 2) * d, (np.arange(len(qy)) - len(qy) // 2) * d
        r = np.hypot(qx[None, :], qy[:, None])
        out = {k: (c * ((r >= lo) & (r < hi))).sum(axis=(-1, -2)) for k, (lo, hi) in RANGES.items()}
        images = {k: f["images/" + k][...] for k in RANGES}
    return {k: float(np.abs(out[k] / images[k] - 1).max()) for k in RANGES}


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    import h5py
    import numpy as np
    itest.fresh_workdir(A, "square_q")

    cell = run(1, 0, "cell")
    with h5py.File(cell, "r") as f:
        sx, sy = f["cbed"].attrs["qx_step_mrad"], f["cbed"].attrs["qy_step_mrad"]
        sums, pacbed = f["cbed"][...].astype(float).sum(axis=(-1, -2)), f["pacbed"][...].sum()
    check(abs(sx / sy - 4 / 3) < 1e-9, "the cell's own q steps differ: %.4f and %.4f mrad" % (sx, sy))
    off = virtual(cell, one_step=True)
    check(min(off.values()) > 0.10, "cell steps, one Q pixel size: virtual images off by %s (> 10%%)"
          % {k: "%.1f%%" % (100 * v) for k, v in off.items()})

    for n, tol in ((2, 0.01), (1, 0.025)):
        sq = run(1, n, "square%d" % n)
        with h5py.File(sq, "r") as f:
            c = f["cbed"]
            dx, dy = c.attrs["qx_step_mrad"], c.attrs["qy_step_mrad"]
            qx, qy = f["axes/cbed_qx_mrad"][...], f["axes/cbed_qy_mrad"][...]
            s2, p2 = c[...].astype(float).sum(axis=(-1, -2)), f["pacbed"][...].sum()
        check(dx == dy and abs(dx - min(sx, sy) / n) < 1e-9 * dx,
              "N = %d: equal steps %.4f mrad (the finer / %d)" % (n, dx, n))
        check(qx[len(qx) // 2] == 0 and qy[len(qy) // 2] == 0 and np.allclose(np.diff(qx), dx) and
              np.allclose(np.diff(qy), dx), "N = %d: zero angle at the centre bin, the axes evenly stepped" % n)
        check(np.allclose(s2, sums, rtol=1e-6, atol=0) and abs(p2 / pacbed - 1) < 1e-6,
              "N = %d: every pattern's sum and the PACBED's as with the cell's steps" % n)
        err = virtual(sq, one_step=True)
        check(max(err.values()) <= tol, "N = %d: virtual images with one Q pixel size within %.1f%% of stemsim's: %s"
              % (n, 100 * tol, {k: "%.2f%%" % (100 * v) for k, v in err.items()}))

    two = run(2, 2, "square2_np2")
    with h5py.File(os.path.join(A.workdir, "square2.h5"), "r") as f, h5py.File(two, "r") as g:
        check(np.array_equal(f["cbed"][...], g["cbed"][...]) and np.array_equal(f["pacbed"][...], g["pacbed"][...]),
              "2 ranks write 1 rank's square patterns bit for bit")

    emd = run(1, 2, "square2_emd", ["--set", "output.layout=emd"])
    with h5py.File(emd, "r") as f:
        cal = f["stemsim/metadatabundle/calibration"]
        qxs, qys = cal["Q_pixel_size_x"][()], cal["Q_pixel_size_y"][()]
    check(qxs == qys and abs(qxs - min(sx, sy) / 2) < 1e-9 * qxs,
          "EMD: py4DSTEM's calibration Q_pixel_size_x = _y = %.4f mrad" % qxs)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
