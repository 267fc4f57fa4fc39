#!/usr/bin/env python3
"""PRISM's stored S-matrix (ctest label `physics;mpi`): [output] save_smatrix and
[simulation] smatrix_file (Prismatic's -sm / -ism).

  stored_smatrix.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

- Physics: with interpolation 1, beam b of the stored S-matrix is the exit wave of a plane
  wave tilted onto that beam's Fourier pixel (algorithm = hrtem, [probe] beam_tilt on it),
  cut to the S-matrix's Fourier box: checked for a few beams to 1e-5 relative RMS.
- /smatrix on 1 rank, on 3 ranks in 3 groups and on 2 ranks sharing the beams of one group
  is the same bit for bit; the thermal configurations differ; /smatrix_beams lists the
  beams.
- smatrix_file gives the images of the run that wrote it bit for bit (1 and 2 ranks); with
  another defocus and detector it equals a fresh computation with them (1e-6), builds no
  potential (no transmission phase in its log).
- Refused (exit 4): another energy, grid, semiangle (other beams), slice thickness, too few
  configurations, a file without /smatrix, a beam of zeros, a single run's file read by a
  series (tests/integration/stored_campaign.py); (exit 3): multislice, with potential_file,
  another tilt or parametrisation than the writer's.
- No temporary (*.smatrix-g*.incomplete) is left, after success or after a failure.
Exit: 0 pass, 1 fail, 77 skip.
"""
import glob
import os
import subprocess
import sys

import itest

A = None


def run(ranks, extra, name, expect=0):
    return itest.run(A, ranks, extra, name, expect)


def read(name, key):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as f:
        if key == "images":
            return {k: np.asarray(f["images"][k][()]) for k in f["images"]}
        return np.asarray(f[key][()])


def no_temporaries(when):
    left = glob.glob(os.path.join(A.workdir, "*.smatrix-g*"))
    if left:
        raise SystemExit("FAIL %s: S-matrix temporaries left: %s" % (when, left))


