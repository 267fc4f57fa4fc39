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
image (must differ). "effect": the lens's change of stemsim's image against no lens.

    /tmp/abtem-venv/bin/python benchmarks/abtem_hrtem.py [--json out.json]
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


def stemsim_hrtem(case, lens, sigma=0.0, aperture=APERTURE):
    import h5py

    sets = ["simulation.algorithm=hrtem", "output.save_exit_wave=true", f"hrtem.objective_aperture={aperture!r}",
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


def abtem_hrtem(case, lens, sigma=0.0, aperture=APERTURE):
    import abtem

    kw = {k: (np.radians(v) if k.startswith("phi") else v) for k, v in lens.items()}
    c10 = kw.pop("C10", 0.0)
    defocus = -c10 if sigma <= 0 else abtem.distributions.gaussian(standard_deviation=sigma, num_samples=25,
                                                                    center=-c10, sampling_limit=4.0)
    wave = abtem.PlaneWave(energy=200e3)
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
    rows = [
        ("exit wave (complex)", rel_wave(s_plain[0], a_plain[0]), True),
        ("image, no lens", rel_image(s_plain[1], a_plain[1]), True),
        ("image, lens (C10, C30, C23) + 25 mrad aperture", rel_image(s_lens[1], a_lens[1]), True),
        (f"image, lens + focal spread sigma {SIGMA:g} A", rel_image(s_spread[1], a_spread[1]), True),
        ("stemsim focal spread vs abTEM coherent (must differ)", rel_image(s_spread[1], a_lens[1]), False),
    ]
    effect = rel_image(s_lens[1], s_plain[1])
    ok = effect >= 10 * args.tol
    print("| case | rel. RMS | |")
    print("|---|---|---|")
    for label, r, match in rows:
        good = r <= args.tol if match else r >= 10 * args.tol
        ok &= good
        print(f"| {label} | {r:.2e} | {'ok' if good else 'FAIL'} |")
    print(f"\nthe lens's effect on stemsim's image: {effect:.2e}; image contrast (max-min)/mean {np.ptp(s_lens[1]) / s_lens[1].mean():.2f}; "
          f"{time.time() - t0:.0f} s; abTEM {abtem.__version__}; {case.grid}")
    return xc.option_check_done("abtem_hrtem", ok, {label: r for label, r, _ in rows}, args.json)


if __name__ == "__main__":
    sys.exit(main())
