#!/usr/bin/env python3
"""stemsim's segmented detector ([detector] segments) against abTEM's SegmentedDetector.

Same set-up as benchmarks/validation/abtem_aberrations.py (silicon [100], 200 keV, 20 mrad, abTEM
gets stemsim's slices, so only the detector differs). The probe carries coma and
astigmatism so that the segments differ from each other. Cases:

  matched   2 rings x 4 segments between 6 and 40 mrad, rotated 10 degrees, and
            1 ring x 6 segments between 0 and 20 mrad (a bright-field DPC detector)
  mirrored  stemsim's rotation negated against abTEM's: must differ (the azimuth
            convention is tested, not assumed)

Prints the relative RMS of every segment's image and of the DPC-from-segments maps,
PASS when the matched cases are within --tol and the mirrored one is not. abTEM runs
only here:  /tmp/abtem-venv/bin/python benchmarks/validation/abtem_segments.py [--json out.json]
"""
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

OPTICS = {"C10": -30.0, "C12": 40.0, "phi12": 25.0, "C21": 3.0e3, "phi21": 60.0}
CASES = [  # (label, rings, segments, inner, outer, rotation deg, stemsim's rotation sign)
    ("2 rings x 4 segments, 6-40 mrad, 10 deg", 2, 4, 6.0, 40.0, 10.0, 1),
    ("1 ring x 6 segments, 0-20 mrad, 0 deg", 1, 6, 0.0, 20.0, 0.0, 1),
    ("2 x 4, stemsim's rotation negated (must differ)", 2, 4, 6.0, 40.0, 10.0, -1),
]


def abtem_segments(case, sx, sy, rings, segs, inner, outer, rot_deg):
    import abtem

    kw = {k: (math.radians(v) if k.startswith("phi") else v) for k, v in OPTICS.items()}
    det = abtem.SegmentedDetector(nbins_radial=rings, nbins_azimuthal=segs, inner=inner, outer=outer,
                                  rotation=math.radians(rot_deg))
    return case.abtem_scan(sx, sy, detector=det, **kw).reshape(len(sy), len(sx), rings, segs)


def dpc(S, segs, rot_deg):
    phi = math.radians(rot_deg) + 2 * np.pi * (np.arange(segs) + 0.5) / segs
    tot = S.sum(axis=(2, 3))
    return (S * np.cos(phi)).sum(axis=(2, 3)) / tot, (S * np.sin(phi)).sum(axis=(2, 3)) / tot


def rel_rms(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)) / np.abs(b).mean())


def main():
    ap = xc.option_check_args(__doc__, 2e-3)
    args = ap.parse_args()

    import abtem
    import h5py

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_seg_")

    ok, results, t0 = True, {}, time.time()
    print("| case | segments: worst rel. RMS | DPC x | DPC y | spread between segments | |")
    print("|---|---|---|---|---|---|")
    for label, rings, segs, inner, outer, rot, sign in CASES:
        sets = [f"probe.{k}={v!r}" for k, v in OPTICS.items()] + [
            f"detector.segments={segs}", f"detector.segment_rings={rings}", f"detector.segment_inner={inner!r}",
            f"detector.segment_outer={outer!r}", f"detector.segment_rotation={sign * rot!r}"]
        st = case.stemsim(sets)
        with h5py.File(case.h5, "r") as f:
            S = f["segments"][()]
            dx, dy = f["dpc_segments_x"][()], f["dpc_segments_y"][()]
        A = abtem_segments(case, st["scan_x"], st["scan_y"], rings, segs, inner, outer, rot)
        worst = max(rel_rms(S[..., r, s], A[..., r, s]) for r in range(rings) for s in range(segs))
        ax, ay = dpc(A, segs, rot)
        ex = float(np.sqrt(np.mean((dx - ax) ** 2)) / max(np.abs(ax).max(), 1e-12))
        ey = float(np.sqrt(np.mean((dy - ay) ** 2)) / max(np.abs(ay).max(), 1e-12))
        spread = float(np.std(S.mean(axis=(0, 1))) / np.mean(S))
        good = (worst <= args.tol) if sign > 0 else (worst >= 10 * args.tol)
        ok &= good
        results[label] = {"segments": worst, "dpc_x": ex, "dpc_y": ey, "spread": spread}
        print(f"| {label} | {worst:.2e} | {ex:.2e} | {ey:.2e} | {spread:.2f} | {'ok' if good else 'FAIL'} |", flush=True)
    print(f"\n{time.time() - t0:.0f} s; abTEM {abtem.__version__}; {case.grid}, "
          f"{len(st['scan_x'])} x {len(st['scan_y'])} probes; optics {OPTICS}")
    return xc.option_check_done("abtem_segments", ok, results, args.json)


if __name__ == "__main__":
    sys.exit(main())