def check_against_plane_waves():
    """Beam b of the S-matrix = the tilted plane wave's exit wave, cut to the box."""
    import numpy as np
    one = ["--set", "simulation.interpolation_x=1", "--set", "simulation.interpolation_y=1"]
    run(1, one + ["--set", "output.save_smatrix=true"], "f1")
    S, beams = read("f1", "smatrix")[0], read("f1", "smatrix_beams")
    S = S[..., 0] + 1j * S[..., 1]
    cy, cx = S.shape[1:]
    lam = 0.025079340449821935  # 200 keV, Angstrom
    cell = 10.86
    worst = 0.0
    for b in (0, len(beams) // 3, len(beams) - 1):
        kx, ky = int(beams[b][0]), int(beams[b][1])
        run(1, ["--set", "simulation.algorithm=hrtem", "--set", "output.save_exit_wave=true",
                "--set", "probe.beam_tilt_x=%r" % (kx * lam / cell * 1e3),
                "--set", "probe.beam_tilt_y=%r" % (ky * lam / cell * 1e3)], "pw")
        e = read("pw", "exit_wave")[0]
        wave = e[..., 0] + 1j * e[..., 1]
        ny, nx = wave.shape
        F = np.fft.fft2(wave)
        iy = np.fft.fftfreq(cy, 1.0 / cy).astype(int)
        ix = np.fft.fftfreq(cx, 1.0 / cx).astype(int)
        box = F[np.ix_(iy % ny, ix % nx)] * (cx * cy) / (nx * ny)
        cut = np.fft.ifft2(box)
        err = np.sqrt(np.mean(np.abs(S[b] - cut) ** 2) / np.mean(np.abs(cut) ** 2))
        print("beam %d (%d, %d): S-matrix vs tilted plane wave cut to %d x %d: %.2e" % (b, kx, ky, cx, cy, err))
        worst = max(worst, err)
    if not worst < 1e-5:
        raise SystemExit("FAIL S-matrix beams differ from the plane waves' exit waves by %.3g" % worst)


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    import numpy as np
    for old in glob.glob(os.path.join(os.path.abspath(A.workdir), "stored_smatrix", "*")):
        os.remove(old)
    itest.small_case(A, "stored_smatrix", replace=(("algorithm = multislice", "algorithm = prism"), ("defocus = 0\n", "")))

    check_against_plane_waves()

    phon = ["--set", "simulation.thermal=true", "--set", "simulation.frozen_phonons=3"]
    save = phon + ["--set", "output.save_smatrix=true"]
    run(1, save, "s1")
    run(3, save + ["--set", "compute.fp_groups=3"], "s3")
    run(2, save + ["--set", "compute.fp_groups=1"], "s2")
    S1, S3, S2 = read("s1", "smatrix"), read("s3", "smatrix"), read("s2", "smatrix")
    beams = read("s1", "smatrix_beams")
    if S1.shape[0] != 3 or S1.shape[1] != len(beams) or S1.shape[-1] != 2:
        raise SystemExit("FAIL /smatrix shape %s with %d beams" % (S1.shape, len(beams)))
    if not (np.array_equal(S1, S3) and np.array_equal(S1, S2)):
        raise SystemExit("FAIL /smatrix differs between 1 rank, 3 groups and a group of 2")
    if np.array_equal(S1[0], S1[1]):
        raise SystemExit("FAIL the thermal configurations' S-matrices are identical")
    no_temporaries("after saving")
    print("save_smatrix: %s, 1 rank = 3 groups = 1 group of 2 ranks bitwise" % (S1.shape,))

    src = os.path.join(A.workdir, "s1.h5")
    load = phon + ["--set", "simulation.smatrix_file=" + src]
    log = run(1, load, "l1")
    run(2, load, "l2")
    ref = read("s1", "images")
    for name in ("l1", "l2"):
        got = read(name, "images")
        if any(not np.array_equal(got[k], ref[k]) for k in ref):
            raise SystemExit("FAIL %s: images differ from the run that wrote the S-matrix" % name)
    if "transmission" in log.split("time per phase")[-1]:
        print(log)
        raise SystemExit("FAIL smatrix_file: the run still built transmission functions")
    other = ["--set", "probe.C10=-40", "--set", "probe.C30=2e4", "--set", "detector.ring_width=3"]
    run(2, load + other, "l_other")
    run(2, phon + other, "c_other")
    a, c = read("l_other", "images"), read("c_other", "images")
    for k in c:
        d = np.abs(a[k] - c[k]).max() / np.abs(c[k]).max()
        if d > 1e-6:
            raise SystemExit("FAIL smatrix_file with another defocus: %s %.3g from the computed run" % (k, d))
    if np.allclose(a["BF"], ref["BF"]):
        raise SystemExit("FAIL the defocus made no difference")
    print("smatrix_file: the images bit for bit (1 and 2 ranks); another defocus and detector equal a fresh run")

    run(1, load + ["--set", "beam.energy=199"], "bad_energy", 4)
    run(1, load + ["--set", "simulation.pixel_size=0.09"], "bad_grid", 4)
    run(1, load + ["--set", "probe.semiangle=18"], "bad_beams", 4)
    run(1, load + ["--set", "simulation.slice_thickness=1.3575"], "bad_slices", 4)
    run(1, load + ["--set", "simulation.frozen_phonons=4"], "bad_configs", 4)
    run(1, ["--set", "simulation.smatrix_file=" + os.path.join(A.workdir, "l1.h5")], "no_smatrix", 4)
    run(1, load + ["--set", "simulation.algorithm=multislice"], "bad_algorithm", 3)
    run(1, load + ["--set", "series.defocus=0,10"], "bad_series", 4)
    run(1, load + ["--set", "simulation.potential_file=" + src], "bad_both", 3)
    print("smatrix_file refused for another energy, grid, beams, slicing, too few configurations, no /smatrix "
          "(exit 4), a single run's in a series; multislice, potential_file too (exit 3)")
    run(1, load + ["--set", "sample.tilt_x=2"], "bad_tilt", 3)
    run(1, load + ["--set", "simulation.parametrisation=lobato"], "bad_parametrisation", 3)
    import h5py
    import shutil
    bad = os.path.join(A.workdir, "s1_zero_beam.h5")
    shutil.copy(src, bad)
    with h5py.File(bad, "r+") as f:
        f["smatrix"][2, 3] = 0  # one beam never written
    run(2, phon + ["--set", "simulation.smatrix_file=" + bad], "bad_zero_beam", 4)
    print("smatrix_file refused for another tilt, parametrisation (exit 3), a beam of zeros (exit 4, 2 ranks)")

    env = dict(os.environ, STEMSIM_TEST_FAIL_RANK="1")
    cmd = [A.mpiexec] + A.mpi_flag + ["-np", "2", A.stemsim, A.ini, "--set", "output.file=failed.h5"] + save + \
        ["--set", "compute.fp_groups=2"]
    p = subprocess.run(cmd, cwd=A.workdir, capture_output=True, text=True, timeout=300, env=env)
    if p.returncode == 0:
        raise SystemExit("FAIL the injected failure did not fail the run")
    no_temporaries("after a failed run")
    if glob.glob(os.path.join(A.workdir, "failed.h5*")):
        raise SystemExit("FAIL the failed run left an output")
    print("no S-matrix temporaries left after success or failure")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
