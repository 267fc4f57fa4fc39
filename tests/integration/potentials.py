#!/usr/bin/env python3
"""Potentials (ctest label `physics`): [simulation] parametrisation and projection, [output]
save_potential and [simulation] potential_file.

  potentials.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

- Finite projection against a closed form: one Si atom, 0.5 Angstrom slices, cutoff 8
  Angstrom. The plane integral of each slice's potential (its mean times the cell area) must
  equal the integral of Kirkland's 3D potential over the slab, written out here from the table:
  a Yukawa term A exp(-m R)/R gives 2 pi A exp(-m|z|)/m per unit depth, a Gaussian
  A exp(-m R^2) gives pi A exp(-m z^2)/m. The infinite projection puts the whole integral in
  the atom's slice. Tolerance 0.5% of the largest slice.
- The finite projection only moves potential between slices: the sum over slices equals the
  infinite projection's to 1e-5 (small.ini, 1.36 Angstrom slices), and the slices differ.
- save_potential on 1 and 3 ranks writes the same /potential; a run that reads it back
  (potential_file) gives the same images bit for bit; 2 thermal configurations differ.
- potential_file refused (exit 4) for another grid, too few configurations, a file without
  /potential, a configuration holding NaN or zeros, a single run's file read by a [series]
  campaign (which reads one dataset per tilt: tests/integration/stored_campaign.py); another
  tilt, projection or seed than the writer's (exit 3).
- Lobato: images within 3% of Kirkland's and not equal; its /potential says "lobato"; 2 ranks
  equal 1 rank.
Exit: 0 pass, 1 fail, 77 skip.
"""
import math
import os
import sys

import itest

A = None
A0E = 0.529177210903 * 14.3996454784  # Bohr radius times e, V Angstrom^2


def run(ranks, extra, name, expect=0, ini=None):
    return itest.run(A, ranks, extra, name, expect, ini)


def read(name, key):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as f:
        if key == "images":
            return {k: np.asarray(f["images"][k][()]) for k in f["images"]}
        if key == "attrs":
            return dict(f["potential"].attrs)
        return np.asarray(f[key][()], dtype=float)


def kirkland_silicon():
    rows = [l for l in open(os.environ.get("STEMSIM_KIRKLAND", os.path.join(A.repo, "data", "kirkland_params.txt")))
            if l.strip() and not l.startswith("#")]
    v = [float(x) for x in rows[13].split()]
    yuk = [(2 * math.pi ** 2 * A0E * v[2 * i], 2 * math.pi * math.sqrt(v[2 * i + 1])) for i in range(3)]
    gau = [(2 * math.pi ** 2.5 * A0E * v[6 + 2 * i] * v[7 + 2 * i] ** -1.5, math.pi ** 2 / v[7 + 2 * i]) for i in range(3)]
    return yuk, gau


def slab_integral(yuk, gau, z0, z1):
    """Integral of V over the plane and z in [z0, z1] (z relative to the atom)."""
    def yuk_cum(m, z):  # int_0^z exp(-m|z'|) dz', odd in z
        return math.copysign((1 - math.exp(-m * abs(z))) / m, z)
    total = 0.0
    for amp, m in yuk:
        total += 2 * math.pi * amp / m * (yuk_cum(m, z1) - yuk_cum(m, z0))
    for amp, m in gau:
        total += math.pi * amp / m * 0.5 * math.sqrt(math.pi / m) * (math.erf(math.sqrt(m) * z1) - math.erf(math.sqrt(m) * z0))
    return total


