#!/usr/bin/env python3
"""stemsim's plane-wave imaging (algorithm = hrtem) against abTEM's PlaneWave + CTF.

abTEM 1.0.11 is given stemsim's own potential slices (as the other option checks:
silicon [100] 4 x 4 x 4, 200 keV, stemsim's grid at 0.06 Angstrom), so only the plane
wave, the propagation and the lens differ. Compared: the complex exit wave (relative RMS
of the difference over the RMS of abTEM's wave) and the HRTEM image (relative RMS over
the image's mean) for (1) the exit wave alone, (2) a lens with defocus, Cs and three-fold
astigmatism behind a 25 mrad objective aperture, (3) the same with a focal spread of
sigma = 40 Angstrom (stemsim: 7 Gauss-Hermite defoci; abTEM: an ensemble of 25 defoci over
+-4 sigma, intensities averaged), and (4) stemsim's focal spread against abTEM's coherent
image (must differ), and (5) a tilted plane wave (stemsim: [probe] beam_tilt on one of the
cell's plane waves; abTEM: PlaneWave(tilt=...), which keeps the wave untilted and tilts the
propagator): stemsim's exit wave times the conjugate tilt ramp against abTEM's, after the
one constant phase the two frames differ by (exp(-i pi lambda dz k0^2) per slice). "effect":
the lens's change of stemsim's image against no lens; the tilt's change of the exit wave.

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_hrtem.py [--json out.json]
"""
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

LENS = {"C10": -80.0, "C30": 6.0e4, "C23": 1.5e3, "phi23": 30.0}
APERTURE, SIGMA = 25.0, 40.0


def stemsim_hrtem(case, lens, sigma=0.0, aperture=APERTURE, tilt=(0.0, 0.0)):
    import h5py

    sets = [f"probe.beam_tilt_x={tilt[0]!r}", f"probe.beam_tilt_y={tilt[1]!r}","simulation.algorithm=hrtem", "output.save_exit_wave=true", f"hrtem.objective_aperture={aperture!r}",
            f"probe.focal_spread={sigma!r}"] + [f"probe.{k}={v!r}" for k, v in lens.items()]
    cmd = [case.exe, "-q", case.ini, "--set", f"output.file={case.h5}", "--set", f"compute.threads={case.threads}"]
    for v in sets:
        cmd += ["--set", v]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
    with h5py.File(case.h5, "r") as f:
        e = f["exit_wave"][0].astype(np.float64)
        return e[..., 0] + 1j * e[..., 1], f["hrtem"][0].astype(np.float64)  # [y][x]


def abtem_hrtem(case, lens, sigma=0.0, aperture=APERTURE, tilt=(0.0, 0.0)):
    import abtem

    kw = {k: (np.radians(v) if k.startswith("phi") else v) for k, v in lens.items()}
    c10 = kw.pop("C10", 0.0)
    defocus = -c10 if sigma <= 0 else abtem.distributions.gaussian(standard_deviation=sigma, num_samples=25,
                                                                    center=-c10, sampling_limit=4.0)
    wave = abtem.PlaneWave(energy=200e3, tilt=tilt)
    wave.grid.match(case.potential)
    with abtem.config.set({"antialias.taper": 0.0}):
        exit_wave = wave.multislice(case.potential).compute()
        ctf = abtem.CTF(semiangle_cutoff=aperture if aperture > 0 else np.inf, soft=False, energy=200e3,
                        defocus=defocus, **kw)
        image = exit_wave.apply_ctf(ctf).intensity().compute()
    img = np.asarray(image.array, dtype=np.float64)
    if img.ndim == 3:  # the defocus ensemble: mean intensity (the distribution's weights)
        w = np.asarray(defocus.weights, dtype=np.float64)
        img = np.tensordot(w / w.sum(), img, axes=(0, 0))
    return np.asarray(exit_wave.array).T.astype(np.complex128), img.T  # abTEM is [x][y]


def rel_wave(s, a):
    return float(np.sqrt(np.mean(np.abs(s - a) ** 2) / np.mean(np.abs(a) ** 2)))


def untilted(case, wave, tilt):
    """stemsim's tilted exit wave in abTEM's frame: times the conjugate ramp exp(-2 pi i k0.r)
    (k0 = tilt / lambda, on the grid), and the constant phase that best matches abTEM's `ref`."""
    ny, nx = wave.shape
    lam = 12.3986 / np.sqrt(200e3 * (2 * 510.999e3 + 200e3)) * 1e3  # Angstrom
    kx = round(tilt[0] * 1e-3 / lam * case.cell[0]) / case.cell[0]
    ky = round(tilt[1] * 1e-3 / lam * case.cell[1]) / case.cell[1]
    x = np.arange(nx) * case.cell[0] / nx
    y = np.arange(ny) * case.cell[1] / ny
    return wave * np.exp(-2j * np.pi * (kx * x[None, :] + ky * y[:, None]))


