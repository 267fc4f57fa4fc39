#!/usr/bin/env python3
"""stemsim's potential slices against abTEM's: parametrisation (kirkland, lobato) x projection
(infinite, finite), thin and thick slices.

A silicon [100] crystal, 3 x 3 x 2 unit cells, with 3.57 Angstrom of vacuum above and below (so
that no atom's potential reaches past the sample: abTEM drops what lies outside the slices,
stemsim adds it to the first or last slice), on a 320 x 320 grid (0.051 Angstrom). stemsim
writes its slices with [output] save_potential (algorithm = hrtem, no probes); abTEM 1.0.11
builds Potential(..., parametrization=, projection=). Both are low-pass filtered to the same
disc (2/3 of the Nyquist frequency: what the transmission functions keep) before comparing,
because stemsim samples the pixel-averaged potential and abTEM the point values.

The mean of each slice is left out: a cutoff radius removes each atom's tail beyond it
(stemsim's potential_radius, default 3 Angstrom) and with it mostly the mean, a constant phase
that no image sees. Reported per case: relative RMS difference of all slices (||s - a|| / ||a||), of the slices'
sum (the projected potential of the whole sample), and for the finite projection the
agreement of its effect: ||(s_fin - s_inf) - (a_fin - a_inf)|| / ||a_fin - a_inf||.

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_potentials.py [--stemsim build/stemsim] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
A, TILES, VACUUM, GRID, CUTOFF = 5.43, (3, 3, 2), 3.57, 320, 3.0
SI = [(0, 0, 0), (0.5, 0.5, 0), (0.25, 0.75, 0.25), (0.75, 0.25, 0.25), (0.5, 0, 0.5), (0, 0.5, 0.5),
      (0.75, 0.75, 0.75), (0.25, 0.25, 0.75)]


def crystal():
    pos = [((i + u) * A, (j + v) * A, (k + w) * A + VACUUM) for i in range(TILES[0]) for j in range(TILES[1])
           for k in range(TILES[2]) for (u, v, w) in SI]
    cell = (TILES[0] * A, TILES[1] * A, TILES[2] * A + 2 * VACUUM)
    return np.array(pos), cell


def stemsim_slices(exe, work, pos, cell, dz, par, proj, cutoff):
    xyz, ini, h5 = (os.path.join(work, n) for n in ("si.xyz", "pot.ini", f"pot_{par}_{proj}_{dz:.4f}.h5"))
    with open(xyz, "w") as f:
        f.write("silicon [100] with vacuum above and below\n")
        f.write(f"{cell[0]} {cell[1]} {cell[2]}\n")
        for p in pos:
            f.write(f"14 {p[0]:.6f} {p[1]:.6f} {p[2]:.6f} 1.0 0.0\n")
        f.write("-1\n")
    with open(ini, "w") as f:
        f.write(f"[sample]\nxyz = {xyz}\n[simulation]\nalgorithm = hrtem\ngrid_x = {GRID}\ngrid_y = {GRID}\n"
                f"slice_thickness = {dz!r}\npotential_radius = {cutoff}\nparametrisation = {par}\n"
                f"projection = {proj}\n[output]\nfile = {h5}\noverwrite = true\nsave_potential = true\n")
    r = subprocess.run([exe, "-q", ini], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"stemsim failed ({r.returncode}): {r.stderr}")
    import h5py
    with h5py.File(h5, "r") as f:
        return np.transpose(f["potential"][0].astype(np.float64), (0, 2, 1))  # [slice][x][y] as abTEM


def abtem_slices(pos, cell, dz, par, proj):
    import abtem
    import ase
    atoms = ase.Atoms(numbers=[14] * len(pos), positions=pos, cell=cell, pbc=True)
    p = abtem.Potential(atoms, gpts=(GRID, GRID), slice_thickness=dz, parametrization=par, projection=proj)
    return np.asarray(p.build().compute().array, dtype=np.float64)


def low_pass(v, cell):
    qx = np.fft.fftfreq(GRID, cell[0] / GRID)[:, None]
    qy = np.fft.fftfreq(GRID, cell[1] / GRID)[None, :]
    keep = qx ** 2 + qy ** 2 <= (2 / 3 * GRID / (2 * max(cell[0], cell[1]))) ** 2
    keep[0, 0] = False  # the mean (a constant phase, and where a cutoff's missing tail shows most)
    return np.real(np.fft.ifft2(np.fft.fft2(v, axes=(-2, -1)) * keep, axes=(-2, -1)))


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stemsim", default=os.environ.get("STEMSIM", os.path.join(REPO, "build", "stemsim")))
    ap.add_argument("--json")
    ap.add_argument("--cutoff", type=float, default=CUTOFF, help="stemsim's potential_radius (Angstrom)")
    args = ap.parse_args()
    os.environ.setdefault("STEMSIM_KIRKLAND", os.path.join(REPO, "data", "kirkland_params.txt"))
    os.environ.setdefault("STEMSIM_LOBATO", os.path.join(REPO, "data", "lobato_params.txt"))
    pos, cell = crystal()
    results = []
    with tempfile.TemporaryDirectory(prefix="abtem_pot_") as work:
        for dz in (0.6, 3.0):  # 30 and 6 slices of the 18 Angstrom cell
            for par in ("kirkland", "lobato"):
                got = {}
                for proj in ("infinite", "finite"):
                    s = low_pass(stemsim_slices(args.stemsim, work, pos, cell, dz, par, proj, args.cutoff), cell)
                    a = low_pass(abtem_slices(pos, cell, dz, par, proj), cell)
                    if s.shape != a.shape:
                        raise RuntimeError(f"slices {s.shape} vs abTEM {a.shape}")
                    got[proj] = (s, a)
                    row = {"slice_thickness": round(dz, 4), "parametrisation": par, "projection": proj,
                           "slices_rel_rms": rel(s, a), "sum_rel_rms": rel(s.sum(0), a.sum(0))}
                    if proj == "finite":
                        (si, ai), (sf, af) = got["infinite"], got["finite"]
                        row["finite_effect_abtem_rel"] = float(np.linalg.norm(af - ai) / np.linalg.norm(ai))
                        row["finite_effect_agreement"] = rel(sf - si, af - ai)
                        row["stemsim_finite_sum_vs_infinite_sum"] = rel(sf.sum(0), si.sum(0))
                    results.append(row)
                    print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
