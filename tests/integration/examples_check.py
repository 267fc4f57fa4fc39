#!/usr/bin/env python3
"""examples/read_stemsim.py and examples/render_png.py on a real output (ctest label `interop`).

  examples_check.py --stemsim BIN --config small.ini --workdir DIR

The small case with rings, DPC and 4D and a 2-point defocus series: the reader names every
axis (series axes first), its coordinates are the file's /axes (rings at their centres),
its arrays equal h5py's; an incomplete file is refused. The renderer writes every image,
the DPC maps, the radial profile and the 4D pattern at a chosen probe; a probe outside the
scan is refused; a series is drawn a panel per point, each holding that point's image (its
mean checked against h5py's), or the one point --point chooses, and an open-ended [images]
range is titled "60 mrad and beyond". Exit: 0 pass, 1 fail, 77 skip (no h5py/matplotlib).
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    try:
        import h5py
        import matplotlib  # noqa: F401
        import numpy as np
    except ImportError as err:
        print("SKIP %s" % err)
        return 77
    here = os.path.dirname(os.path.abspath(a.config))
    examples = os.path.join(here, "..", "..", "examples")
    sys.path.insert(0, examples)
    from read_stemsim import load
    work = os.path.join(os.path.abspath(a.workdir), "examples_check")
    os.makedirs(work, exist_ok=True)
    text = open(a.config).read().replace("xyz = ../../data/", "xyz = " + os.path.join(here, "..", "..", "data") + "/")
    ini = os.path.join(work, "small.ini")
    with open(ini, "w") as f:
        f.write(text.replace("defocus = 0\n", "") + "\n[series]\ndefocus = -20 20\n")
    out = os.path.join(work, "series.h5")
    p = subprocess.run([a.stemsim, "-q", ini, "--set", "output.file=" + out, "--set", "output.overwrite=true"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        print(p.stdout + p.stderr)
        return 1
    r = load(out)
    bad = 0
    want = {"images/HAADF": ("defocus", "scan_y", "scan_x"), "rings": ("defocus", "scan_y", "scan_x", "ring"),
            "cbed": ("defocus", "scan_y", "scan_x", "qy", "qx"), "dpc_com_x": ("defocus", "scan_y", "scan_x")}
    with h5py.File(out, "r") as f:
        for name, dims in want.items():
            if r[name].dims != dims or not np.array_equal(r[name].data, f[name][()]):
                print("FAIL %s: dims %s (want %s) or data differ" % (name, r[name].dims, dims))
                bad += 1
        if not np.array_equal(r["images/HAADF"].coords["defocus"], [-20, 20]) or \
                not np.array_equal(r["images/HAADF"].coords["scan_x"], f["axes/scan_x"][()]):
            print("FAIL coordinates of the series and scan axes")
            bad += 1
        centres = f["axes/ring_inner_mrad"][()] + f["rings"].attrs["ring_width_mrad"] / 2
        if not np.allclose(r["rings"].coords["ring"], centres):
            print("FAIL ring coordinates are not the ring centres")
            bad += 1
    print("reader: %d datasets with named axes and coordinates" % len(r))
    broken = os.path.join(work, "incomplete.h5")
    with h5py.File(broken, "w") as f:
        f.attrs["complete"] = 0
    try:
        load(broken)
        print("FAIL an incomplete file was read")
        bad += 1
    except ValueError:
        pass
    png = os.path.join(work, "png")
    p = subprocess.run([sys.executable, os.path.join(examples, "render_png.py"), out, png, "--probe", "2", "1"],
                       capture_output=True, text=True, timeout=300)
    made = sorted(os.listdir(png)) if os.path.isdir(png) else []
    need = ["series_HAADF.png", "series_BF.png", "series_dpc_com_x.png", "series_rings.png", "series_cbed.png"]
    if p.returncode or any(n not in made for n in need):
        print(p.stdout + p.stderr)
        print("FAIL render_png.py wrote %s" % made)
        bad += 1
    # what it drew: a panel per series point holding that point's image, open ranges named as such
    p = subprocess.run([sys.executable, os.path.join(examples, "render_png.py"), out, png, "--summary"],
                       capture_output=True, text=True, timeout=300)
    drawn = [l.split() for l in p.stdout.splitlines() if l.startswith("DRAWN /images/HAADF")]
    with h5py.File(out, "r") as f:
        haadf = f["images/HAADF"][()]
    means = [float(d[d.index("mean") + 1]) for d in drawn]
    if p.returncode or len(drawn) != 2 or not np.allclose(means, haadf.mean(axis=(1, 2)), rtol=1e-12, atol=0):
        print(p.stdout + p.stderr)
        print("FAIL render_png.py drew %d HAADF panels with means %s, expected the 2 points' %s" %
              (len(drawn), means, haadf.mean(axis=(1, 2))))
        bad += 1
    if "FIGURE series_HAADF.png HAADF (60 mrad and beyond)" not in p.stdout or "e+09" in p.stdout:
        print(p.stdout)
        print("FAIL the open-ended HAADF range is not titled '60 mrad and beyond'")
        bad += 1
    p = subprocess.run([sys.executable, os.path.join(examples, "render_png.py"), out, png, "--summary", "--point", "1"],
                       capture_output=True, text=True, timeout=300)
    drawn = [l for l in p.stdout.splitlines() if l.startswith("DRAWN /images/HAADF")]
    if p.returncode or len(drawn) != 1 or "point [1]" not in drawn[0]:
        print(p.stdout + p.stderr)
        print("FAIL --point 1 did not draw the second point alone")
        bad += 1
    p = subprocess.run([sys.executable, os.path.join(examples, "render_png.py"), out, png, "--probe", "9", "9"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode == 0 or "outside" not in p.stderr:
        print("FAIL a probe outside the scan was not refused")
        bad += 1
    print("renderer: %s" % ", ".join(made))
    print("PASS" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
