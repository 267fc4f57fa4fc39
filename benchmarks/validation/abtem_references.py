#!/usr/bin/env python3
"""abTEM's numbers for the microscope options, stored for a ctest that needs no abTEM.

Runs abTEM 1.0.11 (given stemsim's own potential slices, as the option checks do) on the
option checks' silicon case, scanned at --step (default 1.4 Angstrom: 4 x 4 probes), for
one representative setting of each option, and writes tests/reference/abtem_options.json:
for each case the stemsim --set list, what to compare (images, segments, or images over
the common band of 4D patterns for a tilted beam), abTEM's arrays and the tolerance. The
ctest `abtem_reference` (tests/integration/abtem_reference.py) runs stemsim with those
settings and asserts the agreement. Regenerate after a change that should change the
numbers (and say why in the commit):

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_references.py
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_aberrations as ab  # noqa: E402
import abtem_beam_tilt as bt  # noqa: E402
import abtem_coherence as coh  # noqa: E402
import abtem_crosscheck as xc  # noqa: E402
import abtem_hrtem as hr  # noqa: E402
import abtem_segments as seg  # noqa: E402

HRTEM_BIN = 15  # the stored HRTEM arrays are means over 15 x 15 pixels (375 x 375 -> 25 x 25)


def binned(a, b=HRTEM_BIN):
    ny, nx = a.shape[0] // b, a.shape[1] // b
    return a[:ny * b, :nx * b].reshape(ny, b, nx, b).mean(axis=(1, 3))

OUT = os.path.join(xc.REPO, "tests", "reference", "abtem_options.json")


def main():
    ap = xc.option_check_args(__doc__, 1e-3)
    ap.set_defaults(step=1.4)
    args = ap.parse_args()
    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_ref_")
    t0 = time.time()
    st = case.stemsim()
    sx, sy = st["scan_x"], st["scan_y"]
    cases = {}

    def images(name, sets, rings, tol):
        cases[name] = {"sets": sets, "compare": "images", "tol": tol,
                       "reference": {k: v.tolist() for k, v in xc.ring_images(rings).items()}}

    images("no option", [], case.abtem_scan(sx, sy), 1e-3)
    images("aberrations C10 ... C56", ab.stemsim_sets(ab.ABERRATIONS), case.abtem_scan(sx, sy, **ab.abtem_kwargs(ab.ABERRATIONS)),
           1e-3)
    images("focal spread 50 Angstrom, 7 points", [f"probe.C10={coh.C10!r}", f"probe.C30={coh.C30!r}", "probe.focal_spread=50.0"],
           case.abtem_scan(sx, sy, defocus=coh.abtem_defocus(50.0, 25), C30=coh.C30), 2e-3)
    soft = [f"probe.C10={-60.0!r}", f"probe.C30={5.0e4!r}", "probe.soft_aperture=true"]
    images("soft aperture", soft, case.abtem_scan(sx, sy, soft=True, C10=-60.0, C30=5.0e4), 1e-3)
    label, rings, segs, inner, outer, rot, _ = seg.CASES[0]
    sets = [f"probe.{k}={v!r}" for k, v in seg.OPTICS.items()] + [
        f"detector.segments={segs}", f"detector.segment_rings={rings}", f"detector.segment_inner={inner!r}",
        f"detector.segment_outer={outer!r}", f"detector.segment_rotation={rot!r}"]
    cases["segmented detector, " + label] = {
        "sets": sets, "compare": "segments", "tol": 2e-3,
        "reference": {"segments": seg.abtem_segments(case, sx, sy, rings, segs, inner, outer, rot).tolist()}}
    s0 = bt.stemsim_4d(case, [])
    tilt = (float(4 * (s0["qx"][1] - s0["qx"][0])), float(-3 * (s0["qy"][1] - s0["qy"][0])))
    s1 = bt.stemsim_4d(case, [f"probe.beam_tilt_x={tilt[0]!r}", f"probe.beam_tilt_y={tilt[1]!r}"])
    a, ax, ay = bt.abtem_4d(case, sx, sy, tilt)
    a_s, mask = bt.to_stemsim_frame(a, ax, ay, s1, tilt, case.plan["band_limit_mrad"])
    cases["beam tilt (4, -3) Fourier pixels"] = {
        "sets": [f"probe.beam_tilt_x={tilt[0]!r}", f"probe.beam_tilt_y={tilt[1]!r}", "detector.save_4d=true",
                 f"probe.C10={bt.C10!r}", f"probe.C30={bt.C30!r}"],
        "compare": "tilt_4d", "tol": 1e-3, "tilt_mrad": list(tilt), "band_mrad": case.plan["band_limit_mrad"],
        "rings_mrad": bt.RINGS,
        "reference": {k: v.tolist() for k, v in bt.images(a_s, s1["qx"], s1["qy"], mask).items()}}
    lens_sets = [f"probe.{k}={v!r}" for k, v in hr.LENS.items()]
    hr_common = ["simulation.algorithm=hrtem", "output.save_exit_wave=true"]
    e, _ = hr.abtem_hrtem(case, {}, aperture=0.0)
    cases["hrtem exit wave"] = {"sets": hr_common + ["hrtem.objective_aperture=0.0"], "compare": "hrtem", "tol": 1e-3,
                                "bin": HRTEM_BIN, "reference": {"exit_real": binned(e.real).tolist(),
                                                                "exit_imag": binned(e.imag).tolist()}}
    _, img = hr.abtem_hrtem(case, hr.LENS)
    cases["hrtem image, lens and 25 mrad aperture"] = {
        "sets": hr_common + lens_sets + [f"hrtem.objective_aperture={hr.APERTURE!r}"], "compare": "hrtem", "tol": 1e-3,
        "bin": HRTEM_BIN, "reference": {"image": binned(img).tolist()}}
    _, img = hr.abtem_hrtem(case, hr.LENS, hr.SIGMA)
    cases["hrtem image, lens and focal spread"] = {
        "sets": hr_common + lens_sets + [f"hrtem.objective_aperture={hr.APERTURE!r}", f"probe.focal_spread={hr.SIGMA!r}"],
        "compare": "hrtem", "tol": 2e-3, "bin": HRTEM_BIN, "reference": {"image": binned(img).tolist()}}
    doc = {"made_by": "benchmarks/validation/abtem_references.py", "abtem": abtem.__version__, "step": args.step,
           "grid": case.grid, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=0, default=float)
    print(f"wrote {OUT}: {len(cases)} cases in {time.time() - t0:.0f} s ({case.grid}, {len(sx)} x {len(sy)} probes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