def inner_band(case, s, a, fraction=0.5):
    """Relative RMS of s - a over the frequencies below `fraction` of Nyquist (3/4 of the
    2/3 band), in the tilt frame: abTEM band-limits about the tilted beam, stemsim about the
    optical axis, so the two bands' edges differ by the tilt."""
    S, A = np.fft.fft2(s), np.fft.fft2(a)
    ny, nx = S.shape
    qx, qy = np.fft.fftfreq(nx, case.cell[0] / nx), np.fft.fftfreq(ny, case.cell[1] / ny)
    inside = np.hypot(qx[None, :], qy[:, None]) < fraction * min(qx.max(), qy.max())
    return float(np.sqrt(np.sum(np.abs(S[inside] - A[inside]) ** 2) / np.sum(np.abs(A[inside]) ** 2)))


def same_phase(s, a):
    """s with the constant phase that brings it closest to a."""
    return s * np.exp(-1j * np.angle(np.vdot(a, s)))


def rel_image(s, a):
    return float(np.sqrt(np.mean((s - a) ** 2)) / np.mean(a))


def main():
    ap = xc.option_check_args(__doc__, 1e-3)
    args = ap.parse_args()
    import abtem

    case = xc.SiliconCase(args.stemsim, args.threads, args.step, "abtem_hrtem_")
    t0 = time.time()
    s_plain = stemsim_hrtem(case, {}, aperture=0.0)
    s_lens = stemsim_hrtem(case, LENS)
    s_spread = stemsim_hrtem(case, LENS, SIGMA)
    a_plain = abtem_hrtem(case, {}, aperture=0.0)
    a_lens = abtem_hrtem(case, LENS)
    a_spread = abtem_hrtem(case, LENS, SIGMA)
    lam = 12.3986 / np.sqrt(200e3 * (2 * 510.999e3 + 200e3)) * 1e3
    tilt = (float(4 * lam / case.cell[0] * 1e3), float(-3 * lam / case.cell[1] * 1e3))  # plane waves (4, -3) of the cell, mrad
    s_tilt = stemsim_hrtem(case, {}, aperture=0.0, tilt=tilt)
    a_tilt = abtem_hrtem(case, {}, aperture=0.0, tilt=tilt)
    s_tilt_frame = same_phase(untilted(case, s_tilt[0], tilt), a_tilt[0])
    rows = [
        ("exit wave (complex)", rel_wave(s_plain[0], a_plain[0]), True),
        ("image, no lens", rel_image(s_plain[1], a_plain[1]), True),
        ("image, lens (C10, C30, C23) + 25 mrad aperture", rel_image(s_lens[1], a_lens[1]), True),
        (f"image, lens + focal spread sigma {SIGMA:g} A", rel_image(s_spread[1], a_spread[1]), True),
        ("stemsim focal spread vs abTEM coherent (must differ)", rel_image(s_spread[1], a_lens[1]), False),
        (f"exit wave, beam tilt ({tilt[0]:.2f}, {tilt[1]:.2f}) mrad (complex, tilt frame, below 1/2 Nyquist)",
         inner_band(case, s_tilt_frame, a_tilt[0]), True),
        ("tilted exit wave vs untilted (must differ)", rel_wave(s_tilt_frame, same_phase(s_plain[0], a_tilt[0])),
         False),
        ("tilted exit wave, whole band (information: the bands' edges differ by the tilt)",
         rel_wave(s_tilt_frame, a_tilt[0]), None),
        ("image of the tilted wave, no lens, whole band (information)", rel_image(s_tilt[1], a_tilt[1]), None),
    ]
    effect = rel_image(s_lens[1], s_plain[1])
    ok = effect >= 10 * args.tol
    print("| case | rel. RMS | |")
    print("|---|---|---|")
    for label, r, match in rows:
        good = True if match is None else r <= args.tol if match else r >= 10 * args.tol
        ok &= good
        print(f"| {label} | {r:.2e} | {'-' if match is None else 'ok' if good else 'FAIL'} |")
    print(f"\nthe lens's effect on stemsim's image: {effect:.2e}; image contrast (max-min)/mean {np.ptp(s_lens[1]) / s_lens[1].mean():.2f}; "
          f"{time.time() - t0:.0f} s; abTEM {abtem.__version__}; {case.grid}")
    return xc.option_check_done("abtem_hrtem", ok, {label: r for label, r, _ in rows}, args.json)


if __name__ == "__main__":
    sys.exit(main())
