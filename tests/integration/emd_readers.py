#!/usr/bin/env python3
"""[output] layout = emd opened by py4DSTEM's and hyperspy's own loaders (ctest label `interop`).

  emd_readers.py --stemsim BIN --mpiexec BIN --config small.ini --workdir DIR --python PYTHON

The small case on a non-square cell (2 x 3 cells of Si: unequal q steps), two [images] ranges
and 4D patterns, once alone and once as a defocus series, each in stemsim's layout and in the
EMD layout. In PYTHON (build-venv/ from .ci/deps), with no stemsim code: py4DSTEM.read gives
a DataCube [R_x][R_y][Q_x][Q_y] (the series: a Root of one per point) whose calibration holds
the scan step (A) as R pixel size and stemsim's qx step (mrad) as Q pixel size, both steps as
Q_pixel_size_x, _y, and the image ranges as RealSlices; hs.load gives the 4D patterns with the
scan as navigation (Angstrom) and q as signal with each axis' own step (mrad), each image range
its own named signal (the series: its defocus axis with the values). All data equal the native
file's. Exit: 0 pass, 1 fail, 77 skip (PYTHON lacks py4DSTEM or hyperspy).
"""
import os
import subprocess
import sys
import textwrap

import itest

CHECK = textwrap.dedent(r"""
    import os, sys, warnings
    warnings.filterwarnings("ignore")
    import logging
    logging.disable(logging.WARNING)
    import h5py, numpy as np, py4DSTEM, hyperspy.api as hs
    work = sys.argv[1]
    bad = []
    def expect(cond, what):
        if not cond:
            bad.append(what)
        print(("ok   " if cond else "FAIL ") + what)
    def near(a, b):
        return abs(a - b) <= 1e-9 * abs(b)
    def load(name):  # hs.load picks its reader by the extension
        link = os.path.join(work, name + ".emd")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join(work, name + ".h5"), link)
        s = hs.load(link)
        return {x.metadata.General.title: x for x in (s if isinstance(s, list) else [s])}
    n = h5py.File(os.path.join(work, "native.h5"), "r")
    qx, qy, sx = n["axes/cbed_qx_mrad"][()], n["axes/cbed_qy_mrad"][()], n["axes/scan_x"][()]
    dqx, dqy, step = qx[1] - qx[0], qy[1] - qy[0], sx[1] - sx[0]
    expect(not near(dqx, dqy), "the cell is non-square: q steps %.5g, %.5g mrad" % (dqx, dqy))

    # py4DSTEM, its own reader
    dc = py4DSTEM.read(os.path.join(work, "emd.h5"))
    expect(type(dc).__name__ == "DataCube", "py4DSTEM.read gives a %s" % type(dc).__name__)
    cbed = n["cbed"][()].transpose(1, 0, 3, 2)
    expect(dc.data.shape == cbed.shape and np.array_equal(dc.data, cbed),
           "DataCube %s = native cbed as [R_x][R_y][Q_x][Q_y]" % (dc.data.shape,))
    c = dc.calibration
    expect(near(c.get_R_pixel_size(), step) and c.get_R_pixel_units() == "A",
           "R pixel size %s %s = the scan step" % (c.get_R_pixel_size(), c.get_R_pixel_units()))
    expect(near(c.get_Q_pixel_size(), dqx) and c.get_Q_pixel_units() == "mrad",
           "Q pixel size %s %s = stemsim's qx step" % (c.get_Q_pixel_size(), c.get_Q_pixel_units()))
    expect(near(c["Q_pixel_size_x"], dqx) and near(c["Q_pixel_size_y"], dqy), "Q_pixel_size_x, _y = both steps")
    expect(near(c.get_qx0_mean(), -qx[0] / dqx) and near(c.get_qy0_mean(), -qy[0] / dqy), "origin at q = 0")
    for im in ("HAADF", "BF"):
        rs = dc.tree(im)
        expect(type(rs).__name__ == "RealSlice" and np.array_equal(rs.data, n["images/" + im][()].T),
               "RealSlice %s = native image" % im)
    root = py4DSTEM.read(os.path.join(work, "emd_series.h5"))
    s = h5py.File(os.path.join(work, "series.h5"), "r")
    for j in range(2):
        d = root.tree("cbed_depth0000_df%04d" % j)
        expect(np.array_equal(d.data, s["cbed"][j].transpose(1, 0, 3, 2)) and near(d.calibration.get_R_pixel_size(), step),
               "series point %d: its DataCube, calibrated" % j)

    # hyperspy, its own loader
    one = load("emd")
    expect({"HAADF", "BF", "CBED_array", "total_intensity"} <= set(one), "hs.load's signals: %s" % sorted(one))
    x = one.get("CBED_array")
    if x is not None:
        nav = [(a.name, a.size, a.scale, str(a.units)) for a in x.axes_manager.navigation_axes]
        sig = {a.name: a for a in x.axes_manager.signal_axes}
        expect(sorted(a[0] for a in nav) == ["R_x", "R_y"] and all(near(a[2], step) and a[3] == "\u00c5" for a in nav),
               "4D navigation = the scan in Angstrom: %s" % nav)
        expect(set(sig) == {"Q_x", "Q_y"} and near(sig["Q_x"].scale, dqx) and near(sig["Q_y"].scale, dqy)
               and str(sig["Q_x"].units) == "mrad", "4D signal = q, each axis its step in mrad")
        expect(np.array_equal(np.asarray(x.data), cbed), "4D data = native cbed")
    for im in ("HAADF", "BF"):
        y = one.get(im)
        expect(y is not None and np.array_equal(y.data, n["images/" + im][()]) and y.axes_manager.navigation_dimension == 0
               and near(y.axes_manager["R_x"].scale, step), "signal %s = native image, R in Angstrom" % im)
    many = load("emd_series")
    y = many.get("HAADF")
    expect(y is not None and np.array_equal(y.data, s["images/HAADF"][()]), "series HAADF = native [defocus][y][x]")
    if y is not None:
        a = y.axes_manager["defocus"]
        expect(a.navigate and a.offset == -20 and a.scale == 40, "series defocus axis -20, 40 A")
    expect({"CBED_array defocus=-20", "CBED_array defocus=20"} <= set(many), "series 4D: one signal per point")
    sys.exit(1 if bad else 0)
""")


def main():
    a = itest.parse_args(("--python", {"default": ""}))
    if not a.python or subprocess.run([a.python, "-c", "import py4DSTEM, hyperspy.api"],
                                      capture_output=True, timeout=300).returncode != 0:
        print("SKIP %s lacks py4DSTEM or hyperspy (.ci/deps --interop makes build-venv/)" % (a.python or "no Python"))
        return 77
    itest.small_case(a, "emd_readers", replace=(("tile_y = 2", "tile_y = 3"),),
                     append="\n[images]\nBF = 0 10\nHAADF = 40 100\n")
    emd = ["--set", "output.layout=emd"]
    series = ["--set", "series.defocus=-20,20"]
    itest.run(a, 1, [], "native")
    itest.run(a, 1, emd, "emd")
    itest.run(a, 1, series, "series")
    itest.run(a, 1, emd + series, "emd_series")
    p = subprocess.run([a.python, "-c", CHECK, a.workdir], capture_output=True, text=True, timeout=600)
    print(p.stdout.strip())
    if p.returncode != 0:
        print(p.stderr[-3000:])
        print("FAIL py4DSTEM / hyperspy do not read the EMD file calibrated and the right way round")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
