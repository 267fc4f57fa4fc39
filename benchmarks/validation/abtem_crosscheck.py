#!/usr/bin/env python3
"""Independent physics cross-check of stemsim against abTEM.

stemsim never depends on abTEM: this script only *compares* the two. Run it from
a virtual environment that has abTEM, ase and h5py, e.g.

    python3 -m venv /tmp/abtem-venv
    /tmp/abtem-venv/bin/pip install abtem h5py
    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_crosscheck.py

What it does (all cases small enough for a 2-core machine):

* builds Si [100] from data/Si100_unitcell.xyz tiled 4 x 4 x 4 (21.72 A cube,
  512 atoms) as a stemsim config and as an ase.Atoms for abTEM, with matched
  parameters: 200 keV, 20 mrad hard aperture, no aberrations, Kirkland
  parametrisation, no thermal vibrations, the grid stemsim chooses (read from
  ``stemsim --dry-run``; abTEM gets the same gpts), the same slice thickness and
  the 2/3 anti-aliasing band limit;
* runs stemsim (``build/stemsim -q config --set ...``) on one unit cell scanned
  at 0.25 A and abTEM on exactly the scan positions stemsim wrote to
  /axes/scan_x, /axes/scan_y (abtem.CustomScan; both codes put the probe centre
  at the given position, pixel i at x = i * dx);
* integrates abTEM's FlexibleAnnularDetector (1 mrad rings) over the same
  ranges as stemsim's [images] (BF 0-10, ABF 10-20, ADF 30-70, HAADF 70-140
  mrad) and compares mean intensity, relative RMS difference, correlation, the
  position of the HAADF peak, and the total (band-limited) intensity. Both codes
  report fractions of the incident intensity (abTEM normalises the probe to 1).
* decomposes any difference with abTEM variants that share more and more of
  stemsim's choices:
    A  abTEM as configured: infinite projection, its own slice assignment,
       default anti-aliasing taper (0.01);
    B  as A but every atom in the slice stemsim puts it in (floor(z / dz + 1e-9)
       since commit 5d2b554; plain floor(z / dz) before, which misassigned the
       top Si layer of the 4 x 4 x 4 model);
    D  as B with a hard anti-aliasing edge (taper 0) like stemsim;
    E  reference: alias-free potential built in Fourier space from the
       analytic Kirkland f_e(q) with exact atom phases (no cutoff, no pixel
       transfer), stemsim slicing, taper 0;
    G  E multiplied by the pixel-average transfer sinc(kx/nx) sinc(ky/ny),
       i.e. what stemsim's supersampled pixel-averaged lookup did in Fourier
       space before commit 5d2b554 divided that sinc out again (a model of the
       old stemsim; it no longer matches the current one);
    C  stemsim's potential before issue 26 (the option checks now give abTEM stemsim's saved
       slices instead, stemsim_saved_potential; this variant models the old lookup): (Kirkland v(r) - v(cutoff), cut at
       potential_radius, pixel-averaged with `supersampling`, atoms snapped to
       1/ss pixel, stemsim slicing, and since 5d2b554 the pixel sinc divided
       out in Fourier space) rebuilt here in numpy and fed to abTEM's
       multislice as a PotentialArray with a hard band limit: this isolates
       stemsim's probe / propagator / band limit / detector from its potential.
    F  abTEM's finite projection: the 3D Kirkland potential integrated between
       the slice boundaries (atoms on a boundary are split between two slices);
* pixel-size convergence: a line scan through two columns at several pixel
  sizes, stemsim against E and B, to show which differences vanish as dx -> 0;
* vacuum probe: an occupancy-0 atom for stemsim, a zero PotentialArray for
  abTEM; ring by ring comparison;
* defocus sign: a line scan at probe.defocus = +d and -d against abTEM C10 = +d
  and -d (potential C);
* a rectangular cell (4 x 3 x 2 tiles, nx != ny, rectangular scan window) to
  catch x/y mix-ups that the square Si [100] cell cannot show;
* checks stemsim's C wavelength, interaction constant and Kirkland projected
  potential v(r) against abTEM's (compiled from src/physics.c into the work
  directory and called through ctypes; nothing in the tree is changed).

Results are printed as markdown tables and written as JSON (--json).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGES = {"BF": (0, 10), "ABF": (10, 20), "ADF": (30, 70), "HAADF": (70, 140)}
# First-order Laue zone ring of Si [100] (c = 5.43 A): sqrt(2 lambda / c) = 96 mrad at
# 200 keV. Without thermal diffuse scattering most of the 70-140 mrad signal is here.
FOLZ = (85, 110)


# ----------------------------------------------------------------------------
# model and stemsim side
# ----------------------------------------------------------------------------


def read_xyz(path):
    """Prismatic XYZ: comment, 'a b c', then 'Z x y z occ sigma' until -1."""
    with open(path) as f:
        lines = f.read().splitlines()
    cell = [float(v) for v in lines[1].split()[:3]]
    rows = []
    for line in lines[2:]:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "-1":
            break
        rows.append([float(v) for v in parts])
    rows = np.array(rows)
    return cell, rows[:, 0].astype(int), rows[:, 1:4], rows[:, 4]


def tile_like_stemsim(cell, Z, pos, occ, tiles):
    """Same loop order and double arithmetic as src/atoms.c tile()."""
    tx, ty, tz = tiles
    out_Z, out_pos, out_occ = [], [], []
    for iz in range(tz):
        for iy in range(ty):
            for ix in range(tx):
                for i in range(len(Z)):
                    out_Z.append(Z[i])
                    out_pos.append((pos[i, 0] + ix * cell[0], pos[i, 1] + iy * cell[1], pos[i, 2] + iz * cell[2]))
                    out_occ.append(occ[i])
    big = [cell[0] * tx, cell[1] * ty, cell[2] * tz]
    return big, np.array(out_Z), np.array(out_pos), np.array(out_occ)


def write_ini(path, xyz, tiles, scan, pixel_size, slice_thickness, out_file, extra=""):
    (x0, x1), (y0, y1), step = scan
    text = f"""; written by benchmarks/validation/abtem_crosscheck.py
