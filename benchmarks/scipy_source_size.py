#!/usr/bin/env python3
"""stemsim's source-size blur ([probe] source_size) against scipy.ndimage.gaussian_filter.

Runs stemsim twice on the small test model (tests/integration/small.ini), without and with
a source size, for a scan that covers the cell (periodic: scipy mode "wrap") and for a
window (mirrored: mode "reflect"), and compares every real-space output of the blurred run
with scipy's filter applied to the unblurred one (sigma = FWHM / 2.3548 / step, truncate 4).

    python3 benchmarks/scipy_source_size.py [--stemsim build/stemsim]     (needs h5py, scipy)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from scipy.ndimage import gaussian_filter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = {  # name: (scan settings, step, scipy mode)
    "periodic (scan = cell)": (["scan.x_start=0", "scan.x_end=10.86", "scan.y_start=0", "scan.y_end=10.86"], 0.905, "wrap"),
    "window (mirrored edges)": (["scan.x_start=2", "scan.x_end=6", "scan.y_start=1", "scan.y_end=4"], 0.5, "reflect"),
}


def run(exe, out, sets):
    cmd = [exe, "-q", os.path.join(REPO, "tests", "integration", "small.ini"), "--set", f"output.file={out}",
           "--set", "output.overwrite=true", "--set", "detector.save_dpc=true"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stemsim", default=os.path.join(REPO, "build", "stemsim"))
    ap.add_argument("--fwhm", type=float, default=2.0)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="stemsim_ss_")
    worst = 0.0
    for label, (scan, step, mode) in CASES.items():
        sets = scan + [f"scan.step={step}"]
        raw_h5, blur_h5 = os.path.join(work, "raw.h5"), os.path.join(work, "blur.h5")
        run(args.stemsim, raw_h5, sets)
        run(args.stemsim, blur_h5, sets + [f"probe.source_size={args.fwhm}"])
        sig = args.fwhm / (2 * np.sqrt(2 * np.log(2))) / step
        with h5py.File(raw_h5, "r") as fr, h5py.File(blur_h5, "r") as fb:
            names = ["rings", "dpc_com_x", "dpc_com_y", "total_intensity"] + ["images/" + k for k in fr["images"]]
            for name in names:
                raw, got = fr[name][()], fb[name][()]
                ref = gaussian_filter(raw, sigma=[sig, sig] + [0] * (raw.ndim - 2), mode=mode, truncate=4.0)
                r = float(np.sqrt(np.mean((got - ref) ** 2)) / np.abs(ref).mean())
                e = float(np.sqrt(np.mean((got - raw) ** 2)) / np.abs(raw).mean())
                worst = max(worst, r)
                print(f"{label:24s} {name:16s} vs scipy {r:.1e}  (the blur changed it by {e:.1e})")
    ok = worst <= 1e-12
    print("scipy_source_size:", "PASS" if ok else "FAIL", f"(worst {worst:.1e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
