#!/usr/bin/env python3
"""[series] and checkpointed campaigns on the distributed FFT (ctest label `campaign;mpi`):
algorithm = hrtem with [compute] distributed_fft = on, each unit's image rows gathered to
its group's leader and checkpointed as whole images.

  dist_campaign.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

- 2 sample tilts x 2 defoci x 2 thermal configurations, a focal spread and the exit wave:
  the campaign on 2 ranks in one group, and on 4 ranks as 2 groups of 2, equals the same
  campaign without the distributed FFT to 1e-5 relative RMS (exit wave, HRTEM image, total
  intensity: what tests/integration/dist_fft.py compares), every point; the tilts differ
  by far more (negative control);
- a thinner last slice (2 Angstrom slices: each tilt's last slice has its own thickness) on
  3 ranks equals the campaign without it;
- a checkpointed plain run (checkpoint = true, no [series]) equals the serial one;
- killed (SIGKILL) after 1 unit and run again: "resuming", and the file equals the
  uninterrupted distributed campaign bit for bit.
Exit: 0 pass, 1 fail, 77 skip.
"""
import glob
import os
import shutil

import itest

A = None
KEYS = ("exit_wave", "hrtem", "total_intensity")
CAMPAIGN = ["--set", "simulation.algorithm=hrtem", "--set", "output.save_exit_wave=true",
            "--set", "series.tilt_x=0,4", "--set", "series.defocus=-30,30", "--set", "simulation.thermal=true",
            "--set", "simulation.frozen_phonons=2", "--set", "probe.focal_spread=20"]
DIST = ["--set", "compute.distributed_fft=on"]
SERIAL = ["--set", "compute.distributed_fft=off"]


def run(ranks, extra, name, expect=0, env=None):
    return itest.run(A, ranks, extra, name, expect, env=env)


def arrays(name):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as f:
        return {k: np.asarray(f[k][()], dtype=float) for k in KEYS}


def close(got, ref, what, tol=1e-5):
    """Every point of every compared dataset within tol relative RMS."""
    import numpy as np
    worst = 0.0
    for k in KEYS:
        if got[k].shape != ref[k].shape:
            raise SystemExit("FAIL %s: %s has shape %s, expected %s" % (what, k, got[k].shape, ref[k].shape))
        err = np.sqrt(np.mean((got[k] - ref[k]) ** 2) / np.mean(ref[k] ** 2))
        worst = max(worst, err)
    if not worst <= tol:
        raise SystemExit("FAIL %s: %.3g relative RMS from the serial campaign (tolerance %g)" % (what, worst, tol))
    print("%s: within %.2e of the serial campaign" % (what, worst))


def identical(a, b, what):
    import h5py
    import numpy as np
    names = []
    with h5py.File(os.path.join(A.workdir, a + ".h5"), "r") as fa, h5py.File(os.path.join(A.workdir, b + ".h5"),
                                                                          "r") as fb:
        fa.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for n in names:
            if n not in fb or not np.array_equal(fa[n][()], fb[n][()]):
                raise SystemExit("FAIL %s: %s differs" % (what, n))
    print("%s: %d datasets bit for bit" % (what, len(names)))


def dist_run(ranks, extra, name, env=None):
    out = run(ranks, extra + DIST, name, env=env)
    if "distributed FFT" not in out:
        print(out)
        raise SystemExit("FAIL %s: the log does not say the FFT was distributed" % name)
    return out


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    import numpy as np
    itest.small_case(A, "dist_campaign", replace=(("defocus = 0\n", ""),
                                                  ("potential_radius = 2",
                                                   "potential_radius = 2\ntransmission_oversampling = 1")))
    for old in glob.glob(os.path.join(A.workdir, "*.h5")):
        os.remove(old)

    run(2, CAMPAIGN + SERIAL + ["--set", "compute.fp_groups=1"], "serial")
    ref = arrays("serial")
    tilts = np.sqrt(np.mean((ref["hrtem"][0] - ref["hrtem"][1]) ** 2) / np.mean(ref["hrtem"][0] ** 2))
    if not tilts > 1e-3:
        raise SystemExit("FAIL the two tilts' images differ by only %.3g" % tilts)
    dist_run(2, CAMPAIGN + ["--set", "compute.fp_groups=1"], "dist2")
    close(arrays("dist2"), ref, "campaign, 2 ranks in one group (the tilts differ by %.2e)" % tilts)
    dist_run(4, CAMPAIGN + ["--set", "compute.fp_groups=2"], "dist4")
    close(arrays("dist4"), ref, "campaign, 4 ranks as 2 groups of 2")

    thin = CAMPAIGN + ["--set", "simulation.slice_thickness=2"]
    run(1, thin + SERIAL, "thin_serial")
    dist_run(3, thin + ["--set", "compute.fp_groups=1"], "thin_dist")
    close(arrays("thin_dist"), arrays("thin_serial"), "thinner last slices, 3 ranks")

    plain = ["--set", "simulation.algorithm=hrtem", "--set", "output.save_exit_wave=true",
             "--set", "output.checkpoint=true", "--set", "simulation.thermal=true",
             "--set", "simulation.frozen_phonons=2", "--set", "compute.fp_groups=1"]
    run(1, plain + SERIAL, "plain_serial")
    dist_run(2, plain, "plain_dist")
    close(arrays("plain_dist"), arrays("plain_serial"), "checkpointed plain run, 2 ranks")

    ckdir = os.path.join(A.workdir, "killed.h5.checkpoint")
    shutil.rmtree(ckdir, ignore_errors=True)
    one = ["--set", "compute.fp_groups=1", "--set", "output.checkpoint_interval=0"]  # a store after every unit
    try:
        dist_run(2, CAMPAIGN + one, "killed", env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
        killed = False
    except SystemExit:
        killed = True
    units = (itest.state_units(ckdir) if os.path.isdir(ckdir) else None) or []
    if not killed or not units or os.path.exists(os.path.join(A.workdir, "killed.h5")):
        raise SystemExit("FAIL kill: the killed campaign finished, stored no unit or left an output")
    out = dist_run(2, CAMPAIGN + one, "killed")
    if "resuming: %d of 4 units done" % len(units) not in out:
        raise SystemExit("FAIL kill: the rerun did not say it resumed %d units" % len(units))
    identical("killed", "dist2", "killed after %d unit(s) and resumed" % len(units))
    print("PASS")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
