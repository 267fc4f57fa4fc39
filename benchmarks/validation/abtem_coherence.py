#!/usr/bin/env python3
"""stemsim's temporal partial coherence ([probe] focal_spread) against abTEM's.

stemsim averages the images over Gauss-Hermite defoci; abTEM (1.0.11) is given a
defocus *ensemble*, abtem.distributions.gaussian (evenly spaced defoci with Gaussian
weights over +-4 sigma, averaged over), an independent quadrature of the same integral.
Same set-up as benchmarks/validation/abtem_aberrations.py: silicon [100], 200 keV, 20 mrad,
abTEM gets stemsim's slices, so only the probe differs. Cases (C10 and C30 chosen
so that a defocus spread changes the images a lot):

  spread          focal_spread = sigma with stemsim's default points (7) and with 11
  coherent        sigma -> 0 (1e-3 Angstrom) must equal the coherent run (to 1e-6)
  ignored         stemsim's coherent images against abTEM's spread ensemble: must differ

Also prints stemsim's convergence in the number of points (3, 5, 7, 9 against 15).
PASS when every matched case is within --tol (relative RMS of BF/ABF/ADF/HAADF) and the
spread changes the images by more than 10 x --tol. abTEM runs only here:

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_coherence.py [--json out.json]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

KEYS = ("BF", "ABF", "ADF", "HAADF")
C10, C30 = -40.0, 2.0e4  # Angstrom: 40 Angstrom underfocus (stemsim's sign), Cs 2 um


def abtem_defocus(sigma, samples):
    """abTEM's defocus (-C10) for a spread sigma: an ensemble over +-4 sigma, or one value."""
    import abtem

    if sigma <= 0:
        return -C10
    return abtem.distributions.gaussian(standard_deviation=sigma, num_samples=samples, center=-C10, sampling_limit=4.0)


def main():
    ap = xc.option_check_args(__doc__, 2e-3, sigma=(float, 50.0, "focal spread (standard deviation), Angstrom"),
                              samples=(int, 25, "abTEM's defoci over +-4 sigma"))
    args = ap.parse_args()

    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_coh_")

    optics = [f"probe.C10={C10!r}", f"probe.C30={C30!r}"]
    t0 = time.time()

    def stemsim(sigma, points=None):
        sets = optics + [f"probe.focal_spread={sigma!r}"] + ([f"probe.focal_points={points}"] if points else [])
        return case.stemsim(sets)

    def rel(a, b):
        return {k: xc.compare(a[k], b[k])["rel_rms"] for k in KEYS}

    coherent = stemsim(0.0)
    spread7, spread11 = stemsim(args.sigma), stemsim(args.sigma, 11)
    sx, sy = spread7["scan_x"], spread7["scan_y"]
    ab = xc.ring_images(case.abtem_scan(sx, sy, defocus=abtem_defocus(args.sigma, args.samples), C30=C30))
    ab_coherent = xc.ring_images(case.abtem_scan(sx, sy, defocus=abtem_defocus(0.0, 1), C30=C30))
    rows = [
        ("coherent: stemsim vs abTEM", rel(coherent["images"], ab_coherent), True),
        (f"sigma {args.sigma:g}, 7 points vs abTEM {args.samples} defoci", rel(spread7["images"], ab), True),
        (f"sigma {args.sigma:g}, 11 points vs abTEM {args.samples} defoci", rel(spread11["images"], ab), True),
        ("stemsim coherent vs abTEM spread (must differ)", rel(coherent["images"], ab), False),
    ]
    tiny = stemsim(1e-3)
    rows.append(("sigma 1e-3 vs coherent (stemsim, tol 1e-6)", rel(tiny["images"], coherent["images"]), None))
    effect = max(rel(spread7["images"], coherent["images"]).values())

    ok, results = True, {}
    print("| case | " + " | ".join(f"{k} rel. RMS" for k in KEYS) + " | |")
    print("|---|" + "---|" * len(KEYS) + "---|")
    for label, r, match in rows:
        worst = max(r.values())
        good = worst <= 1e-6 if match is None else (worst <= args.tol if match else worst >= 10 * args.tol)
        ok &= good
        results[label] = r
        print(f"| {label} | " + " | ".join(f"{r[k]:.2e}" for k in KEYS) + f" | {'ok' if good else 'FAIL'} |")
    ok &= effect >= 10 * args.tol
    print(f"\neffect of the spread on stemsim's images: {effect:.2e} (must exceed {10 * args.tol:.1e})")

    print("\nconvergence in focal_points (stemsim against 15 points):")
    ref = stemsim(args.sigma, 15)["images"]
    conv = {}
    for n in (1, 3, 5, 7, 9):
        r = rel(stemsim(args.sigma, n)["images"], ref)
        conv[n] = r
        print(f"  {n:2d} points: " + ", ".join(f"{k} {r[k]:.1e}" for k in KEYS))
    results["convergence"] = conv
    print(f"\n{time.time() - t0:.0f} s; abTEM {abtem.__version__}; {case.grid}, "
          f"{len(sx)} x {len(sy)} probes; C10 {C10}, C30 {C30}, sigma {args.sigma}")
    return xc.option_check_done("abtem_coherence", ok, results, args.json)


if __name__ == "__main__":
    sys.exit(main())
