#!/usr/bin/env python3
"""ctest imported_potential: projected potentials from elsewhere ([simulation] potential_file
written by stemsim.write_potential, docs/physics.md "Potentials from elsewhere").

Driver (any python3): re-runs itself under --python (build-venv/bin/python, which has numpy,
h5py and the package's dependencies; exit 77 without it) with python/ on PYTHONPATH.

  1. Closed form: a cosine phase grating V = A cos(2 pi 3 x / Lx) on a non-square cell
     (8.1 x 6 A, 81 x 60 pixels), one 2 A slice, as a numpy array; a plane wave through it
     (algorithm = hrtem) has beams n of intensity J_n(sigma A)^2 (Jacobi-Anger), whatever the
     propagation; sigma A = 1.7 rad, sigma from the relativistic closed form at 200 keV.
     stemsim's exit wave's beams within 2e-5 of J_n^2 (n = -6..6) and nothing off the row.
  2. Round trip: stemsim's own Si slices (save_potential) written back as an imported array give
     the same multislice images, bit for bit, as the run that built them (2 configurations).
  3. Refusals: a grid other than the run's (exit 4, naming transmission_oversampling); a file
     without the complete mark (exit 4); an imported potential in a tilt series (exit 4); the
     writer refuses non-finite values and an array without its source.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def driver(a):
    py = a.python
    if not (py and os.access(py, os.X_OK)):
        print("SKIP: no Python at %s (bash .ci/deps --interop makes build-venv/)" % py)
        return 77
    probe = subprocess.run([py, "-c", "import numpy, h5py, xarray"], capture_output=True)
    if probe.returncode != 0:
        print("SKIP: %s lacks numpy, h5py or xarray (bash .ci/deps --interop)" % py)
        return 77
    env = dict(os.environ, PYTHONPATH=os.path.join(a.source, "python"))
    return subprocess.run([py, os.path.abspath(__file__), "--inner", "--stemsim", a.stemsim, "--source", a.source,
                           "--workdir", a.workdir], env=env).returncode


FAILS = []


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        FAILS.append(what)


def run(a, ini, *sets, quiet=True):
    cmd = [a.stemsim] + (["-q"] if quiet else []) + [ini]
    for s in sets:
        cmd += ["--set", s]
    return subprocess.run(cmd, capture_output=True, text=True)


def write_ini(path, sections):
    with open(path, "w") as f:
        for name, keys in sections.items():
            f.write("[%s]\n" % name + "".join("%s = %s\n" % kv for kv in keys.items()) + "\n")
    return path


def sigma_closed_form(kev):
    """Interaction constant, rad / (V Angstrom): 2 pi m e lambda / h^2 (relativistic)."""
    import numpy as np
    mc2, hc = 510.99895, 12.398419843  # keV; keV Angstrom
    lam = hc / np.sqrt(kev * (2 * mc2 + kev))
    return 2 * np.pi / (lam * kev * 1e3) * (mc2 + kev) / (2 * mc2 + kev)


def bessel_j(n, x):
    """J_n(x) = (1/pi) int_0^pi cos(n t - x sin t) dt: the trapezoid rule on this periodic
    integrand converges exponentially (4096 points: to rounding for |n|, x < 20)."""
    import numpy as np
    t = np.linspace(0, 2 * np.pi, 4096, endpoint=False)
    return np.array([np.mean(np.cos(k * t - x * np.sin(t))) for k in np.atleast_1d(n)])


def grating(a, stemsim):
    import h5py
    import numpy as np
    from stemsim.structure import Model

    lx, ly, nx, ny, kev, phase = 8.1, 6.0, 81, 60, 200.0, 1.7
    amp = phase / sigma_closed_form(kev)
    x = np.arange(nx) * lx / nx
    V = np.broadcast_to(amp * np.cos(2 * np.pi * 3 * x / lx), (1, ny, nx)).astype(np.float32)
    atoms = Model((lx, ly, 2.0), [6], [(1.0, 1.0, 1.0)], [1.0], [0.0])
    keys = stemsim.write_potential("grating.h5", V, cell=(lx, ly), slice_thickness=2.0, atoms=atoms,
                                   source="cosine grating (closed form)", overwrite=True)
    keys["beam"] = {"energy": kev}
    keys["simulation"]["algorithm"] = "hrtem"
    keys["simulation"]["thermal"] = "false"
    keys["output"] = {"file": "grating_out.h5", "overwrite": "true", "save_exit_wave": "true"}
    r = run(a, write_ini("grating.ini", keys), quiet=False)
    check(r.returncode == 0 and "imported" in r.stderr + r.stdout,
          "hrtem through an imported numpy potential runs, saying it is imported (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    with h5py.File("grating_out.h5", "r") as f:
        e = f["exit_wave"][0].astype(np.float64)
    psi = np.fft.fft2(e[..., 0] + 1j * e[..., 1])
    power = np.abs(psi) ** 2 / np.sum(np.abs(psi) ** 2)
    n = np.arange(-6, 7)
    got = power[0, (3 * n) % nx]
    want = bessel_j(n, phase) ** 2
    off = 1 - got.sum()
    worst = np.max(np.abs(got - want))
    check(worst < 2e-5 and abs(off) < 2e-5, "grating's beams J_n(%.1f)^2 (n = -6..6): worst %.2e, off the beams %.2e"
          % (phase, worst, off))


def round_trip(a, stemsim):
    import h5py
    import numpy as np

    small = os.path.join(HERE, "small.ini")
    base = ["simulation.frozen_phonons=2", "simulation.thermal=true", "simulation.transmission_oversampling=1",
            "detector.save_4d=false", "detector.save_3d=false"]
    r = run(a, small, "output.file=%s" % os.path.abspath("built.h5"), "output.save_potential=true", *base)
    check(r.returncode == 0, "stemsim builds and saves Si slices (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    with h5py.File("built.h5", "r") as f:
        V = f["potential"][...]
        d = f["potential"].attrs
        cell, dz = (d["cell_x_angstrom"], d["cell_y_angstrom"]), float(d["slice_thickness_angstrom"])
        images = {k: f["images/" + k][...] for k in f["images"]}
    model = stemsim.structure.read_xyz(os.path.join(HERE, "../../data/Si100_unitcell.xyz")).tile(2, 2, 2)
    stemsim.write_potential("si_import.h5", V, cell=cell, slice_thickness=dz, atoms=model,
                            source="stemsim's own slices, as an array", overwrite=True)
    r = run(a, small, "output.file=%s" % os.path.abspath("imported.h5"),
            "simulation.potential_file=%s" % os.path.abspath("si_import.h5"), *base)
    check(r.returncode == 0, "multislice through the imported slices runs (%s)" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    with h5py.File("imported.h5", "r") as f:
        same = all(np.array_equal(f["images/" + k][...], v) for k, v in images.items())
    check(same and len(images) > 0, "imported slices give the building run's images bit for bit (%s)"
          % ", ".join(sorted(images)))

    # refusals
    r = run(a, small, "output.file=%s" % os.path.abspath("refused.h5"), "simulation.pixel_size=0.05",
            "simulation.potential_file=%s" % os.path.abspath("si_import.h5"), *base)
    check(r.returncode == 4 and "transmission_oversampling" in r.stderr,
          "another grid refused, exit 4 naming transmission_oversampling (%d: %s)" % (r.returncode,
                                                                                   r.stderr.strip()[-200:]))
    r = run(a, small, "output.file=%s" % os.path.abspath("refused.h5"), "series.tilt_x=0,1",
            "simulation.potential_file=%s" % os.path.abspath("si_import.h5"), *base)
    check(r.returncode == 4 and "one orientation" in r.stderr,
          "an imported potential in a tilt series refused, exit 4 (%d: %s)" % (r.returncode, r.stderr.strip()[-200:]))
    with h5py.File("si_import.h5", "r+") as f:
        f.attrs["complete"] = 0
    r = run(a, small, "output.file=%s" % os.path.abspath("refused.h5"),
            "simulation.potential_file=%s" % os.path.abspath("si_import.h5"), *base)
    check(r.returncode == 4 and "complete" in r.stderr, "a file without the complete mark refused, exit 4 (%d)"
          % r.returncode)
    check(not os.path.exists("refused.h5"), "no output written by a refused run")
    for bad, what in ((np.full((1, 4, 4), np.nan), "a NaN"), (V, "no source")):
        try:
            stemsim.write_potential("bad.h5", bad, cell=cell, slice_thickness=dz, atoms=model,
                                    source=None if what == "no source" else "x", overwrite=True)
            check(False, "the writer refuses %s" % what)
        except ValueError:
            check(not os.path.exists("bad.h5"), "the writer refuses %s, writing nothing" % what)


def inner(a):
    import stemsim

    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)
    grating(a, stemsim)
    round_trip(a, stemsim)
    print("FAIL: %d checks" % len(FAILS) if FAILS else "PASS")
    return 1 if FAILS else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python")
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--inner", action="store_true")
    a = ap.parse_args()
    a.stemsim = os.path.abspath(a.stemsim)
    a.workdir = os.path.abspath(a.workdir)
    return inner(a) if a.inner else driver(a)


if __name__ == "__main__":
    sys.exit(main())
