#!/usr/bin/env python3
"""Deterministic amorphous-carbon model for the GPU benchmark (the Prismatic paper's case):
a 100 x 100 x 100 Angstrom cell at about 2 g/cm^3, carbon atoms placed at random with a
minimum separation of 1.4 Angstrom (periodic), thermal rms 0.08 Angstrom.

    gpu_make_amorphous_carbon.py OUT.xyz [--cell 100] [--density 2.0] [--seed 2017]

Pure Python (random.Random is the same Mersenne Twister on every Python 3), so the file is
identical wherever it is generated. Writes the Prismatic-style XYZ that stemsim reads."""
import argparse
import math
import random

AVOGADRO = 6.02214076e23
CARBON_MASS = 12.011  # g/mol


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cell", type=float, default=100.0, help="cube edge, Angstrom")
    ap.add_argument("--density", type=float, default=2.0, help="g/cm^3")
    ap.add_argument("--seed", type=int, default=2017)
    ap.add_argument("--dmin", type=float, default=1.4, help="minimum C-C distance, Angstrom")
    a = ap.parse_args()
    L = a.cell
    n_target = round(a.density / CARBON_MASS * AVOGADRO * (L * 1e-8) ** 3)
    rng = random.Random(a.seed)
    nc = max(1, int(L // a.dmin))  # cell list with cells >= dmin
    h = L / nc
    cells = {}
    atoms = []
    d2 = a.dmin * a.dmin
    tries = 0
    while len(atoms) < n_target:
        tries += 1
        if tries > 200 * n_target:
            raise SystemExit(f"could not place {n_target} atoms (placed {len(atoms)})")
        p = (rng.random() * L, rng.random() * L, rng.random() * L)
        c = tuple(int(p[k] / h) % nc for k in range(3))
        ok = True
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    for q in cells.get(((c[0] + dx) % nc, (c[1] + dy) % nc, (c[2] + dz) % nc), ()):
                        s = 0.0
                        for k in range(3):
                            d = abs(p[k] - q[k])
                            d = min(d, L - d)
                            s += d * d
                        if s < d2:
                            ok = False
                            break
                    if not ok:
                        break
                if not ok:
                    break
            if not ok:
                break
        if ok:
            atoms.append(p)
            cells.setdefault(c, []).append(p)
    with open(a.out, "w") as f:
        f.write(f"amorphous carbon {L:g} A cube, {a.density:g} g/cm^3, {len(atoms)} atoms, seed {a.seed}\n")
        f.write(f"    {L:.6f} {L:.6f} {L:.6f}\n")
        for x, y, z in atoms:
            f.write(f"6  {x:.6f}  {y:.6f}  {z:.6f}  1  0.080000\n")
        f.write("-1\n")
    rho = len(atoms) * CARBON_MASS / AVOGADRO / (L * 1e-8) ** 3
    print(f"wrote {a.out}: {len(atoms)} atoms, {rho:.3f} g/cm^3, {tries} trials")


if __name__ == "__main__":
    main()