def check_closed_form():
    import numpy as np
    cell, dz, za = 16.0, 0.5, 8.3
    xyz = os.path.join(A.workdir, "one_si.xyz")
    with open(xyz, "w") as f:
        f.write("one silicon atom\n%g %g %g\n14 8.0 8.0 %g 1.0 0.0\n-1\n" % (cell, cell, cell, za))
    ini = os.path.join(A.workdir, "one_si.ini")
    with open(ini, "w") as f:
        f.write("[sample]\nxyz = %s\n[simulation]\nalgorithm = hrtem\ngrid_x = 160\ngrid_y = 160\n"
                "slice_thickness = %g\npotential_radius = 8\n[output]\noverwrite = true\n"
                "save_potential = true\n[compute]\nthreads = 2\n" % (xyz, dz))
    yuk, gau = kirkland_silicon()
    n = int(round(cell / dz))
    for proj in ("finite", "infinite"):
        run(1, ["--set", "simulation.projection=" + proj], "one_" + proj, ini=ini)
        V = read("one_" + proj, "potential")[0]
        got = V.mean(axis=(1, 2)) * cell * cell
        if proj == "finite":
            want = np.array([slab_integral(yuk, gau, s * dz - za, (s + 1) * dz - za) for s in range(n)])
            want[0] += slab_integral(yuk, gau, -1e3, -za)  # what lies above the first slice goes into it
            want[-1] += slab_integral(yuk, gau, cell - za, 1e3)
        else:
            want = np.zeros(n)
            want[int(za // dz)] = slab_integral(yuk, gau, -1e3, 1e3)
        err = np.abs(got - want).max() / np.abs(want).max()
        print("closed form, %s projection: largest slice %.4f V A^3, worst difference %.2e of it" % (proj, want.max(), err))
        if err > 5e-3:
            for s in range(n):
                print("  slice %2d: %.5f vs %.5f" % (s, got[s], want[s]))
            raise SystemExit("FAIL %s projection: slice integrals differ from the closed form by %.2e" % (proj, err))


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    import numpy as np
    itest.small_case(A, "potentials")

    check_closed_form()

    thin = ["--set", "simulation.slice_thickness=1.3575"]
    run(1, thin + ["--set", "output.save_potential=true"], "inf")
    run(1, thin + ["--set", "output.save_potential=true", "--set", "simulation.projection=finite"], "fin")
    vi, vf = read("inf", "potential"), read("fin", "potential")
    moved = np.linalg.norm(vf - vi) / np.linalg.norm(vi)
    kept = np.linalg.norm(vf.sum(1) - vi.sum(1)) / np.linalg.norm(vi.sum(1))
    print("finite projection: slices differ by %.3f, their sum by %.2e" % (moved, kept))
    if not (moved > 0.05 and kept < 1e-5):
        raise SystemExit("FAIL finite projection: slices moved %.3g (want > 0.05), sum changed %.3g (want < 1e-5)"
                         % (moved, kept))

    phon = ["--set", "simulation.thermal=true", "--set", "simulation.frozen_phonons=2"]
    run(1, phon + ["--set", "output.save_potential=true"], "exp1")
    run(3, phon + ["--set", "output.save_potential=true"], "exp3")
    p1, p3 = read("exp1", "potential"), read("exp3", "potential")
    if p1.shape[0] != 2 or not np.array_equal(p1, p3):
        raise SystemExit("FAIL save_potential: 1 and 3 ranks differ (or shape %s)" % (p1.shape,))
    if np.array_equal(p1[0], p1[1]):
        raise SystemExit("FAIL save_potential: the two thermal configurations are identical")
    src = os.path.join(A.workdir, "exp1.h5")
    run(1, phon + ["--set", "simulation.potential_file=" + src], "imp1")
    i1, e1 = read("imp1", "images"), read("exp1", "images")
    if any(not np.array_equal(i1[k], e1[k]) for k in e1):
        raise SystemExit("FAIL potential_file: images differ from the run that wrote the potential")
    print("save_potential: 1 rank = 3 ranks bitwise; potential_file reproduces the images bit for bit")

    run(1, phon + ["--set", "simulation.potential_file=" + src, "--set", "simulation.pixel_size=0.09"], "bad_grid", 4)
    run(1, ["--set", "simulation.potential_file=" + src, "--set", "simulation.frozen_phonons=3"], "bad_configs", 4)
    run(1, thin + ["--set", "simulation.potential_file=" + os.path.join(A.workdir, "inf.h5")], "ok_configs")  # 1 of 1
    run(1, ["--set", "output.save_potential=false"], "nopot")
    run(1, ["--set", "simulation.potential_file=" + os.path.join(A.workdir, "nopot.h5")], "bad_file", 4)
    run(1, ["--set", "simulation.potential_file=" + src, "--set", "series.defocus=0,10"], "bad_series", 4)
    print("potential_file refused for another grid, too few configurations, no /potential, a single run's in a series")
    # what the slices were made with cannot change (exit 3), and damaged copies are refused (exit 4)
    for key, value in (("sample.tilt_x", "3"), ("simulation.projection", "finite"), ("simulation.seed", "12")):
        run(1, phon + ["--set", "simulation.potential_file=" + src, "--set", "%s=%s" % (key, value)], "bad_key", 3)
    import h5py
    import shutil
    for tag, value in (("nan", np.nan), ("zeros", 0.0)):
        bad = os.path.join(A.workdir, "exp1_%s.h5" % tag)
        shutil.copy(src, bad)
        with h5py.File(bad, "r+") as f:
            f["potential"][1] = value  # the second configuration: NaN everywhere, or never written
        run(1, phon + ["--set", "simulation.potential_file=" + bad], "bad_" + tag, 4)
    print("potential_file refused for another tilt, projection, seed (exit 3); NaN or zeros in it (exit 4)")

    run(1, ["--set", "output.save_potential=true"], "kirk")
    run(1, ["--set", "output.save_potential=true", "--set", "simulation.parametrisation=lobato"], "lob1")
    run(2, ["--set", "simulation.parametrisation=lobato"], "lob2")
    k, l1, l2 = read("kirk", "images"), read("lob1", "images"), read("lob2", "images")
    for name in k:
        d = np.abs(l1[name] - k[name]).max() / np.abs(k[name]).max()
        r = np.abs(l1[name] - l2[name]).max() / np.abs(l1[name]).max()
        if not (0 < d < 0.03) or r > 1e-6:
            raise SystemExit("FAIL lobato %s: %.3g from Kirkland's (want (0, 0.03)), 2 ranks %.3g from 1" % (name, d, r))
    if read("lob1", "attrs")["parametrisation"] != "lobato":
        raise SystemExit("FAIL lobato: /potential does not say lobato")
    print("lobato: images within 3% of Kirkland's, 2 ranks = 1 rank")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
