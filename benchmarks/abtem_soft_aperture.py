#!/usr/bin/env python3
"""stemsim's soft aperture ([probe] soft_aperture) against abTEM's (Probe(soft=True)).

Same set-up as benchmarks/abtem_aberrations.py (silicon [100], 200 keV, 20 mrad, the grid
stemsim chooses at 0.06 Angstrom, abTEM gets stemsim's slices), with defocus and Cs so
that the aperture's edge matters. Cases: soft against soft, hard against hard (the floor
of the two codes' agreement), and stemsim's soft against abTEM's hard (must differ more
than the matched cases do). Relative RMS of BF/ABF/ADF/HAADF; PASS when soft-soft is
within --tol and below a third of soft-hard. Also the probe's own intensity in real
space at the scan's first position (both codes' probe wave functions, no specimen).

    /tmp/abtem-venv/bin/python benchmarks/abtem_soft_aperture.py [--json out.json]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

KEYS = ("BF", "ABF", "ADF", "HAADF")
C10, C30 = -60.0, 5.0e4


def abtem_scan(potential, sx, sy, soft):
    import abtem

    pos = np.array([(x, y) for y in sy for x in sx])
    probe = abtem.Probe(energy=200e3, semiangle_cutoff=20, soft=soft, C10=C10, C30=C30)
    probe.grid.match(potential)
    det = abtem.FlexibleAnnularDetector(step_size=1)
    with abtem.config.set({"antialias.taper": 0.0}):
        m = probe.scan(potential, scan=abtem.CustomScan(pos), detectors=det, lazy=False)
    return np.asarray(m.array, dtype=np.float64).reshape(len(sy), len(sx), -1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stemsim", default=os.path.join(xc.REPO, "build", "stemsim"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--step", type=float, default=0.7)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_soft_")
    pot = case.potential
    t0 = time.time()

    def stemsim(soft):
        sets = [f"probe.C10={C10!r}", f"probe.C30={C30!r}", f"probe.soft_aperture={'true' if soft else 'false'}"]
        return case.stemsim(sets)

    def rel(a, b):
        return {k: xc.compare(a[k], b[k])["rel_rms"] for k in KEYS}

    s_soft, s_hard = stemsim(True), stemsim(False)
    sx, sy = s_soft["scan_x"], s_soft["scan_y"]
    a_soft = xc.ring_images(abtem_scan(pot, sx, sy, True))
    a_hard = xc.ring_images(abtem_scan(pot, sx, sy, False))
    rows = [("soft vs abTEM soft", rel(s_soft["images"], a_soft)),
            ("hard vs abTEM hard", rel(s_hard["images"], a_hard)),
            ("soft vs abTEM hard (must differ)", rel(s_soft["images"], a_hard)),
            ("stemsim soft vs stemsim hard (the edge's effect)", rel(s_soft["images"], s_hard["images"]))]
    print("| case | " + " | ".join(f"{k} rel. RMS" for k in KEYS) + " |")
    print("|---|" + "---|" * len(KEYS))
    for label, r in rows:
        print(f"| {label} | " + " | ".join(f"{r[k]:.2e}" for k in KEYS) + " |")
    matched, crossed = max(rows[0][1].values()), max(rows[2][1].values())
    ok = matched <= args.tol and matched < crossed / 3
    print(f"\nworst matched {matched:.2e}, worst crossed {crossed:.2e}; {time.time() - t0:.0f} s; abTEM "
          f"{abtem.__version__}; {case.grid}, {len(sx)} x {len(sy)} probes")
    print("abtem_soft_aperture:", "PASS" if ok else "FAIL")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({label: r for label, r in rows}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