[sample]
xyz = {xyz}
tile_x = {tiles[0]}
tile_y = {tiles[1]}
tile_z = {tiles[2]}
[beam]
energy = 200
[probe]
semiangle = 20
[simulation]
algorithm = multislice
pixel_size = {pixel_size}
slice_thickness = {slice_thickness}
potential_radius = 3
transmission_oversampling = 1
frozen_phonons = 1
thermal = false
[scan]
units = angstrom
x_start = {x0!r}
x_end = {x1!r}
y_start = {y0!r}
y_end = {y1!r}
step = {step!r}
[detector]
ring_width = 1
save_3d = true
[images]
BF = 0 10
ABF = 10 20
ADF = 30 70
HAADF = 70 140
[output]
file = {out_file}
overwrite = true
{extra}"""
    with open(path, "w") as f:
        f.write(text)


def stemsim_plan(exe, ini):
    r = subprocess.run([exe, "--dry-run", ini], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"stemsim --dry-run failed ({r.returncode}): {r.stderr}{r.stdout}")
    text = r.stdout + r.stderr
    g = re.search(r"grid\s+(\d+) x (\d+) pixels of ([\d.]+) x ([\d.]+)", text)
    s = re.search(r"slices\s+(\d+) of ([\d.]+)", text)
    b = re.search(r"band limit\s+([\d.]+) mrad", text)
    w = re.search(r"wavelength\s+([\d.]+) Angstrom, sigma ([\d.eE+-]+)", text)
    return {
        "nx": int(g.group(1)), "ny": int(g.group(2)), "n_slices": int(s.group(1)),
        "band_limit_mrad": float(b.group(1)), "wavelength": float(w.group(1)), "sigma": float(w.group(2)),
        "text": text,
    }


def run_stemsim(exe, ini, h5, threads, sets=()):
    import h5py

    cmd = [exe, "-q", ini, "--set", f"output.file={h5}", "--set", f"compute.threads={threads}"]
    for s in sets:
        cmd += ["--set", s]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}{r.stdout}")
    wall = time.time() - t
    with h5py.File(h5, "r") as f:
        out = {
            "images": {k: f["images"][k][()] for k in f["images"]},
            "rings": f["rings"][()],
            "scan_x": f["axes/scan_x"][()],
            "scan_y": f["axes/scan_y"][()],
            "wall_s": wall,
        }
    return out


# ----------------------------------------------------------------------------
# stemsim's potential, re-implemented (src/potential.c) for variant C
# ----------------------------------------------------------------------------


def stemsim_like_potential(Z, pos, occ, cell, nx, ny, n_slices, dz, cutoff, supersampling, vfunc, undo_sinc=True):
    """Slices V[s][y][x] (V Angstrom) exactly as src/potential.c builds them and
    its transmission uses them: pixel-averaged lookup, then (undo_sinc, since
    commit 5d2b554) the averaging's sinc(kx/nx) sinc(ky/ny) divided out in
    Fourier space before exp(i sigma V)."""
    dx, dy = cell[0] / nx, cell[1] / ny
    R = 16384
    rr = (np.arange(R) + 0.5) * cutoff / R
    tab = np.maximum(vfunc(rr) - vfunc(cutoff), 0).astype(np.float32).astype(np.float64)

    def lookup(r):
        u = r / cutoff * R - 0.5
        i = np.clip(np.floor(u).astype(np.int64), 0, R - 2)
        t = u - i
        v = (1 - t) * tab[i] + t * tab[i + 1]
        v = np.where(u <= 0, tab[0], v)
        return np.where(u >= R - 1, 0.0, v)

    ss = supersampling + (supersampling & 1)
    rx, ry = int(math.ceil(cutoff / dx)) + 1, int(math.ceil(cutoff / dy)) + 1
    kx, ky = 2 * rx + 1, 2 * ry + 1
    kernels = {}

    def kernel(species, sx, sy):
        key = (species, sx, sy)
        if key not in kernels:
            i = np.arange(kx)[:, None]
            a = np.arange(ss)[None, :]
            ux = (((i - rx) + (a + 0.5) / ss) - 0.5) - sx / ss  # [kx, ss]
            j = np.arange(ky)[:, None]
            uy = (((j - ry) + (a + 0.5) / ss) - 0.5) - sy / ss  # [ky, ss]
            r = np.hypot((ux * dx)[None, None, :, :], (uy * dy)[:, :, None, None])  # [ky, ss, kx, ss]
            v = np.where(r < cutoff, lookup(r), 0.0)
            kernels[key] = (v.sum(axis=(1, 3)) / (ss * ss)).astype(np.float32)
        return kernels[key]

    V = np.zeros((n_slices, ny, nx), np.float32)
    slices = np.empty(len(Z), int)
    for n in range(len(Z)):
        x, y, z = pos[n]
        s = int(math.floor(z / dz + 1e-9))  # src/potential.c slice_of()
        s = min(max(s, 0), n_slices - 1)
        slices[n] = s
        ux, uy = x / dx, y / dy
        px, py = math.floor(ux), math.floor(uy)
        sx, sy = math.floor((ux - px) * ss + 0.5), math.floor((uy - py) * ss + 0.5)
        if sx == ss:
            sx, px = 0, px + 1
        if sy == ss:
            sy, py = 0, py + 1
        k = kernel(int(Z[n]), sx, sy)
        gx = (px - rx + np.arange(kx)) % nx
        gy = (py - ry + np.arange(ky)) % ny
        V[s][np.ix_(gy, gx)] += np.float32(occ[n]) * k
    if undo_sinc:
        tr = pixel_average_transfer(nx, ny)
        for s in range(n_slices):
            V[s] = np.fft.ifft2(np.fft.fft2(V[s]) / tr).real.astype(np.float32)
    return V, slices


def kirkland_fe(path, z):
    """Kirkland's electron scattering factor f_e(q) (Angstrom, q in 1/Angstrom)
    for element z from data/kirkland_params.txt."""
    rows = [l.split() for l in open(path) if l.strip() and not l.startswith("#")]
    p = np.array(rows[z - 1], float)
    a, b, c, d = p[0:6:2], p[1:6:2], p[6:12:2], p[7:12:2]

    def fe(q2):
        return sum(a[i] / (q2 + b[i]) for i in range(3)) + sum(c[i] * np.exp(-d[i] * q2) for i in range(3))

    return fe


def fourier_potential(Z, pos, occ, slices, cell, nx, ny, n_slices, path, transfer=None):
    """Alias-free projected potential slices V[s][y][x] (V Angstrom) built in
    Fourier space from the analytic transform of Kirkland's projected potential,
    V(q) = 2 pi a0 e f_e(q), with exact atom phases and no real-space cutoff.
    `transfer` (array [ny][nx]) multiplies every slice's spectrum (e.g. the
    pixel-average sinc to mimic stemsim's supersampled lookup)."""
    a0e = 0.529177210903 * 14.3996454784
    kx = np.fft.fftfreq(nx, 1.0 / nx)  # integer Fourier indices
    ky = np.fft.fftfreq(ny, 1.0 / ny)
    qx, qy = kx / cell[0], ky / cell[1]
    q2 = qx[None, :] ** 2 + qy[:, None] ** 2
    area = cell[0] * cell[1]
    V = np.zeros((n_slices, ny, nx), np.float32)
    for z in np.unique(Z):
        vq = 2 * np.pi * a0e * kirkland_fe(path, int(z))(q2) / area
        if transfer is not None:
            vq = vq * transfer
        for s in range(n_slices):
            sel = (Z == z) & (slices == s)
            if not np.any(sel):
                continue
            ex = np.exp(-2j * np.pi * np.outer(pos[sel, 0], qx)) * occ[sel, None]  # [atoms, nx]
            ey = np.exp(-2j * np.pi * np.outer(pos[sel, 1], qy))  # [atoms, ny]
            coeff = vq * (ey.T @ ex)  # [ny, nx]
            V[s] += (np.fft.ifft2(coeff).real * (nx * ny)).astype(np.float32)
    return V


