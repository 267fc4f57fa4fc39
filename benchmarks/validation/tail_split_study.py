#!/usr/bin/env python3
"""Can an atom's smooth potential tail be added on the run's grid while only its core goes on the
m-times finer grid? A numpy/scipy study for issue 40, item 4 (the CPU transmission build with heavy
atoms), before any code: builds nothing and needs no stemsim.

The split: v(r) = v(r) (1 - S(r)) + v(r) S(r), S a sin^2 step from 0 at R1 to 1 at R2. The core
v (1 - S) is splatted on the fine grid (pixel dx / m) as today, over a box of radius R2 instead of
the whole reach; the tail v S on the run's grid (pixel dx), Fourier-interpolated into the fine
spectrum. What that loses, for one isolated atom (Kirkland's projected potential, the Hankel
transform done numerically):
  dropped   the tail's spectrum between the run's band limit q_l = 1/(3 dx) and the fine grid's,
            m q_l, which the run's grid cannot carry;
  aliased   the tail's spectrum beyond the run grid's Nyquist, 1/(2 dx), which its samples fold in.
The step S: a sin^2 ramp, or an infinitely smooth one (its spectrum falls faster than any power).
Each as a bound on the real-space potential error (the integral of |F(q)| 2 pi q dq over those q,
V Angstrom) and as the phase error sigma times that (rad): stemsim's numbers change by about that
much in the transmission function, against the ~1e-4 that the issue allows.
  /usr/bin/python3 benchmarks/validation/tail_split_study.py [Z] [DX] [M] [R1:R2,...]
"""
import sys

import numpy as np
from scipy.special import j0, k0

ROWS = [line for line in open("data/kirkland_params.txt") if not line.startswith("#")]
A0E = 0.529177 * 14.39964  # Bohr radius x elementary charge, V Angstrom^2
SIGMA = 6.526e-4  # 300 keV, rad / (V Angstrom)


def params(z):
    p = [float(x) for x in ROWS[z - 1].split()]
    return p[0:6:2], p[1:6:2], p[6:12:2], p[7:12:2]


def projected(z, r):
    """Kirkland's projected potential (V Angstrom) at radius r (Angstrom)."""
    a, b, c, d = params(z)
    v = sum(4 * np.pi**2 * A0E * a[i] * k0(2 * np.pi * r * np.sqrt(b[i])) for i in range(3))
    return v + sum(2 * np.pi**2 * A0E * c[i] / d[i] * np.exp(-np.pi**2 * r**2 / d[i]) for i in range(3))


def step(r, r1, r2, kind):
    """0 below r1, 1 beyond r2: a sin^2 ramp (its second derivative jumps at the ends), or the
    infinitely smooth exp(-1/s) / (exp(-1/s) + exp(-1/(1 - s)))."""
    s = np.clip((r - r1) / (r2 - r1), 0, 1)
    if kind == "sin2":
        return np.sin(0.5 * np.pi * s) ** 2
    with np.errstate(divide="ignore", over="ignore"):
        a = np.where(s > 0, np.exp(-1 / np.maximum(s, 1e-300)), 0.0)
        b = np.where(s < 1, np.exp(-1 / np.maximum(1 - s, 1e-300)), 0.0)
    return a / (a + b)


def hankel(f, r, q):
    """F(q) = 2 pi int f(r) J0(2 pi q r) r dr (trapezoid on r)."""
    return np.array([2 * np.pi * np.trapz(f * j0(2 * np.pi * qq * r) * r, r) for qq in q])


def main():
    z = int(sys.argv[1]) if len(sys.argv) > 1 else 79
    dx = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0297
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    splits = [tuple(float(x) for x in s.split(":")) for s in
              (sys.argv[4] if len(sys.argv) > 4 else "0.3:0.6,0.5:1.0,0.8:1.4,1.0:2.0").split(",")]
    ql, nyq = 1 / (3 * dx), 1 / (2 * dx)
    r = np.linspace(1e-5, 8.0, 400001)  # the tail is zero below R1: no singularity to resolve
    q = np.linspace(0, m * ql, 1201)
    print("Z = %d, run pixel %.4f A (band %.2f 1/A, Nyquist %.2f 1/A), fine grid %d x finer" % (z, dx, ql, nyq, m))
    print("| step | R1 - R2 (A) | core box area vs whole reach (3 A) | dropped: max |dV| (V A), phase (rad) | "
          "aliased: max |dV| (V A), phase (rad) |")
    print("|---|---|---|---|---|")
    for kind in ("sin2", "smooth"):
        for r1, r2 in splits:
            tail = projected(z, r) * step(r, r1, r2, kind)
            f = np.abs(hankel(tail, r, q))
            w = 2 * np.pi * q
            dropped = np.trapz((f * w)[q > ql], q[q > ql])
            aliased = np.trapz((f * w)[q > nyq], q[q > nyq])
            print("| %s | %.1f - %.1f | %.3f | %.3g, %.2g | %.3g, %.2g |" % (kind, r1, r2, (r2 / 3.0) ** 2, dropped,
                                                                             SIGMA * dropped, aliased, SIGMA * aliased))


if __name__ == "__main__":
    main()
