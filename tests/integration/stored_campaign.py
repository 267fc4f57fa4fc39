#!/usr/bin/env python3
"""Stored potentials and S-matrices in campaigns (ctest label `campaign;physics;mpi`):
[output] save_potential, save_smatrix and [simulation] potential_file, smatrix_file in a
[series] campaign (2 sample tilts x 2 defoci x 2 thermal configurations, 2 ranks).

  stored_campaign.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

- multislice: the campaign with save_potential equals the campaign without it, and the
  campaign reading that file back (potential_file) equals it too, bit for bit (every
  dataset); /potential_tilts/tilt_1 is the single run's /potential at that tilt bit for bit
  (an independent run), and the tilts' potentials differ.
- prism: the same with save_smatrix and smatrix_file (no transmission functions built);
  /smatrix_tilts/tilt_1 is the single run's /smatrix at that tilt bit for bit; a campaign
  with save_smatrix killed after 1 unit (SIGKILL) and run again resumes and writes the
  same file, S-matrices included, bit for bit; written in the EMD layout, the file keeps
  /smatrix_tilts and a campaign reading it equals the one computed bit for bit.
- Refused (exit 4): the file read by a campaign over other tilts (0, 6 degrees: the
  angle named), over three tilts (the count), a single run's file in a campaign, a
  campaign's file in a single run; nothing is left under the output's name.
Exit: 0 pass, 1 fail, 77 skip.
"""
import glob
import os
import shutil

import itest

A = None
CAMPAIGN = ["--set", "series.tilt_x=0,4", "--set", "series.defocus=-30,30", "--set", "simulation.thermal=true",
            "--set", "simulation.frozen_phonons=2", "--set", "compute.fp_groups=2"]


def run(ranks, extra, name, expect=0, env=None):
    return itest.run(A, ranks, extra, name, expect, env=env)


def datasets(name):
    import h5py
    import numpy as np
    out = {}
    with h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as f:
        f.visititems(lambda k, o: out.__setitem__(k, np.asarray(o[()])) if isinstance(o, h5py.Dataset) else None)
    return out


def same(a, b, what, skip=()):
    """Every dataset of a in b, bit for bit (those whose name holds a string of skip aside)."""
    import numpy as np
    for k, v in a.items():
        if any(s in k for s in skip):
            continue
        if k not in b or v.shape != b[k].shape or not np.array_equal(v, b[k]):
            raise SystemExit("FAIL %s: %s differs" % (what, k))
    print("%s: %d datasets bit for bit" % (what, len([k for k in a if not any(s in k for s in skip)])))


def stored_pair(alg, save_key, file_key, group, single):
    """The campaign plain, saving, reading back; the saved tilt 1 against a single run."""
    import numpy as np
    algo = ["--set", "simulation.algorithm=" + alg]
    run(2, algo + CAMPAIGN, alg + "_plain")
    run(2, algo + CAMPAIGN + ["--set", "output.%s=true" % save_key], alg + "_saved")
    src = os.path.join(A.workdir, alg + "_saved.h5")
    log = run(2, algo + CAMPAIGN + ["--set", "simulation.%s=%s" % (file_key, src)], alg + "_loaded")
    plain, saved, loaded = datasets(alg + "_plain"), datasets(alg + "_saved"), datasets(alg + "_loaded")
    same(plain, saved, "%s campaign with %s = the campaign without" % (alg, save_key), skip=(group,))
    same(plain, loaded, "%s campaign with %s = the campaign computed" % (alg, file_key))
    t0, t1 = saved[group + "/tilt_0"], saved[group + "/tilt_1"]
    if t0.shape[0] != 2 or np.array_equal(t0, t1):
        raise SystemExit("FAIL %s: %s holds %s, the tilts alike" % (alg, group, t0.shape))
    run(1, algo + ["--set", "sample.tilt_x=4", "--set", "probe.defocus=-30", "--set", "simulation.thermal=true",
                   "--set", "simulation.frozen_phonons=2", "--set", "output.%s=true" % save_key], alg + "_single4")
    one = datasets(alg + "_single4")[single]
    if not np.array_equal(one, t1):
        raise SystemExit("FAIL %s: %s/tilt_1 differs from the single run's %s at tilt_x = 4" % (alg, group, single))
    print("%s: %s/tilt_1 = the single run's %s at tilt_x 4, bit for bit" % (alg, group, single))
    return src, log


