#!/usr/bin/env python3
"""The distributed FFT (ctest label `mpi`): algorithm = hrtem with [compute]
distributed_fft, the wave shared in slabs of rows by the ranks of a group.

  dist_fft.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

- 2, 3 and 4 ranks in one group, and 4 ranks as 2 groups of 2 (frozen phonons over the
  groups), with distributed_fft = on, equal the serial one-rank run to 1e-5 relative RMS
  (exit wave, HRTEM image, total intensity), with 2 thermal configurations, a lens with
  a focal spread and an objective aperture;
- a thinner last slice (slices of 2 Angstrom in the 10.86 Angstrom cell): 3 ranks = 1 rank;
- memory: the plan's estimate per rank falls with the ranks (4 ranks below 0.6 of 1);
  a max_memory that refuses the one-rank plan (exit 5) lets 4 ranks run (auto).
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import sys

import itest

A = None


def run(ranks, extra, name, expect=0):
    return itest.run(A, ranks, extra, name, expect)


def arrays(name):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as f:
        return {k: np.asarray(f[k][()], dtype=float) for k in ("exit_wave", "hrtem", "total_intensity")}


def arrays_of(out, name):
    import numpy as np
    if "distributed FFT" not in out:
        print(out)
        print("FAIL %s: the log does not say the FFT was distributed" % name)
        return {k: np.full(1, np.nan) for k in ("exit_wave", "hrtem", "total_intensity")}
    return arrays(name)


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    import numpy as np
    itest.small_case(A, "dist_fft", name="hrtem.ini", replace=(
        ("algorithm = multislice", "algorithm = hrtem"), ("defocus = 0\n", "defocus = -60\n"),
        ("frozen_phonons = 1", "frozen_phonons = 2"), ("thermal = false", "thermal = true"),
        # the distributed FFT forms the transmission on the run's grid: the serial run does too
        ("potential_radius = 2", "potential_radius = 2\ntransmission_oversampling = 1"),
        ("overwrite = true", "overwrite = true\nsave_exit_wave = true"),
        ("semiangle = 20", "semiangle = 20\nfocal_spread = 20")), append="\n[hrtem]\nobjective_aperture = 40\n")
    run(1, [], "serial")
    ref = arrays("serial")
    bad = 0
    for ranks, groups in ((2, 1), (3, 1), (4, 1), (4, 2)):
        name = "dist_%d_%d" % (ranks, groups)
        out = run(ranks, ["--set", "compute.distributed_fft=on", "--set", "compute.fp_groups=%d" % groups], name)
        if "distributed FFT" not in out:
            print(out)
            print("FAIL %s: the log does not say the FFT was distributed" % name)
            bad += 1
        got = arrays(name)
        for k, v in ref.items():
            err = float(np.sqrt(np.mean((got[k] - v) ** 2) / np.mean(v ** 2)))
            ok = err <= 1e-5
            bad += not ok
            print("%s %d ranks in %d group(s): %s relative RMS %.2e" % ("ok  " if ok else "FAIL", ranks, groups, k, err))
    # a thinner last slice (10.86 Angstrom in slices of 2: the last 0.86 Angstrom, its own propagator
    # on every rank's columns): distributed = serial (the serial one is checked against the
    # closed-form Fresnel propagator in tests/unit/test_slices.c)
    thin = ["--set", "simulation.slice_thickness=2"]
    run(1, thin, "thin_serial")
    ref = arrays("thin_serial")
    got = arrays_of(run(3, thin + ["--set", "compute.distributed_fft=on", "--set", "compute.fp_groups=1"], "thin_dist"),
                    "thin_dist")
    for k, v in ref.items():
        err = float(np.sqrt(np.mean((got[k] - v) ** 2) / np.mean(v ** 2)))
        ok = err <= 1e-5
        bad += not ok
        print("%s 3 ranks, thinner last slice: %s relative RMS %.2e" % ("ok  " if ok else "FAIL", k, err))
    # memory: the plan's estimate per rank, and a limit only the distributed plan fits, on a cell
    # large enough that the buffers, not the process itself (~0.2 GiB of libraries), decide
    big = ["--set", "sample.tile_x=16", "--set", "sample.tile_y=16", "--set", "sample.tile_z=8",
           "--set", "simulation.frozen_phonons=1"]
    est = {}
    for ranks in (1, 4):
        out = run(ranks, big + ["--set", "compute.distributed_fft=on", "--set", "compute.fp_groups=1", "--dry-run"], "dry")
        m = re.search(r"memory per rank\s+([\d.]+) GiB \(runtime ([\d.]+)", out)
        est[ranks] = float(m.group(1))
        est["buffers%d" % ranks] = est[ranks] - float(m.group(2))  # the process itself does not shrink
    print("plan's memory per rank: 1 rank %.4f GiB, 4 ranks %.4f GiB (buffers %.4f and %.4f)" %
          (est[1], est[4], est["buffers1"], est["buffers4"]))
    if not est["buffers4"] < 0.6 * est["buffers1"]:
        print("FAIL the distributed plan does not shrink the memory per rank")
        bad += 1
    limit = big + ["--set", "compute.max_memory=%.6f" % (0.8 * est[1]), "--set", "compute.fp_groups=1"]
    out = run(1, limit, "refused", expect=5)
    out = run(4, limit, "fits")
    if "distributed FFT" not in out:
        print("FAIL 4 ranks under the limit did not distribute the FFT (auto)")
        bad += 1
    print("PASS" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
