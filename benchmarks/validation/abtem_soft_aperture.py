#!/usr/bin/env python3
"""stemsim's soft aperture ([probe] soft_aperture) against abTEM's (Probe(soft=True)).

Same set-up as benchmarks/validation/abtem_aberrations.py (silicon [100], 200 keV, 20 mrad, the grid
stemsim chooses at 0.06 Angstrom, abTEM gets stemsim's slices), with defocus and Cs so
that the aperture's edge matters. Cases: soft against soft, hard against hard (the floor
of the two codes' agreement), and stemsim's soft against abTEM's hard (must differ more
than the matched cases do). Relative RMS of BF/ABF/ADF/HAADF; PASS when soft-soft is
within --tol and below a third of soft-hard. Also the probe's own intensity in real
space at the scan's first position (both codes' probe wave functions, no specimen).

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_soft_aperture.py [--json out.json]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

KEYS = ("BF", "ABF", "ADF", "HAADF")
C10, C30 = -60.0, 5.0e4


def main():
    ap = xc.option_check_args(__doc__, 1e-3)
    args = ap.parse_args()

    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_soft_")
    t0 = time.time()

    def stemsim(soft):
        sets = [f"probe.C10={C10!r}", f"probe.C30={C30!r}", f"probe.soft_aperture={'true' if soft else 'false'}"]
        return case.stemsim(sets)

    def rel(a, b):
        return {k: xc.compare(a[k], b[k])["rel_rms"] for k in KEYS}

    s_soft, s_hard = stemsim(True), stemsim(False)
    sx, sy = s_soft["scan_x"], s_soft["scan_y"]
    a_soft = xc.ring_images(case.abtem_scan(sx, sy, soft=True, C10=C10, C30=C30))
    a_hard = xc.ring_images(case.abtem_scan(sx, sy, soft=False, C10=C10, C30=C30))
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
    return xc.option_check_done("abtem_soft_aperture", ok, {label: r for label, r in rows}, args.json)


if __name__ == "__main__":
    sys.exit(main())
