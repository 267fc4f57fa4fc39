#!/usr/bin/env python3
"""abTEM's own potential through stemsim (issue 40 item 5, docs/physics.md "Potentials from elsewhere").

abTEM 1.0.11 builds its potential (its Lobato parametrisation, infinite projection) for Si [100]
and Au [001] slabs; stemsim.write_potential hands that potential to stemsim as an imported
[simulation] potential_file, and the two codes send a 200 keV plane wave through the same
slices (stemsim: algorithm = hrtem with the exit wave; abTEM: PlaneWave.multislice, its
anti-aliasing edge hard as stemsim's, on grids whose band edge holds no beam). Compared: the complex exit waves (relative RMS of the
difference over abTEM's wave's RMS) and, as information, how far stemsim's own potential of
the same atoms lies from abTEM's (the same measure on the exit waves), which the import removes.

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_imported_potential.py [--json out.json]

The abTEM venv needs h5py and xarray (for the package); the stemsim package is taken from python/ in this tree.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
import abtem_crosscheck as xc  # noqa: E402

KEV = 200.0
CASES = {  # name: (ASE atoms builder, slice thickness A)
    "Si [100] 2x2x2": (lambda: __import__("ase.build").build.bulk("Si", cubic=True) * (2, 2, 2), 5.431 / 4),
    "Au [001] 2x2x3": (lambda: __import__("ase.build").build.bulk("Au", cubic=True) * (2, 2, 3), 4.078 / 2),
}


def write_ini(path, sections):
    with open(path, "w") as f:
        for name, keys in sections.items():
            f.write("[%s]\n" % name + "".join("%s = %s\n" % kv for kv in keys.items()) + "\n")
    return path


def stemsim_exit_wave(exe, keys, work, name, threads, own=False):
    import h5py

    keys = {k: dict(v) for k, v in keys.items()}
    if own:  # stemsim's own potential of the same atoms, for comparison
        del keys["simulation"]["potential_file"]
        keys["simulation"]["parametrisation"] = "lobato"
    keys["beam"] = {"energy": KEV}
    keys["simulation"].update({"algorithm": "hrtem", "thermal": "false"})
    out = os.path.join(work, name + ".h5")
    keys["output"] = {"file": out, "overwrite": "true", "save_exit_wave": "true"}
    keys["compute"] = {"threads": threads}
    ini = write_ini(os.path.join(work, name + ".ini"), keys)
    r = subprocess.run([exe, "-q", ini], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s %s failed (%d): %s" % (exe, ini, r.returncode, r.stderr))
    with h5py.File(out, "r") as f:
        e = f["exit_wave"][0].astype(np.float64)
    return e[..., 0] + 1j * e[..., 1]


def abtem_exit_wave(potential):
    import abtem

    wave = abtem.PlaneWave(energy=KEV * 1e3)
    wave.grid.match(potential)
    with abtem.config.set({"antialias.taper": 0.0}):
        return np.asarray(wave.multislice(potential).compute().array).T.astype(np.complex128)  # [x][y] -> [y][x]


def grid_off_edge(stemsim, n):
    """The smallest 7-smooth size >= n that 3 does not divide: on a grid of 3k pixels, beams lie
    exactly on the 2/3 band edge, which stemsim keeps (|q| <= limit) and abTEM drops (<); those
    few beams alone put the exit waves 1e-5 (Si) to 7e-3 (Au) apart."""
    m = stemsim.potential.good_size(int(np.ceil(n)))
    while m % 3 == 0:
        m = stemsim.potential.good_size(m + 1)
    return m


def rel(s, a):
    return float(np.sqrt(np.mean(np.abs(s - a) ** 2) / np.mean(np.abs(a) ** 2)))


def main():
    ap = xc.option_check_args(__doc__, 1e-5, sampling=(float, 0.05, "abTEM's sampling, Angstrom"))
    args = ap.parse_args()
    import abtem
    import stemsim

    work = tempfile.mkdtemp(prefix="abtem_imported_")
    ok, results = True, {}
    print("| case | grid | slices | stemsim through abTEM's potential vs abTEM | stemsim's own potential vs abTEM |")
    print("|---|---|---|---|---|")
    t0 = time.time()
    for i, (name, (build, dz)) in enumerate(CASES.items()):
        atoms = build()
        gpts = tuple(grid_off_edge(stemsim, L / args.sampling) for L in np.diag(atoms.cell)[:2])
        pot = abtem.Potential(atoms, gpts=gpts, slice_thickness=dz, projection="infinite",
                              parametrization="lobato")
        keys = stemsim.write_potential(os.path.join(work, "pot%d.h5" % i), pot, overwrite=True)
        a = abtem_exit_wave(pot)
        s = stemsim_exit_wave(args.stemsim, keys, work, "imported%d" % i, args.threads)
        own = stemsim_exit_wave(args.stemsim, keys, work, "own%d" % i, args.threads, own=True)
        r_imp, r_own = rel(s, a), rel(own, a)
        ok &= r_imp <= args.tol and r_own >= 10 * r_imp
        results[name] = {"imported": r_imp, "own": r_own, "grid": list(s.shape), "slices": len(pot)}
        print("| %s | %d x %d | %d | %.2e | %.2e |" % (name, s.shape[1], s.shape[0], len(pot), r_imp, r_own))
    print("\nrelative RMS of the complex exit waves; tolerance %.0e; abTEM %s; %.0f s"
          % (args.tol, abtem.__version__, time.time() - t0))
    return xc.option_check_done("abtem_imported_potential", ok, results, args.json)


if __name__ == "__main__":
    sys.exit(main())
