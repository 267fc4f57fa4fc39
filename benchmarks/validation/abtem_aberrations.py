#!/usr/bin/env python3
"""stemsim's aberrations to fifth order against abTEM's (independent check).

Both codes scan the same probe positions over silicon [100] (4 x 4 x 4 cells,
200 keV, 20 mrad, the grid stemsim chooses at 0.06 Angstrom) through the same
potential (abTEM gets stemsim's slices, "potential C" of abtem_crosscheck.py, so
that only the probe differs). Cases:

  each   one aberration at a time, every C_nm of [probe] with its azimuth
  all    all fourteen together, azimuths all different
  mirror stemsim with every azimuth negated against abTEM's unmirrored probe:
         must differ (the azimuth convention is tested, not assumed)

Prints BF/ABF/ADF/HAADF relative RMS differences and PASS when every matched case
is below --tol while changing stemsim's own images by more than 10 x --tol (so that
ignoring an aberration could not pass), and the mirror case is above 10 x --tol. abTEM runs only here, from
its own virtual environment:

    python3 -m venv /tmp/abtem-venv && /tmp/abtem-venv/bin/pip install abtem==1.0.11 h5py
    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_aberrations.py [--json out.json]
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402  (shared set-up: model, potential C, stemsim runs)

# (name, value in Angstrom, azimuth in degrees): each about one radian of phase at 20 mrad
ABERRATIONS = [
    ("C10", 30.0, None), ("C12", 25.0, 20.0), ("C21", 2.0e3, 35.0), ("C23", 1.8e3, -50.0),
    ("C30", 9.0e4, None), ("C32", 6.0e4, 70.0), ("C34", 7.0e4, -15.0), ("C41", 2.5e6, 110.0),
    ("C43", 2.2e6, -80.0), ("C45", 2.4e6, 10.0), ("C50", 1.5e8, None), ("C52", 1.2e8, 45.0),
    ("C54", 1.3e8, -30.0), ("C56", 1.1e8, 60.0),
]
KEYS = ("BF", "ABF", "ADF", "HAADF")


def stemsim_sets(terms, mirror=False):
    sets = []
    for name, c, phi in terms:
        sets.append(f"probe.{name}={c!r}")
        if phi is not None:
            sets.append(f"probe.phi{name[1:]}={(-phi if mirror else phi)!r}")
    return sets


def abtem_kwargs(terms):
    kw = {}
    for name, c, phi in terms:
        kw[name] = c
        if phi is not None:
            kw[f"phi{name[1:]}"] = math.radians(phi)
    return kw


def main():
    ap = xc.option_check_args(__doc__, 1e-3, cases=(str, "all,mirror,each", "comma-separated: all, mirror, each"))
    args = ap.parse_args()

    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_ab_")

    cases = []
    wanted = args.cases.split(",")
    if "all" in wanted:
        cases.append(("all fourteen", ABERRATIONS, False, True))
    if "mirror" in wanted:
        cases.append(("all, stemsim's azimuths negated", ABERRATIONS, True, False))
    if "each" in wanted:
        cases += [(f"{t[0]} alone", [t], False, True) for t in ABERRATIONS]

    results, ok = {}, True
    t0 = time.time()
    # the aberration-free images: each case's effect must be far above the tolerance,
    # or a matched case would also pass with the aberration ignored
    plain = case.stemsim()["images"]
    print("| case | should match | " + " | ".join(f"{k} rel. RMS" for k in KEYS) + " | effect on the images | |")
    print("|---|---|" + "---|" * len(KEYS) + "---|---|")
    for label, terms, mirror, match in cases:
        st = case.stemsim(stemsim_sets(terms, mirror))
        rings = case.abtem_scan(st["scan_x"], st["scan_y"], **abtem_kwargs(terms))
        ai = xc.ring_images(rings)
        rel = {k: xc.compare(st["images"][k], ai[k])["rel_rms"] for k in KEYS}
        worst = max(rel.values())
        effect = max(xc.compare(st["images"][k], plain[k])["rel_rms"] for k in KEYS)
        good = (worst <= args.tol and effect >= 10 * args.tol) if match else worst >= 10 * args.tol
        ok &= good
        results[label] = {"match": match, "rel_rms": rel, "effect": effect}
        print(f"| {label} | {'yes' if match else 'no'} | " + " | ".join(f"{rel[k]:.2e}" for k in KEYS) +
              f" | {effect:.2e} | {'ok' if good else 'FAIL'} |", flush=True)
    print(f"\n{len(cases)} cases in {time.time() - t0:.0f} s; abTEM {abtem.__version__}; "
          f"{case.grid}, {len(st['scan_x'])} x {len(st['scan_y'])} probes")
    return xc.option_check_done("abtem_aberrations", ok, results, args.json)


if __name__ == "__main__":
    sys.exit(main())
