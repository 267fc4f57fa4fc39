#!/usr/bin/env python3
"""stemsim's beam tilt ([probe] beam_tilt_x, _y) against abTEM's (Probe(tilt=...)).

The two codes put the tilt in different frames. stemsim (as Prismatic) centres the probe's
aperture and aberrations on the tilt angle and keeps its detectors on the optical axis, so
the bright-field disc moves; abTEM tilts the Fresnel propagator and keeps the beam at the
centre of its patterns. In the paraxial approximation they are the same wave seen from two
frames: stemsim's pattern at angle a equals abTEM's at a - tilt. So this check compares
4D patterns: abTEM's, shifted by the tilt (a whole number of Fourier pixels), against
stemsim's, pixel by pixel where both codes' band limits hold the angle, and the images
that both give over that common region (BF 0-10, ABF 10-20, ADF 30-70, HAADF 70-125 mrad,
centred on the optical axis). Same set-up as benchmarks/validation/abtem_aberrations.py (silicon [100],
200 keV, 20 mrad, abTEM given stemsim's slices), with defocus and Cs so the probe is not
trivial. "effect": the same quantities between stemsim's tilted and untilted runs.

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_beam_tilt.py [--json out.json]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

C10, C30 = -40.0, 3.0e4
RINGS = {"BF": (0, 10), "ABF": (10, 20), "ADF": (30, 70), "HAADF": (70, 125)}


def stemsim_4d(case, sets):
    import h5py

    cmd_sets = list(sets) + ["detector.save_4d=true", f"probe.C10={C10!r}", f"probe.C30={C30!r}"]
    out = case.stemsim(cmd_sets)
    with h5py.File(case.h5, "r") as f:
        out["cbed"] = f["cbed"][()].astype(np.float64)  # [sy][sx][qy][qx]
        out["qx"], out["qy"] = f["axes/cbed_qx_mrad"][()], f["axes/cbed_qy_mrad"][()]
    return out


def abtem_4d(case, sx, sy, tilt):
    """abTEM's patterns, [sy][sx][kx][ky] in abTEM's frame, and their angle axes (mrad)."""
    import abtem

    pos = np.array([(x, y) for y in sy for x in sx])
    p = abtem.Probe(energy=200e3, semiangle_cutoff=20, soft=False, C10=C10, C30=C30, tilt=tilt)
    p.grid.match(case.potential)
    with abtem.config.set({"antialias.taper": 0.0}):
        m = p.scan(case.potential, scan=abtem.CustomScan(pos), detectors=abtem.PixelatedDetector(max_angle="cutoff"),
                   lazy=False)
    arr = np.asarray(m.array, dtype=np.float64)
    kx, ky = m.axes_metadata[-2], m.axes_metadata[-1]
    lam = case.plan["wavelength"]
    ax = (kx.offset + kx.sampling * np.arange(arr.shape[-2])) * lam * 1e3
    ay = (ky.offset + ky.sampling * np.arange(arr.shape[-1])) * lam * 1e3
    return arr.reshape(len(sy), len(sx), arr.shape[-2], arr.shape[-1]), ax, ay


def to_stemsim_frame(a, ax, ay, s, tilt, band):
    """abTEM's patterns resampled at stemsim's pixels (angle - tilt, exact: whole pixels), and
    the mask of pixels inside both codes' bands (a pixel's width short of each). The codes' angle
    axes differ by about 1e-5 relative (their wavelengths): pixels are matched to 5% of a pixel."""
    qx, qy = s["qx"], s["qy"]
    step = qx[1] - qx[0]
    out = np.zeros_like(s["cbed"])
    mask = np.zeros((len(qy), len(qx)), bool)
    ix = np.rint((qx - tilt[0] - ax[0]) / (ax[1] - ax[0])).astype(int)
    iy = np.rint((qy - tilt[1] - ay[0]) / (ay[1] - ay[0])).astype(int)
    for j in range(len(qy)):
        for i in range(len(qx)):
            if not (0 <= ix[i] < len(ax) and 0 <= iy[j] < len(ay)):
                continue
            if abs(ax[ix[i]] - (qx[i] - tilt[0])) > 0.05 * step or abs(ay[iy[j]] - (qy[j] - tilt[1])) > 0.05 * step:
                raise SystemExit("the tilt is not a whole number of pixels: the grids do not line up")
            inside_s = np.hypot(qx[i], qy[j]) < band - step
            inside_a = np.hypot(qx[i] - tilt[0], qy[j] - tilt[1]) < band - step
            if inside_s and inside_a:
                mask[j, i] = True
                out[:, :, j, i] = a[:, :, ix[i], iy[j]]
    return out, mask


def images(cbed, qx, qy, mask):
    r = np.hypot(qx[None, :], qy[:, None])
    return {k: (cbed * (mask & (r >= lo) & (r < hi))).sum(axis=(-2, -1)) for k, (lo, hi) in RINGS.items()}


def rel(a, b):
    return float(np.sqrt(np.sum((a - b) ** 2) / np.sum(b ** 2)))


def main():
    ap = xc.option_check_args(__doc__, 1e-3, pixels=(str, "4,-3", "tilt in whole Fourier pixels, x,y"))
    ap.set_defaults(step=1.4)
    args = ap.parse_args()

    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_tilt_")
    t0 = time.time()
    px = [int(v) for v in args.pixels.split(",")]
    s0 = stemsim_4d(case, [])
    step_mrad = s0["qx"][1] - s0["qx"][0]
    tilt = (float(px[0] * step_mrad), float(px[1] * (s0["qy"][1] - s0["qy"][0])))
    s1 = stemsim_4d(case, [f"probe.beam_tilt_x={tilt[0]!r}", f"probe.beam_tilt_y={tilt[1]!r}"])
    band = case.plan["band_limit_mrad"]
    a, ax, ay = abtem_4d(case, s1["scan_x"], s1["scan_y"], tilt)
    a_s, mask = to_stemsim_frame(a, ax, ay, s1, tilt, band)
    m4 = mask[None, None]
    cb_rel = rel(s1["cbed"] * m4, a_s * m4)
    cb_effect = rel(s0["cbed"] * m4, s1["cbed"] * m4)
    im_s, im_a, im_0 = (images(c, s1["qx"], s1["qy"], mask) for c in (s1["cbed"], a_s, s0["cbed"]))
    rows = {"4D patterns (common band)": (cb_rel, cb_effect)}
    for k in RINGS:
        rows[k] = (rel(im_s[k], im_a[k]), rel(im_0[k], im_s[k]))
    print(f"beam tilt ({tilt[0]:.4f}, {tilt[1]:.4f}) mrad = ({px[0]}, {px[1]}) Fourier pixels; {case.grid}; "
          f"{len(s1['scan_x'])} x {len(s1['scan_y'])} probes; common band {mask.sum()} pixels")
    print("| quantity | stemsim vs abTEM rel. RMS | effect (tilted vs untilted) |")
    print("|---|---|---|")
    for k, (r, e) in rows.items():
        print(f"| {k} | {r:.2e} | {e:.2e} |")
    worst = max(r for r, _ in rows.values())
    weakest = min(e for _, e in rows.values())
    ok = worst <= args.tol and worst < weakest / 10
    print(f"\nworst {worst:.2e}, smallest effect {weakest:.2e}; {time.time() - t0:.0f} s; abTEM {abtem.__version__}")
    return xc.option_check_done("abtem_beam_tilt", ok, {k: list(v) for k, v in rows.items()}, args.json)


if __name__ == "__main__":
    sys.exit(main())