def pixel_average_transfer(nx, ny):
    """Fourier transfer of averaging over one pixel: sinc(kx / nx) sinc(ky / ny)."""
    kx = np.fft.fftfreq(nx, 1.0 / nx)
    ky = np.fft.fftfreq(ny, 1.0 / ny)
    return np.sinc(ky / ny)[:, None] * np.sinc(kx / nx)[None, :]


def stemsim_slices(pos, dz, n_slices, tol=1e-9):
    """src/potential.c slice_of(): floor(z / dz + 1e-9) since commit 5d2b554
    (tol=0 gives the old plain floor)."""
    return np.clip(np.floor(pos[:, 2] / dz + tol).astype(int), 0, n_slices - 1)


def abtem_slices(pos, dz, n_slices):
    """SliceIndexedAtoms: bin edges cumsum(dz) nudged down by 1e-12."""
    edges = np.cumsum([dz] * n_slices) - 1e-12
    return np.digitize(pos[:, 2], edges)


# ----------------------------------------------------------------------------
# abTEM side
# ----------------------------------------------------------------------------


def abtem_scan(potential, gpts, extent, sx, sy, taper=None, defocus=0.0, lazy=False):
    """Rings [i, i+1) mrad, shape [ny][nx][nbins], for the stemsim scan grid."""
    import abtem

    pos = np.array([(x, y) for y in sy for x in sx])
    probe = abtem.Probe(energy=200e3, semiangle_cutoff=20, soft=False, C10=defocus)
    probe.grid.match(potential)
    det = abtem.FlexibleAnnularDetector(step_size=1)
    settings = {} if taper is None else {"antialias.taper": taper}
    t = time.time()
    with abtem.config.set(settings):
        m = probe.scan(potential, scan=abtem.CustomScan(pos), detectors=det, lazy=lazy)
        if lazy:
            m = m.compute()
    arr = np.asarray(m.array)[..., 0]
    return arr.reshape(len(sy), len(sx), -1).astype(np.float64), time.time() - t


def ring_images(rings):
    nb = rings.shape[-1]
    return {k: rings[..., int(a):min(int(b), nb)].sum(-1) for k, (a, b) in IMAGES.items()}


# ----------------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------------


def peak_position(img, sx, sy, near):
    """Sub-step position of the local maximum of img closest to `near` (x, y):
    argmax in a 5 x 5 window around the nearest scan point, then a separable
    3-point parabola."""
    i0 = int(np.argmin(np.abs(sx - near[0])))
    j0 = int(np.argmin(np.abs(sy - near[1])))
    jl, jh = max(j0 - 2, 1), min(j0 + 3, img.shape[0] - 1)
    il, ih = max(i0 - 2, 1), min(i0 + 3, img.shape[1] - 1)
    if jh <= jl or ih <= il:
        return float("nan"), float("nan")
    sub = img[jl:jh, il:ih]
    j, i = np.unravel_index(np.argmax(sub), sub.shape)
    j, i = j + jl, i + il

    def para(m, c, p):
        d = m - 2 * c + p
        return 0.0 if d == 0 else 0.5 * (m - p) / d

    x = sx[i] + para(img[j, i - 1], img[j, i], img[j, i + 1]) * (sx[1] - sx[0])
    y = sy[j] + para(img[j - 1, i], img[j, i], img[j + 1, i]) * (sy[1] - sy[0])
    return float(x), float(y)


def compare(s, a):
    s, a = np.asarray(s, float).ravel(), np.asarray(a, float).ravel()
    d = s - a
    corr = float(np.corrcoef(s, a)[0, 1]) if s.std() > 0 and a.std() > 0 else float("nan")
    return {
        "mean_stemsim": float(s.mean()),
        "mean_abtem": float(a.mean()),
        "mean_rel": float(s.mean() / a.mean() - 1) if a.mean() != 0 else float("nan"),
        "rel_rms": float(np.sqrt(np.mean(d**2)) / abs(a.mean())) if a.mean() != 0 else float("nan"),
        "shape_rms": float(np.sqrt(np.mean((s / s.mean() - a / a.mean()) ** 2))) if a.mean() != 0 and s.mean() != 0 else float("nan"),
        "max_abs": float(np.abs(d).max()),
        "corr": corr,
        "contrast_stemsim": float((s.max() - s.min()) / s.mean()) if s.mean() else float("nan"),
        "contrast_abtem": float((a.max() - a.min()) / a.mean()) if a.mean() else float("nan"),
    }


