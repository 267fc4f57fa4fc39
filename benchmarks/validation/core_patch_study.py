#!/usr/bin/env python3
"""Can heavy atoms' cores alone be formed on the fine grid? A numpy study for issue 40, item 4.

Builds nothing and needs no stemsim: one projected slice, plane-wave transmission functions
formed from Kirkland's scattering factors in Fourier space (the potential band-limited to 2/3
of each grid's Nyquist, as stemsim does), 300 keV, a 7.2 Angstrom cell at 0.03 Angstrom pixels,
4 Au and 6 O atoms at random positions:

  m=1, m=4, m=8   exp(i sigma V) formed on the run's grid / 4x / 8x finer, band-limited back;
  new w R         heavy atoms blurred by a Gaussian of width w on the run's grid (what its
                  sampling can hold), plus, within R of each Au atom only, the fine grid's
                  exp(i sigma V) - exp(i sigma V_smooth), tapered (cos^2 from R/2 to R) and
                  band-limited into the run's grid.

For each: the transmission function's RMS difference from m=4 (Fourier coefficients) and a
plane-wave HAADF measure (the 70-200 mrad share of |T(q)|^2) relative to m=4 and to m=8.
  python3 benchmarks/validation/core_patch_study.py [W,...] [R,...] [SEED]
"""
import sys

import numpy as np

ROWS = [line for line in open("data/kirkland_params.txt") if not line.startswith("#")]
A0E = 0.529177 * 14.39964  # Bohr radius x elementary charge, V Angstrom^2
SIGMA, LAM = 6.526e-4, 0.019687  # 300 keV: interaction parameter (1/(V Angstrom)), wavelength (Angstrom)
L, DX = 7.2, 0.03
N = int(round(L / DX))
QL = 1 / (3 * DX)


def fe(z, q2):
    p = [float(x) for x in ROWS[z - 1].split()]
    a, b, c, d = p[0:6:2], p[1:6:2], p[6:12:2], p[7:12:2]
    return sum(a[i] / (q2 + b[i]) for i in range(3)) + sum(c[i] * np.exp(-d[i] * q2) for i in range(3))


def qgrid(n):
    q = np.fft.fftfreq(n, d=L / n)
    return q[None, :], q[:, None]


def spectrum(atoms, n, qmax, heavy_w=None):
    qx, qy = qgrid(n)
    q2 = qx**2 + qy**2
    s = np.zeros((n, n), complex)
    for z, x, y in atoms:
        f = 2 * np.pi * A0E * fe(z, q2)
        if heavy_w is not None and z >= 30:
            f = f * np.exp(-2 * np.pi**2 * heavy_w**2 * q2)
        s += f * np.exp(-2j * np.pi * (qx * x + qy * y))
    return s * (q2 <= qmax**2)


def real(s, n):
    return np.real(np.fft.ifft2(s)) * n * n / (L * L)


def to_run_band(e, n):
    f = np.fft.fft2(e) / (n * n)
    qx, qy = qgrid(N)
    idx = np.fft.fftfreq(N, 1 / N).astype(int)
    return f[np.ix_(idx % n, idx % n)] * ((qx**2 + qy**2) <= QL**2)


def haadf(f):
    qx, qy = qgrid(N)
    mrad = np.sqrt(qx**2 + qy**2) * LAM * 1000
    p = abs(f) ** 2
    return p[(mrad >= 70) & (mrad <= 200)].sum() / p.sum()


def main():
    ws = [float(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "0.02,0.03,0.045").split(",")]
    rs = [float(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "0.2,0.3,0.4,0.6").split(",")]
    rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    atoms = [(79, *rng.uniform(0, L, 2)) for _ in range(4)] + [(8, *rng.uniform(0, L, 2)) for _ in range(6)]
    refs, v4 = {}, None
    for m in (4, 8):
        vf = real(spectrum(atoms, m * N, m * QL), m * N)
        refs[m] = to_run_band(np.exp(1j * SIGMA * vf), m * N)
        v4 = vf if m == 4 else v4

    def report(name, f):
        d = f - refs[4]
        print("%-22s T rms %.2e  HAADF %.6f  vs m=4 %+.2e  vs m=8 %+.2e" % (
            name, np.sqrt(np.mean(abs(d) ** 2)), haadf(f), haadf(f) / haadf(refs[4]) - 1,
            haadf(f) / haadf(refs[8]) - 1))

    report("m=1", to_run_band(np.exp(1j * SIGMA * real(spectrum(atoms, N, QL), N)), N))
    report("m=4", refs[4])
    report("m=8", refs[8])
    nf = 4 * N
    xf = np.arange(nf) * L / nf
    idx = np.fft.fftfreq(N, 1 / N).astype(int)
    for w in ws:
        ss = spectrum(atoms, N, QL, heavy_w=w)
        smooth = to_run_band(np.exp(1j * SIGMA * real(ss, N)), N)
        sf = np.zeros((nf, nf), complex)
        sf[np.ix_(idx % nf, idx % nf)] = ss
        vs_fine = real(sf, nf)  # the smooth potential on the fine grid (exact interpolation)
        for R in rs:
            b = np.zeros((nf, nf), complex)
            for z, x, y in atoms:
                if z < 30:
                    continue
                ddx = (xf[None, :] - x + L / 2) % L - L / 2
                ddy = (xf[:, None] - y + L / 2) % L - L / 2
                r = np.sqrt(ddx**2 + ddy**2)
                disc = r < R
                taper = np.cos(np.pi / 2 * np.clip((r[disc] - R / 2) / (R / 2), 0, 1)) ** 2
                b[disc] += taper * (np.exp(1j * SIGMA * v4) - np.exp(1j * SIGMA * vs_fine))[disc]
            report("new w=%.3f R=%.2f" % (w, R), smooth + to_run_band(b, nf))


if __name__ == "__main__":
    main()
