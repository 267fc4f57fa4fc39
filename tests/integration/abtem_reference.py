#!/usr/bin/env python3
"""stemsim's microscope options against abTEM's stored numbers (ctest `abtem_reference`,
label `physics`): no abTEM needed at test time.

  abtem_reference.py --stemsim BIN [--threads N] [--reference tests/reference/abtem_options.json]

tests/reference/abtem_options.json was written by benchmarks/validation/abtem_references.py from abTEM
1.0.11 (given stemsim's own potential slices, on the option checks' silicon case): for each
option a stemsim --set list, abTEM's images (or segments; for a tilted beam, the images over
the band both codes' 4D patterns share, abTEM's shifted into stemsim's frame) and a
tolerance. This runs stemsim with each setting and asserts the relative RMS difference
(RMS of the difference over the mean of abTEM's values, as the option checks measure it),
and that each image setting moves the images by at least 10 x its tolerance from stemsim's
images without options (so that ignoring it could not pass; the segments and the tilt are
compared in quantities the plain run does not have: their option checks measure the effect).
Exit: 0 pass, 1 fail, 77 skip (no numpy/h5py).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


def rel_rms(s, a):
    import numpy as np
    s, a = np.asarray(s, float).ravel(), np.asarray(a, float).ravel()
    return float(np.sqrt(np.mean((s - a) ** 2)) / abs(a.mean()))


def tilt_images(h5, case):
    """stemsim's 4D patterns summed over each ring within the band both codes hold."""
    import h5py
    import numpy as np
    with h5py.File(h5, "r") as f:
        cbed, qx, qy = f["cbed"][()].astype(float), f["axes/cbed_qx_mrad"][()], f["axes/cbed_qy_mrad"][()]
    step, (tx, ty), band = qx[1] - qx[0], case["tilt_mrad"], case["band_mrad"]
    r = np.hypot(qx[None, :], qy[:, None])
    common = (r < band - step) & (np.hypot(qx[None, :] - tx, qy[:, None] - ty) < band - step)
    return {k: (cbed * (common & (r >= lo) & (r < hi))).sum(axis=(-2, -1)) for k, (lo, hi) in case["rings_mrad"].items()}


def hrtem_arrays(h5, b):
    """stemsim's exit wave (real, imaginary) and image, as means over b x b pixels."""
    import h5py
    import numpy as np

    def binned(a):
        ny, nx = a.shape[0] // b, a.shape[1] // b
        return a[:ny * b, :nx * b].reshape(ny, b, nx, b).mean(axis=(1, 3))
    with h5py.File(h5, "r") as f:
        e, img = f["exit_wave"][0].astype(float), f["hrtem"][0].astype(float)
    return {"exit_real": binned(e[..., 0]), "exit_imag": binned(e[..., 1]), "image": binned(img)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reference", default=os.path.join(REPO, "tests", "reference", "abtem_options.json"))
    args = ap.parse_args()
    try:
        import h5py
        import numpy
    except ImportError:
        print("SKIP numpy/h5py not available")
        return 77
    sys.path.insert(0, os.path.join(REPO, "benchmarks", "validation"))
    import abtem_crosscheck as xc  # the option checks' config (needs numpy only)

    ref = json.load(open(args.reference))
    work = tempfile.mkdtemp(prefix="stemsim_abtem_ref_")
    ini, h5 = xc.silicon_ini(work, ref["step"])
    print(f"abTEM {ref['abtem']} reference ({ref['made_by']}), {ref['grid']}, scan step {ref['step']} Angstrom")
    print("| option | compared | worst rel. RMS | tolerance | option's effect | |")
    print("|---|---|---|---|---|---|")
    bad = 0
    plain = plain_hrtem = None  # stemsim's images without any option: an option whose effect is below 10 x its
    for name, case in ref["cases"].items():  # tolerance could be ignored and still pass
        if case["compare"] == "hrtem":  # no scan: run it directly (run_stemsim reads the scan's axes)
            cmd = [os.path.abspath(args.stemsim), "-q", ini, "--set", f"output.file={h5}", "--set",
                   f"compute.threads={args.threads}"] + [a for v in case["sets"] for a in ("--set", v)]
            subprocess.run(cmd, check=True)
            got = hrtem_arrays(h5, case["bin"])
        else:
            out = xc.run_stemsim(os.path.abspath(args.stemsim), ini, h5, args.threads, case["sets"])
            if case["compare"] == "images":
                got = out["images"]
            elif case["compare"] == "segments":
                with h5py.File(h5, "r") as f:
                    got = {"segments": f["segments"][()]}
            else:
                got = tilt_images(h5, case)
        # relative to the mean of abTEM's values (an exit wave's real part: to its RMS magnitude)
        worst = max(rel_rms(got[k], v) if not k.startswith("exit") else
                    float(numpy.sqrt(numpy.mean((numpy.asarray(got[k]) - numpy.asarray(v)) ** 2) /
                                     numpy.mean(numpy.asarray(case["reference"]["exit_real"]) ** 2 +
                                                numpy.asarray(case["reference"]["exit_imag"]) ** 2)))
                    for k, v in case["reference"].items())
        ok = worst <= case["tol"]
        effect = ""
        if case["compare"] == "images" and plain is None:
            plain = got
        elif case["compare"] == "hrtem" and "exit_real" in case["reference"]:
            plain_hrtem = got["image"]  # no lens: |exit wave|^2
        elif case["compare"] in ("images", "hrtem"):
            e = max(rel_rms(plain_hrtem if k == "image" else plain[k], v) for k, v in case["reference"].items())
            ok &= e >= 10 * case["tol"]
            effect = f"{e:.2e}"
        bad += not ok
        print(f"| {name} | {', '.join(case['reference'])} | {worst:.2e} | {case['tol']:g} | {effect} | "
              f"{'ok' if ok else 'FAIL'} |", flush=True)
    print("PASS" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