def table(title, rows):
    """rows: list of (label, compare-dict)."""
    out = [f"\n#### {title}\n",
           "| image | stemsim mean | abTEM mean | mean diff | rel. RMS | shape RMS | corr. | contrast s / a |",
           "|---|---|---|---|---|---|---|---|"]
    for label, c in rows:
        out.append(f"| {label} | {c['mean_stemsim']:.5g} | {c['mean_abtem']:.5g} | {100 * c['mean_rel']:+.2f}% | "
                   f"{100 * c['rel_rms']:.2f}% | {100 * c['shape_rms']:.2f}% | {c['corr']:.5f} | "
                   f"{c['contrast_stemsim']:.3f} / {c['contrast_abtem']:.3f} |")
    return "\n".join(out)


def compare_case(st, rings_a, sx, sy, column=None):
    """stemsim result dict vs abTEM rings -> per-image comparisons, totals, and
    the HAADF peak next to the atomic column at `column` (x, y)."""
    ai = ring_images(rings_a)
    res = {k: compare(st["images"][k], ai[k]) for k in IMAGES}
    nb = rings_a.shape[-1]
    res["total"] = compare(st["rings"][..., :nb].sum(-1), rings_a.sum(-1))
    res["FOLZ"] = compare(st["rings"][..., FOLZ[0]:FOLZ[1]].sum(-1), rings_a[..., FOLZ[0]:FOLZ[1]].sum(-1))
    res["total_all_rings_stemsim"] = float(st["rings"].sum(-1).mean())
    if column is not None and len(sx) > 4 and len(sy) > 4:
        res["column"] = [float(column[0]), float(column[1])]
        res["peak_stemsim"] = peak_position(st["images"]["HAADF"], sx, sy, column)
        res["peak_abtem"] = peak_position(ai["HAADF"], sx, sy, column)
    return res


# ----------------------------------------------------------------------------
# C physics through ctypes (built into the work directory)
# ----------------------------------------------------------------------------


def c_physics_check(work, vfunc_abtem):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return {"skipped": "no C compiler"}
    so = os.path.join(work, "libstemsim_physics.so")
    src = [os.path.join(REPO, "src", "physics.c"), os.path.join(REPO, "src", "log.c")]
    r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I", os.path.join(REPO, "src"), *src, "-lm", "-o", so],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"skipped": "compile failed: " + r.stderr[-300:]}
    lib = ctypes.CDLL(so)

    class K(ctypes.Structure):
        _fields_ = [(n, ctypes.c_double * 3) for n in "abcd"]

    tab = (K * 104)()
    if lib.stem_kirkland_load(os.path.join(REPO, "data", "kirkland_params.txt").encode(), tab) != 0:
        return {"skipped": "could not load data/kirkland_params.txt"}
    for fn in ("stem_projected_potential", "stem_wavelength", "stem_interaction_constant"):
        getattr(lib, fn).restype = ctypes.c_double
    lib.stem_projected_potential.argtypes = [ctypes.POINTER(K), ctypes.c_double]
    lib.stem_wavelength.argtypes = [ctypes.c_double]
    lib.stem_interaction_constant.argtypes = [ctypes.c_double]
    from abtem.core.energy import energy2sigma, energy2wavelength

    r = np.array([0.02, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0])
    vc = np.array([lib.stem_projected_potential(ctypes.byref(tab[14]), x) for x in r])
    va = vfunc_abtem(r)
    return {
        "wavelength_stemsim": lib.stem_wavelength(200.0), "wavelength_abtem": energy2wavelength(200e3),
        "sigma_stemsim": lib.stem_interaction_constant(200.0), "sigma_abtem": energy2sigma(200e3),
        "r": r.tolist(), "v_Si_stemsim": vc.tolist(), "v_Si_abtem": va.tolist(),
        "v_ratio_max_dev": float(np.abs(vc / va - 1).max()),
    }


def integrated_potential(vfunc, cutoff):
    """2 pi int r v(r) dr: the full projection vs stemsim's v(r) - v(cutoff) for r < cutoff."""
    from scipy.integrate import quad

    full = 2 * math.pi * (quad(lambda r: r * vfunc(np.array([r]))[0], 0, 1, limit=200)[0]
                          + quad(lambda r: r * vfunc(np.array([r]))[0], 1, 60, limit=200)[0])
    vc = vfunc(np.array([cutoff]))[0]
    cut = 2 * math.pi * quad(lambda r: r * (vfunc(np.array([r]))[0] - vc), 0, cutoff, limit=200)[0]
    return full, cut


# ----------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------



# ----------------------------------------------------------------------------
# the option checks' shared case (abtem_aberrations.py, abtem_coherence.py,
# abtem_segments.py, abtem_soft_aperture.py)
# ----------------------------------------------------------------------------


SILICON_TILES, SILICON_DZ, SILICON_PIXEL = (4, 4, 4), 1.3575, 0.06


def silicon_ini(work, step):
    """The option checks' stemsim config in work/ (no abTEM needed: the stored-reference
    ctest writes the same one): Si [100] 4 x 4 x 4, one unit cell scanned at step."""
    xyz = os.path.join(REPO, "data", "Si100_unitcell.xyz")
    ucell = read_xyz(xyz)[0]
    scan = ((ucell[0], 2 * ucell[0]), (ucell[1], 2 * ucell[1]), step)
    ini, h5 = os.path.join(work, "case.ini"), os.path.join(work, "case.h5")
    write_ini(ini, xyz, SILICON_TILES, scan, SILICON_PIXEL, SILICON_DZ, h5)
    return ini, h5


