#!/usr/bin/env python3
"""Numbers of Prismatic's EMD outputs -> reference.json (called by make_reference.sh).

Per job: Prismatic's command line, the options its written parameter file does not hold
(`convert_extra`: Prismatic's writeParamFile has no --3Dpotential line, so a -3DP 0 run's
file reads back as the default 3D potential), the scan positions (dim1 = x, dim2 = y, A),
the 2D image (-2D, annular_detector_depth0000) and ring sums per probe, indexed [y][x]
like stemsim's own layout (Prismatic stores [x][y]), the total intensity per probe (sum of
all rings), the mean ring profile, and what Prismatic's metadata says (lambda, depth).
Prismatic's ring i holds [i d, (i+1) d) (Multislice_calcOutput.cpp setupDetector_multislice,
PRISM03 alphaInd) like stemsim's; a range [lo, hi) sums rings lo/d .. hi/d - 1 (as
Prismatic's own 2D output, fileIO.cpp).
"""
import argparse
import json
import os
import re

import h5py
import numpy as np

RANGES = {"BF": [0, 20], "ADF": [20, 60], "HAADF": [70, 200]}


def sig(a, n=6):
    return [float("%.*g" % (n, v)) for v in np.asarray(a, dtype=float).ravel()]


def grid(a, n=6):
    return [sig(row, n) for row in np.asarray(a)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--prismatic", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("jobs", nargs="+")
    a = ap.parse_args()
    commit = os.environ.get("PRISMATIC_COMMIT", "9f205d0dbd26f23ccd9ec507425e76d359070217")
    ref = {"prismatic": {"repository": "https://github.com/prism-em/prismatic", "commit": commit,
                         "build": "CPU only, single precision (PRISMATIC_ENABLE_CLI=1, GPU and GUI off)",
                         "note": "regenerate with tests/reference/prismatic/make_reference.sh (README.md)"},
           "ranges_mrad": RANGES, "jobs": {}}
    for name in a.jobs:
        cmd = open(os.path.join(a.scratch, name + ".cmd")).read().split()  # no quoting in these
        log = open(os.path.join(a.scratch, name + ".log")).read()
        secs = [ln for ln in log.splitlines() if ln.startswith(name + ":")]
        f = h5py.File(os.path.join(a.run, name + ".h5"), "r")
        rs = f["4DSTEM_simulation/data/realslices"]
        vd = rs["virtual_detector_depth0000"]
        rings = vd["data"][()].transpose(1, 0, 2).astype(float)  # [x][y][ring] -> [y][x][ring]
        dim3 = vd["dim3"][()]
        d = float(dim3[1] - dim3[0])
        img2d = rs["annular_detector_depth0000/data"][()].T.astype(float)
        par = f["4DSTEM_simulation/metadata/metadata_0/original/simulation_parameters"].attrs
        job = {"command": " ".join(cmd), "params_file": name + ".params.txt",
               "convert_extra": ["-3DP", "0"] if "-3DP" in cmd and cmd[cmd.index("-3DP") + 1] == "0" else [],
               "algorithm": par["a"].decode(), "energy_keV": float(par["E"]), "potential_3d": bool(int(par["3DP"])),
               "lambda_A": float(par["lambda"]), "pixel_size_A": float(par["px"]),
               "output_depth_A": float(vd.attrs["output_depth"]),
               "ring_width_mrad": d, "n_rings": int(rings.shape[2]), "max_angle_mrad": float(rings.shape[2] * d),
               "scan_x_A": sig(vd["dim1"][()]), "scan_y_A": sig(vd["dim2"][()]),
               "image_2d_mrad": sig(par["2D"]), "image_2d": grid(img2d),
               "total": grid(rings.sum(axis=2)),
               "ranges": {}, "mean_rings": sig(rings.mean(axis=(0, 1)), 5),
               "prismatic_seconds": float(secs[-1].split()[1]) if secs else None}
        for rname, (lo, hi) in RANGES.items():
            i0, i1 = int(round(lo / d)), min(int(round(hi / d)), rings.shape[2])
            job["ranges"][rname] = grid(rings[:, :, i0:i1].sum(axis=2))
        ref["jobs"][name] = job
        print("%-26s %s HAADF mean %.5g  BF mean %.5g  max angle %g mrad" %
              (name, job["algorithm"], np.mean(job["ranges"]["HAADF"]), np.mean(job["ranges"]["BF"]), job["max_angle_mrad"]))
    dump(ref, a.out)


def dump(ref, path):
    """JSON with each list of numbers (and each image row) on one line."""
    text = json.dumps(ref, indent=1)
    flat = re.compile(r"\[\s*([-+0-9.eE,\s]*?)\s*\]")
    text = flat.sub(lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",") if v.strip()) + "]", text)
    text = re.sub(r"\[\s*(\[[^\[\]]*\](?:,\s*\[[^\[\]]*\])*)\s*\]",
                  lambda m: "[" + re.sub(r"\],\s*\[", "], [", m.group(1)) + "]", text)
    with open(path, "w") as o:
        o.write(text + "\n")


if __name__ == "__main__":
    main()
