#!/usr/bin/env python3
"""stemsim's thickness series ([output] depths) against abTEM's exit planes, light and heavy atoms.

abTEM 1.0.11 is given stemsim's own potential slices (a PotentialArray with exit_planes at
the same slice boundaries), as the other option checks do, so only the propagation, the
probe and the detector differ. Two crystals:
  Si [100] 4 x 4 x 4 cells (Z = 14), 1.3575 A slices, 0.06 A pixels;
  Au [100] 4 x 4 x 6 cells (Z = 79, fcc a = 4.078 A), 2.039 A slices, 0.05 A pixels;
each at three depths (a quarter, half and all of the crystal, on slice boundaries):
  1. hrtem: the complex exit wave at each depth (relative RMS of the difference over the RMS
     of abTEM's wave, after one constant phase; stemsim's frame and abTEM's differ by a
     constant per slice);
  2. multislice STEM over one unit cell: the BF, ADF and HAADF images at each depth
     (relative RMS over the image's mean);
  3. PRISM f = 1 (S-matrix recorded at each depth) against the same abTEM images;
and negative controls: stemsim's wave and HAADF image at the first depth against abTEM's at
the last (must differ by far more than the tolerance).

    /tmp/abtem-venv/bin/python benchmarks/validation/abtem_depths.py [--json out.json]
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtem_crosscheck as xc  # noqa: E402

IMAGES = {"BF": (0, 10), "ADF": (30, 70), "HAADF": (70, 140)}


def write_gold_cell(path):
    a = 4.078
    frac = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    with open(path, "w") as f:
        f.write(f"Au fcc unit cell\n{a} {a} {a}\n")
        for x, y, z in frac:
            f.write(f"79 {x * a:.6f} {y * a:.6f} {z * a:.6f} 1.0 0.0\n")
        f.write("-1\n")


class Crystal:
    """One crystal's stemsim config, plan and potential (abTEM's PotentialArray of stemsim's
    own slices, with exit planes after the slices that end at each depth)."""

    def __init__(self, name, xyz, tiles, dz, pixel, stemsim, threads, step):
        import abtem
        import dask

        abtem.config.set({"device": "cpu", "precision": "float32"})
        dask.config.set(scheduler="threads", num_workers=threads)
        self.name, self.exe, self.threads = name, os.path.abspath(stemsim), threads
        self.work = tempfile.mkdtemp(prefix=f"abtem_depths_{name}_")
        ucell, uZ, upos, uocc = xc.read_xyz(xyz)
        scan = ((ucell[0], 2 * ucell[0]), (ucell[1], 2 * ucell[1]), step)
        self.ini, self.h5 = os.path.join(self.work, "case.ini"), os.path.join(self.work, "case.h5")
        xc.write_ini(self.ini, xyz, tiles, scan, pixel, dz, self.h5)
        self.plan = xc.stemsim_plan(self.exe, self.ini)
        nx, ny, ns = self.plan["nx"], self.plan["ny"], self.plan["n_slices"]
        self.cell = xc.tile_like_stemsim(ucell, uZ, upos, uocc, tiles)[0]
        self.slices = (ns // 4, ns // 2, ns)  # slices above each depth
        self.depths = [k * dz for k in self.slices]
        V = xc.stemsim_saved_potential(self.exe, self.ini, os.path.join(self.work, "potential.h5"))
        assert V.shape == (ns, ny, nx), V.shape
        self.potential = abtem.PotentialArray(np.ascontiguousarray(V.transpose(0, 2, 1)), slice_thickness=dz,
                                              extent=(self.cell[0], self.cell[1]),
                                              exit_planes=tuple(k - 1 for k in self.slices))
        self.sx, self.sy = None, None

    def run(self, sets):
        import h5py

        cmd = [self.exe, "-q", self.ini, "--set", f"output.file={self.h5}", "--set", f"compute.threads={self.threads}",
               "--set", "output.overwrite=true", "--set", "output.depths=" + " ".join(f"{d:.6f}" for d in self.depths)]
        for v in sets:
            cmd += ["--set", v]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
        out = {}
        with h5py.File(self.h5, "r") as f:
            got = np.asarray(f["axes/depth"][()], dtype=np.float64)
            assert np.allclose(got, self.depths, atol=1e-4), (got, self.depths)
            if "exit_wave" in f:
                e = np.asarray(f["exit_wave"][()], dtype=np.float64)[:, 0]  # [depth][y][x][2]
                out["wave"] = e[..., 0] + 1j * e[..., 1]
            for name in IMAGES:
                if f"images/{name}" in f:
                    out[name] = np.asarray(f[f"images/{name}"][()], dtype=np.float64)  # [depth][y][x]
            if "axes/scan_x" in f:  # a scan (hrtem has none)
                self.sx = np.asarray(f["axes/scan_x"][()], dtype=np.float64)
                self.sy = np.asarray(f["axes/scan_y"][()], dtype=np.float64)
        return out

    def abtem_waves(self):
        import abtem

        wave = abtem.PlaneWave(energy=200e3)
        wave.grid.match(self.potential)
        with abtem.config.set({"antialias.taper": 0.0}):
            w = wave.multislice(self.potential).compute()
        return np.asarray(w.array).transpose(0, 2, 1).astype(np.complex128)  # [depth][y][x]

    def abtem_images(self):
        import abtem

        pos = np.array([(x, y) for y in self.sy for x in self.sx])
        p = abtem.Probe(energy=200e3, semiangle_cutoff=20, soft=False)
        p.grid.match(self.potential)
        det = abtem.FlexibleAnnularDetector(step_size=1)
        with abtem.config.set({"antialias.taper": 0.0}):
            m = p.scan(self.potential, scan=abtem.CustomScan(pos), detectors=det, lazy=False)
        rings = np.asarray(m.array, dtype=np.float64).reshape(len(self.slices), len(self.sy), len(self.sx), -1)
        return {name: rings[..., lo:hi].sum(axis=-1) for name, (lo, hi) in IMAGES.items()}


def same_phase(s, a):
    return s * np.exp(-1j * np.angle(np.vdot(a, s)))


def rel_wave(s, a):
    return float(np.sqrt(np.mean(np.abs(same_phase(s, a) - a) ** 2) / np.mean(np.abs(a) ** 2)))


def rel_inner(s, a, cell, fraction=0.5):
    """rel_wave over the frequencies below `fraction` of Nyquist: away from the band limit,
    whose edge pixels the two codes may count differently."""
    s = same_phase(s, a)
    S, A = np.fft.fft2(s), np.fft.fft2(a)
    ny, nx = S.shape
    qx, qy = np.fft.fftfreq(nx, cell[0] / nx), np.fft.fftfreq(ny, cell[1] / ny)
    inside = np.hypot(qx[None, :], qy[:, None]) < fraction * min(qx.max(), qy.max())
    return float(np.sqrt(np.sum(np.abs(S[inside] - A[inside]) ** 2) / np.sum(np.abs(A[inside]) ** 2)))


def rel_image(s, a):
    return float(np.sqrt(np.mean((s - a) ** 2)) / np.mean(a))


def check_crystal(c, tol):
    s_hr = c.run(["simulation.algorithm=hrtem", "output.save_exit_wave=true", "hrtem.objective_aperture=0"])
    s_ms = c.run(["simulation.algorithm=multislice"])  # the config holds the [images] of IMAGES
    s_pr = c.run(["simulation.algorithm=prism", "simulation.interpolation_x=1", "simulation.interpolation_y=1"])
    a_w, a_img = c.abtem_waves(), c.abtem_images()
    rows = []
    for d, depth in enumerate(c.depths):
        rows.append((f"{c.name} exit wave at {depth:.3f} A (hrtem)", rel_wave(s_hr["wave"][d], a_w[d]), True))
        rows.append((f"{c.name} exit wave at {depth:.3f} A, below 1/2 Nyquist (information)",
                     rel_inner(s_hr["wave"][d], a_w[d], c.cell), None))
        for name in IMAGES:
            rows.append((f"{c.name} {name} at {depth:.3f} A (multislice)", rel_image(s_ms[name][d], a_img[name][d]),
                         True))
            rows.append((f"{c.name} {name} at {depth:.3f} A (PRISM f = 1)", rel_image(s_pr[name][d], a_img[name][d]),
                         True))
    rows.append((f"{c.name} exit wave at {c.depths[0]:.3f} A vs abTEM's at {c.depths[-1]:.3f} A (must differ)",
                 rel_wave(s_hr["wave"][0], a_w[-1]), False))
    rows.append((f"{c.name} HAADF at {c.depths[0]:.3f} A vs abTEM's at {c.depths[-1]:.3f} A (must differ)",
                 rel_image(s_ms["HAADF"][0], a_img["HAADF"][-1]), False))
    ok = all((v <= tol) if match else (v >= 10 * tol) for _, v, match in rows if match is not None)
    return ok, rows


def main():
    ap = xc.option_check_args(__doc__, 2e-3)
    args = ap.parse_args()
    t0 = time.time()
    gold = os.path.join(tempfile.mkdtemp(prefix="abtem_depths_"), "Au_unitcell.xyz")
    write_gold_cell(gold)
    crystals = [
        Crystal("Si [100]", os.path.join(xc.REPO, "data", "Si100_unitcell.xyz"), (4, 4, 4), 1.3575, 0.06,
                args.stemsim, args.threads, args.step),
        Crystal("Au [100]", gold, (4, 4, 6), 2.039, 0.05, args.stemsim, args.threads, args.step),
    ]
    ok, results = True, []
    for c in crystals:
        good, rows = check_crystal(c, args.tol)
        ok &= good
        print(f"\n{c.name}: grid {c.plan['nx']} x {c.plan['ny']}, {c.plan['n_slices']} slices, depths "
              + ", ".join(f"{d:.3f}" for d in c.depths) + " A")
        for text, v, match in rows:
            verdict = "" if match is None else ("ok" if (v <= args.tol if match else v >= 10 * args.tol) else "FAIL")
            print(f"  {text:70s} {v:10.3e}  {verdict}")
            results.append({"check": text, "value": v, "must_match": match})
    print(f"\ntolerance {args.tol:g} (relative RMS); {time.time() - t0:.0f} s")
    return xc.option_check_done("abtem_depths", ok, results, args.json)


if __name__ == "__main__":
    sys.exit(main())