def stemsim_saved_potential(exe, ini, h5):
    """stemsim's own slices of configuration 0 ([output] save_potential; the config has
    transmission_oversampling = 1, so they are on the run's grid), V[s][y][x] in V Angstrom."""
    import h5py

    subprocess.run([exe, "-q", ini, "--set", f"output.file={h5}", "--set", "output.save_potential=true",
                    "--set", "output.overwrite=true"], check=True)
    with h5py.File(h5) as f:
        return np.asarray(f["potential"][0], dtype=np.float32)


class SiliconCase:
    """Silicon [100] 4 x 4 x 4 cells, 1.3575 Angstrom slices, stemsim's grid at 0.06 Angstrom,
    one unit cell scanned at `step`: stemsim's config (ini, h5), its plan, and abTEM's
    PotentialArray of stemsim's own slices ("potential C"), so that only the probe or the
    detector differs between the codes. Sets abTEM to the CPU, float32, `threads` workers."""

    def __init__(self, stemsim, threads, step, prefix):
        import abtem
        import dask
        from abtem.parametrizations import KirklandParametrization

        abtem.config.set({"device": "cpu", "precision": "float32"})
        dask.config.set(scheduler="threads", num_workers=threads)
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.exe, self.threads = os.path.abspath(stemsim), threads
        self.ini, self.h5 = silicon_ini(self.work, step)
        xyz = os.path.join(REPO, "data", "Si100_unitcell.xyz")
        ucell, uZ, upos, uocc = read_xyz(xyz)
        tiles, dz = SILICON_TILES, SILICON_DZ
        self.plan = stemsim_plan(self.exe, self.ini)
        nx, ny, ns = self.plan["nx"], self.plan["ny"], self.plan["n_slices"]
        cell, Z, pos, occ = tile_like_stemsim(ucell, uZ, upos, uocc, tiles)
        self.cell = cell
        V = stemsim_saved_potential(self.exe, self.ini, os.path.join(self.work, "potential.h5"))
        assert V.shape == (ns, ny, nx), V.shape
        self.potential = abtem.PotentialArray(np.ascontiguousarray(V.transpose(0, 2, 1)), slice_thickness=dz,
                                              extent=(cell[0], cell[1]))
        self.grid = f"grid {nx} x {ny}, {ns} slices"

    def stemsim(self, sets=()):
        """One stemsim run of the case with extra section.key=value settings (run_stemsim's dict)."""
        return run_stemsim(self.exe, self.ini, self.h5, self.threads, sets)

    def abtem_scan(self, sx, sy, detector=None, soft=False, **probe):
        """abTEM's probe (200 keV, 20 mrad, hard or soft edge; probe: aberrations, a defocus
        distribution, ...) scanned over stemsim's positions through the case's potential,
        without abTEM's taper: the detector's values as [len(sy)][len(sx)][...] (default
        detector: 1 mrad rings, as stemsim's /rings)."""
        import abtem

        pos = np.array([(x, y) for y in sy for x in sx])
        p = abtem.Probe(energy=200e3, semiangle_cutoff=20, soft=soft, **probe)
        p.grid.match(self.potential)
        det = detector if detector is not None else abtem.FlexibleAnnularDetector(step_size=1)
        with abtem.config.set({"antialias.taper": 0.0}):
            m = p.scan(self.potential, scan=abtem.CustomScan(pos), detectors=det, lazy=False)
        return np.asarray(m.array, dtype=np.float64).reshape(len(sy), len(sx), -1)