def kill_resume():
    """save_smatrix: a campaign killed after 1 unit resumes and writes the same file."""
    algo = ["--set", "simulation.algorithm=prism", "--set", "output.save_smatrix=true",
            "--set", "output.checkpoint_interval=0"]  # a store after every round: one before the kill
    ckdir = os.path.join(A.workdir, "killed.h5.checkpoint")
    shutil.rmtree(ckdir, ignore_errors=True)
    rc = None
    try:
        run(2, algo + CAMPAIGN, "killed", env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
        rc = 0
    except SystemExit:
        rc = 1
    units = (itest.state_units(ckdir) if os.path.isdir(ckdir) else None) or []
    if rc == 0 or not units or os.path.exists(os.path.join(A.workdir, "killed.h5")):
        raise SystemExit("FAIL kill: the killed campaign finished, stored no unit or left an output")
    print("killed: the state holds units %s; the checkpoint: %s" % (units, sorted(os.listdir(ckdir))))
    log = run(2, algo + CAMPAIGN, "killed")
    if "resuming: %d of 4 units done" % len(units) not in log:
        raise SystemExit("FAIL kill: the rerun did not say it resumed %d units" % len(units))
    same(datasets("prism_saved"), datasets("killed"), "prism save_smatrix killed after %d unit(s) and resumed"
         % len(units))


def blend_refused(pot):
    """potential_file: a campaign killed after 1 unit, its stored file then rewritten from another model
    (one Si site made Ge: the same cell, grid and keys), is refused at the rerun, naming the stored
    file, and publishes nothing; before, it resumed and published a blend of the two models
    (63% off) with complete = 1. (Issue 38 item 4.)"""
    stored = os.path.join(A.workdir, "blend_stored.h5")
    shutil.copy(pot, stored)
    base = ["--set", "simulation.algorithm=multislice", "--set", "simulation.potential_file=" + stored,
            "--set", "output.checkpoint_interval=0"]
    shutil.rmtree(os.path.join(A.workdir, "blend.h5.checkpoint"), ignore_errors=True)
    try:
        run(2, base + CAMPAIGN, "blend", env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
        raise SystemExit("FAIL blend: the killed campaign finished")
    except SystemExit as e:
        if "killed campaign finished" in str(e):
            raise
    lines = open(os.path.join(A.repo, "data", "Si100_unitcell.xyz")).read().splitlines()
    lines[2] = lines[2].replace("14", "32", 1)  # one site Ge: another model, the same cell
    ge = os.path.join(A.workdir, "SiGe_unitcell.xyz")
    open(ge, "w").write("\n".join(lines) + "\n")
    run(2, ["--set", "simulation.algorithm=multislice", "--set", "output.save_potential=true", "--set",
            "sample.xyz=" + ge] + CAMPAIGN, "blend_other")
    shutil.copy(os.path.join(A.workdir, "blend_other.h5"), stored)
    out = run(2, base + CAMPAIGN, "blend", 3)
    if "potential_file" not in out or os.path.exists(os.path.join(A.workdir, "blend.h5")):
        raise SystemExit("FAIL blend: the refusal does not name the stored file, or an output was published")
    print("a campaign whose potential_file was rewritten from another model while it was stopped: refused")


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    itest.small_case(A, "stored_campaign", replace=(("defocus = 0\n", ""),))
    for old in glob.glob(os.path.join(A.workdir, "*.h5")):
        os.remove(old)

    pot, _ = stored_pair("multislice", "save_potential", "potential_file", "potential_tilts", "potential")
    smat, log = stored_pair("prism", "save_smatrix", "smatrix_file", "smatrix_tilts", "smatrix")
    if "transmission" in log.split("time per phase")[-1]:
        raise SystemExit("FAIL smatrix_file in a campaign: it still built transmission functions")
    kill_resume()
    blend_refused(pot)
    emd = ["--set", "simulation.algorithm=prism"] + CAMPAIGN
    run(2, emd + ["--set", "output.save_smatrix=true", "--set", "output.layout=emd"], "prism_emd")
    run(2, emd + ["--set", "simulation.smatrix_file=" + os.path.join(A.workdir, "prism_emd.h5")], "prism_emd_loaded")
    same(datasets("prism_plain"), datasets("prism_emd_loaded"), "prism campaign reading an EMD file's /smatrix_tilts")

    for key, src, alg, single in (("potential_file", pot, "multislice", "multislice_single4"),
                                  ("smatrix_file", smat, "prism", "prism_single4")):
        base = ["--set", "simulation.algorithm=" + alg, "--set", "simulation.%s=%s" % (key, src)]
        other = [a.replace("series.tilt_x=0,4", "series.tilt_x=0,6") for a in CAMPAIGN]
        out = run(2, base + other, "bad_angle", 4)
        if "tilt_x_deg" not in out:
            raise SystemExit("FAIL %s over other tilts: the refusal does not name the angle" % key)
        three = [a.replace("series.tilt_x=0,4", "series.tilt_x=0,4,8") for a in CAMPAIGN]
        out = run(2, base + three, "bad_count", 4)
        if "stores 2 sample tilts, this campaign has 3" not in out:
            raise SystemExit("FAIL %s over three tilts: the refusal does not name the count" % key)
        single_src = os.path.join(A.workdir, single + ".h5")
        run(2, ["--set", "simulation.algorithm=" + alg, "--set", "simulation.%s=%s" % (key, single_src)] + CAMPAIGN,
            "bad_single_in_campaign", 4)
        run(1, base + ["--set", "simulation.thermal=true", "--set", "simulation.frozen_phonons=2"],
            "bad_campaign_in_single", 4)
        left = [n for n in ("bad_angle", "bad_count", "bad_single_in_campaign", "bad_campaign_in_single")
                if os.path.exists(os.path.join(A.workdir, n + ".h5"))]
        if left:
            raise SystemExit("FAIL refused runs left outputs: %s" % left)
        print("%s refused (exit 4): other tilts, three tilts, a single run's file in a campaign and back" % key)
    print("PASS")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