def option_check_args(doc, tol, **extra):
    """The option checks' command line: --stemsim, --threads, --step, --tol, --json, and
    extra name=(type, default, help) options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stemsim", default=os.environ.get("STEMSIM", os.path.join(REPO, "build", "stemsim")))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--step", type=float, default=0.7, help="scan step over one unit cell, Angstrom")
    ap.add_argument("--tol", type=float, default=tol, help="largest relative RMS of a matched case")
    ap.add_argument("--json", default=None)
    for name, (kind, default, text) in extra.items():
        ap.add_argument("--" + name, type=kind, default=default, help=text)
    return ap


def option_check_done(name, ok, results, json_path):
    """Prints PASS/FAIL, writes the results as JSON when asked; the exit status."""
    print(f"{name}:", "PASS" if ok else "FAIL")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stemsim", default=os.environ.get("STEMSIM", os.path.join(REPO, "build", "stemsim")))
    ap.add_argument("--workdir", default=None, help="scratch directory (default: a new temporary one)")
    ap.add_argument("--tiles", type=int, nargs=3, default=(4, 4, 4))
    ap.add_argument("--pixel-size", type=float, default=0.06)
    ap.add_argument("--slice-thickness", type=float, default=1.3575)
    ap.add_argument("--step", type=float, default=0.25)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--defocus", type=float, default=40.0, help="|C1| of the defocus-sign test (Angstrom)")
    ap.add_argument("--variants", default="ABDEGC", help="abTEM variants to run (subset of ABDEGC)")
    ap.add_argument("--no-finite", action="store_true", help="skip abTEM's finite (3D-integrated) projection (variant F)")
    ap.add_argument("--no-convergence", action="store_true", help="skip the pixel-size convergence line scans")
    ap.add_argument("--convergence-pixels", type=float, nargs="+", default=(0.06, 0.04, 0.03))
    ap.add_argument("--no-rect", action="store_true", help="skip the rectangular-cell case")
    ap.add_argument("--json", default=None, help="write all numbers here")
    args = ap.parse_args()

    import abtem
    import ase
    import dask
    from abtem.parametrizations import KirklandParametrization

    abtem.config.set({"device": "cpu", "precision": "float32"})
    dask.config.set(scheduler="threads", num_workers=args.threads)

    work = args.workdir or tempfile.mkdtemp(prefix="abtem_xc_")
    os.makedirs(work, exist_ok=True)
    exe = os.path.abspath(args.stemsim)
    xyz = os.path.join(REPO, "data", "Si100_unitcell.xyz")
    ucell, uZ, upos, uocc = read_xyz(xyz)
    vfunc = KirklandParametrization().projected_potential("Si")
    kirk_path = os.path.join(REPO, "data", "kirkland_params.txt")
    results = {"abtem_version": abtem.__version__, "workdir": work}
    md = []

    t_start = time.time()

    def log(*a):
        print(f"[{time.time() - t_start:6.0f} s]", *a, file=sys.stderr, flush=True)

    # --- C physics -----------------------------------------------------------
    results["c_physics"] = c_physics_check(work, vfunc)
    full, cut = integrated_potential(vfunc, 3.0)
    results["integrated_potential_Si"] = {"full": full, "stemsim_cut_3A": cut, "ratio": cut / full}

    # --- main case: plan, model ----------------------------------------------
    dz = args.slice_thickness
    scan = ((ucell[0], 2 * ucell[0]), (ucell[1], 2 * ucell[1]), args.step)
    ini = os.path.join(work, "main.ini")
    write_ini(ini, xyz, args.tiles, scan, args.pixel_size, dz, os.path.join(work, "main.h5"))
    plan = stemsim_plan(exe, ini)
    nx, ny, ns = plan["nx"], plan["ny"], plan["n_slices"]
    cell, Z, pos, occ = tile_like_stemsim(ucell, uZ, upos, uocc, args.tiles)
    assert abs(cell[2] - ns * dz) < 1e-6 * cell[2] or ns == math.ceil(cell[2] / dz - 1e-9)
    results["plan"] = {k: v for k, v in plan.items() if k != "text"}
    log(plan["text"])

    s_st, s_ab = stemsim_slices(pos, dz, ns), abtem_slices(pos, dz, ns)
    moved = np.nonzero(s_st != s_ab)[0]
    results["slicing"] = {
        "atoms_per_slice_stemsim": np.bincount(s_st, minlength=ns).tolist(),
        "atoms_per_slice_abtem": np.bincount(s_ab, minlength=ns).tolist(),
        "atoms_per_slice_stemsim_before_5d2b554": np.bincount(stemsim_slices(pos, dz, ns, tol=0.0), minlength=ns).tolist(),
        "atoms_assigned_differently": int(len(moved)),
        "example": [(float(pos[i, 2]), float(pos[i, 2] / dz), int(s_st[i]), int(s_ab[i])) for i in moved[:3]],
    }

    log("stemsim: main case")
    st = run_stemsim(exe, ini, os.path.join(work, "main.h5"), args.threads)
    sx, sy = st["scan_x"], st["scan_y"]
    column = (sx[0] + ucell[0] / 2, sy[0] + ucell[1] / 2)  # an atomic column inside the window
    results["stemsim_wall_s"] = st["wall_s"]
    # internal consistency: images == sums of rings over the same ranges
    ri = ring_images(st["rings"])
    results["stemsim_images_vs_rings_maxdev"] = max(float(np.abs(st["images"][k] - ri[k]).max()) for k in IMAGES)
    prof = st["rings"].mean(axis=(0, 1))
    results["folz"] = {"predicted_mrad": 1e3 * math.sqrt(2 * plan["wavelength"] / ucell[2]),
                       "share_of_HAADF_in_FOLZ_ring": float(prof[FOLZ[0]:FOLZ[1]].sum() / prof[70:140].sum())}

    atoms = ase.Atoms(numbers=Z, positions=pos, cell=cell, pbc=True)
    atoms_st = atoms.copy()
    p = atoms_st.positions
    p[:, 2] = (s_st + 0.5) * dz  # infinite projection: only the slice index matters
    atoms_st.positions = p
    gpts, extent = (nx, ny), (cell[0], cell[1])

    def native_potential(a, projection="infinite"):
        pot = abtem.Potential(a, gpts=gpts, slice_thickness=dz, parametrization="kirkland", projection=projection)
        assert pot.num_slices == ns, (pot.num_slices, ns)
        return pot

    V_c = None
    cases = {}
    for v in args.variants:
        log(f"abTEM variant {v}")
        if v == "A":
            rings, wall = abtem_scan(native_potential(atoms), gpts, extent, sx, sy)
        elif v == "B":
            rings, wall = abtem_scan(native_potential(atoms_st), gpts, extent, sx, sy)
        elif v == "D":
            rings, wall = abtem_scan(native_potential(atoms_st), gpts, extent, sx, sy, taper=0.0)
        elif v in "EG":
            tr = pixel_average_transfer(nx, ny) if v == "G" else None
            V = fourier_potential(Z, pos, occ, s_st, cell, nx, ny, ns, kirk_path, tr)
            pot = abtem.PotentialArray(np.ascontiguousarray(V.transpose(0, 2, 1)), slice_thickness=dz, extent=extent)
            rings, wall = abtem_scan(pot, gpts, extent, sx, sy, taper=0.0)
        elif v == "C":
            V_c, _ = stemsim_like_potential(Z, pos, occ, cell, nx, ny, ns, dz, 3.0, 8, vfunc)
            pot = abtem.PotentialArray(np.ascontiguousarray(V_c.transpose(0, 2, 1)), slice_thickness=dz, extent=extent)
            rings, wall = abtem_scan(pot, gpts, extent, sx, sy, taper=0.0)
        else:
            raise SystemExit(f"unknown variant {v}")
        cases[v] = compare_case(st, rings, sx, sy, column)
        cases[v]["abtem_wall_s"] = wall
    if not args.no_finite:
        log("abTEM finite projection")
        rings, wall = abtem_scan(native_potential(atoms, "finite"), gpts, extent, sx, sy)
        cases["F"] = compare_case(st, rings, sx, sy, column)
        cases["F"]["abtem_wall_s"] = wall
    results["main"] = cases

    # projected-potential comparison per slice (C rebuild vs abTEM, same slicing)
    if V_c is not None:
        pa = native_potential(atoms_st).build(lazy=False)
        Va = np.asarray(pa.array).transpose(0, 2, 1)  # -> [s][y][x]
        occupied = [s for s in range(ns) if np.abs(Va[s]).max() > 0]
        s0 = occupied[0]
        results["potential_slice"] = {
            "slice": s0,
            "mean_stemsim": float(V_c[s0].mean()), "mean_abtem": float(Va[s0].mean()),
            "max_stemsim": float(V_c[s0].max()), "max_abtem": float(Va[s0].max()),
            "min_stemsim": float(V_c[s0].min()), "min_abtem": float(Va[s0].min()),
            "rel_rms_after_mean_removed": float(np.sqrt(np.mean(((V_c[s0] - V_c[s0].mean()) - (Va[s0] - Va[s0].mean())) ** 2))
                                                / np.sqrt(np.mean((Va[s0] - Va[s0].mean()) ** 2))),
        }

    # --- pixel-size convergence (line scan) --------------------------------------
    if not args.no_convergence:
        log("pixel-size convergence")
        cscan = ((ucell[0], 2 * ucell[0]), (ucell[1], ucell[1]), args.step)
        conv = []
        for px in args.convergence_pixels:
            cini = os.path.join(work, f"conv_{px}.ini")
            write_ini(cini, xyz, args.tiles, cscan, px, dz, os.path.join(work, "conv.h5"))
            cplan = stemsim_plan(exe, cini)
            cnx, cny, cns = cplan["nx"], cplan["ny"], cplan["n_slices"]
            sc = run_stemsim(exe, cini, os.path.join(work, "conv.h5"), args.threads)
            VE = fourier_potential(Z, pos, occ, stemsim_slices(pos, dz, cns), cell, cnx, cny, cns, kirk_path)
            pe = abtem.PotentialArray(np.ascontiguousarray(VE.transpose(0, 2, 1)), slice_thickness=dz, extent=extent)
            rE, _ = abtem_scan(pe, (cnx, cny), extent, sc["scan_x"], sc["scan_y"], taper=0.0)
            pn = abtem.Potential(atoms_st, gpts=(cnx, cny), slice_thickness=dz, parametrization="kirkland")
            rA, _ = abtem_scan(pn, (cnx, cny), extent, sc["scan_x"], sc["scan_y"])
            row = {"pixel_size": cell[0] / cnx, "grid": [cnx, cny], "band_limit_mrad": cplan["band_limit_mrad"]}
            for k in ("ADF", "HAADF"):
                row[k] = {"stemsim": float(sc["images"][k].mean()), "E": float(ring_images(rE)[k].mean()),
                          "B": float(ring_images(rA)[k].mean())}
            conv.append(row)
        results["convergence"] = conv

    # --- vacuum ----------------------------------------------------------------
    log("vacuum")
    vxyz = os.path.join(work, "vacuum.xyz")
    with open(vxyz, "w") as f:
        f.write(f"empty cell (one occupancy-0 atom)\n{ucell[0]} {ucell[1]} {ucell[2]}\n14 0 0 0 0.0 0\n-1\n")
    vini = os.path.join(work, "vacuum.ini")
    vscan = ((ucell[0], ucell[0] + 2 * args.step), (ucell[1], ucell[1] + 2 * args.step), args.step)
    write_ini(vini, vxyz, args.tiles, vscan, args.pixel_size, dz, os.path.join(work, "vacuum.h5"))
    sv = run_stemsim(exe, vini, os.path.join(work, "vacuum.h5"), args.threads)
    vpot = abtem.PotentialArray(np.zeros((ns, nx, ny), np.float32), slice_thickness=dz, extent=extent)
    rv, _ = abtem_scan(vpot, gpts, extent, sv["scan_x"], sv["scan_y"], taper=0.0)
    nb = rv.shape[-1]
    vac = {k: {"stemsim": float(sv["images"][k].mean()), "abtem": float(ring_images(rv)[k].mean())} for k in IMAGES}
    vac["total"] = {"stemsim": float(sv["rings"].sum(-1).mean()), "abtem": float(rv.sum(-1).mean())}
    vac["rings_max_abs_diff"] = float(np.abs(sv["rings"][..., :nb] - rv).max())
    vac["rings_beyond_abtem_last_bin"] = float(sv["rings"][..., nb:].sum(-1).max())
    nonzero = np.nonzero(rv[0, 0] > 1e-9 * rv[0, 0].max())[0]
    vac["aperture_rings"] = [int(nonzero.min()), int(nonzero.max())]
    vac["probe_position_independent"] = float(np.ptp(sv["rings"].sum(-1)))
    results["vacuum"] = vac

    # --- defocus sign (line scan through a column, potential C) -----------------
    if V_c is not None and args.defocus:
        log("defocus sign")
        d = args.defocus
        lscan = ((ucell[0], 2 * ucell[0]), (ucell[1], ucell[1]), args.step)
        lini = os.path.join(work, "line.ini")
        write_ini(lini, xyz, args.tiles, lscan, args.pixel_size, dz, os.path.join(work, "line.h5"))
        pot = abtem.PotentialArray(np.ascontiguousarray(V_c.transpose(0, 2, 1)), slice_thickness=dz, extent=extent)
        dres = {}
        for sd in (+d, -d):
            s_line = run_stemsim(exe, lini, os.path.join(work, "line.h5"), args.threads, [f"probe.defocus={sd}"])
            for ad in (+d, -d):
                ra, _ = abtem_scan(pot, gpts, extent, s_line["scan_x"], s_line["scan_y"], taper=0.0, defocus=ad)
                ai = ring_images(ra)
                dres[f"stemsim {sd:+g} vs abTEM C10 {ad:+g}"] = {
                    k: compare(s_line["images"][k], ai[k]) for k in ("BF", "ABF", "ADF", "HAADF")}
        results["defocus"] = dres

    # --- rectangular cell -----------------------------------------------------
    if not args.no_rect:
        log("rectangular cell")
        rt = (4, 3, 2)
        rscan = ((ucell[0], 2 * ucell[0]), (0.5 * ucell[1], ucell[1]), 0.5)
        rini = os.path.join(work, "rect.ini")
        write_ini(rini, xyz, rt, rscan, args.pixel_size, dz, os.path.join(work, "rect.h5"))
        rplan = stemsim_plan(exe, rini)
        rnx, rny, rns = rplan["nx"], rplan["ny"], rplan["n_slices"]
        rcell, rZ, rpos, rocc = tile_like_stemsim(ucell, uZ, upos, uocc, rt)
        sr = run_stemsim(exe, rini, os.path.join(work, "rect.h5"), args.threads)
        rcol = (sr["scan_x"][0] + ucell[0] / 4, sr["scan_y"][0] + ucell[1] / 4)  # the (1/4, 3/4) column
        rV, _ = stemsim_like_potential(rZ, rpos, rocc, rcell, rnx, rny, rns, dz, 3.0, 8, vfunc)
        rpot = abtem.PotentialArray(np.ascontiguousarray(rV.transpose(0, 2, 1)), slice_thickness=dz, extent=(rcell[0], rcell[1]))
        ra, _ = abtem_scan(rpot, (rnx, rny), (rcell[0], rcell[1]), sr["scan_x"], sr["scan_y"], taper=0.0)
        results["rect"] = {"grid": [rnx, rny], "scan": [len(sr["scan_x"]), len(sr["scan_y"])],
                           "C": compare_case(sr, ra, sr["scan_x"], sr["scan_y"], rcol)}
        ratoms = ase.Atoms(numbers=rZ, positions=rpos, cell=rcell, pbc=True)
        rpa = abtem.Potential(ratoms, gpts=(rnx, rny), slice_thickness=dz, parametrization="kirkland")
        ra2, _ = abtem_scan(rpa, (rnx, rny), (rcell[0], rcell[1]), sr["scan_x"], sr["scan_y"])
        results["rect"]["A"] = compare_case(sr, ra2, sr["scan_x"], sr["scan_y"], rcol)

    # --- report -----------------------------------------------------------------
    names = {"A": "A: abTEM native (infinite projection, own slicing, taper 0.01)",
             "B": "B: abTEM native, stemsim slice assignment",
             "D": "D: as B, hard band limit (taper 0)",
             "C": "C: stemsim potential rebuilt in numpy, abTEM multislice (engine check)",
             "E": "E: alias-free Fourier-space Kirkland potential (reference), stemsim slicing, taper 0",
             "G": "G: E times the pixel-average transfer sinc(kx/nx) sinc(ky/ny)",
             "F": "F: abTEM finite projection (3D potential integrated over each slice)"}
    md.append(f"abTEM {abtem.__version__}; grid {nx} x {ny} ({cell[0] / nx:.4f} A), {ns} slices of {dz} A, "
              f"band limit {plan['band_limit_mrad']} mrad; scan {len(sx)} x {len(sy)} probes, step {args.step} A.")
    for v, c in cases.items():
        rows = [(k, c[k]) for k in IMAGES] + [(f"FOLZ ring {FOLZ[0]}-{FOLZ[1]}", c["FOLZ"]), ("total", c["total"])]
        md.append(table(names[v], rows))
        if "peak_stemsim" in c:
            md.append(f"\nHAADF peak at the column ({c['column'][0]:.4f}, {c['column'][1]:.4f}) A: stemsim "
                      f"({c['peak_stemsim'][0]:.4f}, {c['peak_stemsim'][1]:.4f}) A, "
                      f"abTEM ({c['peak_abtem'][0]:.4f}, {c['peak_abtem'][1]:.4f}) A")
    md.append("\n#### vacuum probe\n\n| quantity | stemsim | abTEM |\n|---|---|---|")
    for k in list(IMAGES) + ["total"]:
        md.append(f"| {k} | {vac[k]['stemsim']:.6f} | {vac[k]['abtem']:.6f} |")
    md.append(f"\nrings: max |difference| {vac['rings_max_abs_diff']:.2e}; aperture in rings {vac['aperture_rings']}")
    if "defocus" in results:
        md.append("\n#### defocus sign (line scan, potential C)\n\n| pairing | ADF rel. RMS | HAADF rel. RMS | ABF rel. RMS |\n|---|---|---|---|")
        for k, c in results["defocus"].items():
            md.append(f"| {k} | {100 * c['ADF']['rel_rms']:.3f}% | {100 * c['HAADF']['rel_rms']:.3f}% | {100 * c['ABF']['rel_rms']:.3f}% |")
    if "convergence" in results:
        md.append("\n#### pixel-size convergence (line scan through two columns; means of the line)\n\n"
                  "| pixel (A) | grid | ADF stemsim | ADF ref. E | ADF abTEM B | HAADF stemsim | HAADF ref. E | HAADF abTEM B |\n"
                  "|---|---|---|---|---|---|---|---|")
        for r in results["convergence"]:
            a, h = r["ADF"], r["HAADF"]
            md.append(f"| {r['pixel_size']:.4f} | {r['grid'][0]} | {a['stemsim']:.5g} ({100 * (a['stemsim'] / a['E'] - 1):+.1f}%) | "
                      f"{a['E']:.5g} | {a['B']:.5g} ({100 * (a['B'] / a['E'] - 1):+.1f}%) | "
                      f"{h['stemsim']:.5g} ({100 * (h['stemsim'] / h['E'] - 1):+.1f}%) | {h['E']:.5g} | "
                      f"{h['B']:.5g} ({100 * (h['B'] / h['E'] - 1):+.1f}%) |")
    if "rect" in results:
        for v in ("C", "A"):
            c = results["rect"][v]
            md.append(table(f"rectangular cell {results['rect']['grid'][0]} x {results['rect']['grid'][1]}, variant {v}",
                            [(k, c[k]) for k in IMAGES] + [("total", c["total"])]))
    print("\n".join(md))
    print("\n```json\n" + json.dumps({k: results[k] for k in ("c_physics", "integrated_potential_Si", "slicing",
                                                             "stemsim_images_vs_rings_maxdev", "folz") if k in results},
                                      indent=1) + "\n```")
    if "potential_slice" in results:
        print(json.dumps(results["potential_slice"], indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=float)


if __name__ == "__main__":
    main()
