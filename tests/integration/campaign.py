#!/usr/bin/env python3
"""Campaign tests (ctest label `campaign`): [series] campaigns with checkpoints.
One scenario per call:

  campaign.py SCENARIO --stemsim BIN --mpiexec BIN [--mpi-flag F ...]
              --config small.ini --workdir DIR [--algorithm multislice|prism]

Scenarios (the case: 3 tilts x 2 defoci x 2 frozen-phonon configurations, 2 ranks):
  equals_single  the campaign's every point equals the same point run alone with
                 the single-run keys ([sample] tilt_x, [probe] C10) to 1e-6, standard
                 errors included; the output has the leading axes and their values
  kill_resume    the job killed (SIGKILL) after 0, 1 and 4 of 6 units, then run
                 again: "resuming", and the file (standard errors included) equals the
                 uninterrupted run bit for bit; the same after a kill in the middle of a
                 checkpoint write
  signals        SIGTERM, then SIGUSR1, to every rank mid-campaign (as Slurm's --signal and
                 preemption deliver them): exit 75, a valid partial checkpoint, the
                 rerun resumes and equals the uninterrupted run bit for bit
  owned          a held lock refuses a second campaign (also --restart), a link planted
                 as a temporary is refused and its target kept, --restart keeps files
                 that are not the checkpoint's (unit_cell.xyz)
  damaged        a unit file with a flipped byte: refused by name (exit 6), nothing
                 deleted; after removing that file the run completes and is exact
  changed_key    a key changed between runs is refused naming it (exit 3);
                 --restart starts over and completes
  ranks          1 rank and 3 ranks give the 2-rank result to 1e-6
  depths         [output] depths with a defocus series: the point at each depth equals a
                 single run of a sample cut at that depth (tile_z = 1, 2) to 1e-6
                 (multislice) or bit for bit (PRISM: its S-matrix recorded at each
                 depth); with tilts and configurations, a run killed after 1 unit
                 resumes and equals the uninterrupted one bit for bit. PRISM also: 1
                 and 3 ranks, and 4 as 2 nodes of 2, equal 2 ranks bit for bit; f = 1
                 equals multislice at
                 every depth to 1e-4; the plan counts an S-matrix per depth (dry-run
                 estimates) and a max_memory between them refuses the depths (exit 5)
  usable         the same campaign through another path to its config resumes; --dry-run says
                 what a rerun does (resume k of n, --restart, a changed key, a held lock) with
                 the real run's exit code and changes nothing
  beam_tilts     (--algorithm hrtem) [series] beam_tilt_x/_y with sample tilts and defoci:
                 the axes hold the tilts rounded to the cell's plane waves, every point
                 equals the single run with [probe] beam_tilt_x/_y at that value to
                 1e-6, different tilts differ; refused (exit 3): with multislice, two
                 values on one plane wave, [probe] beam_tilt_x given as well
Exit: 0 pass, 1 fail, 77 skip.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

A = None
WORST = [0.0]  # the largest relative difference a tolerance compare saw (logged)
TILTS = [0.0, 4.0, 8.0]
DEFOCI = [-30.0, 30.0]


def log(msg):
    print(msg, flush=True)


def command(ranks, config, extra):
    base = [A.stemsim] if ranks == 1 else [A.mpiexec] + A.mpi_flag + ["-np", str(ranks), A.stemsim]
    return base + [config] + extra


def run(ranks, config, extra=(), env=None, timeout=300):
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run(command(ranks, config, list(extra)), cwd=A.workdir, env=full_env, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def write_config(name, series=True, extra=""):
    """The small case with frozen phonons, and the series unless series=False."""
    text = open(A.config).read()
    here = os.path.dirname(os.path.abspath(A.config))
    text = text.replace("xyz = ../../data/", "xyz = " + os.path.join(here, "..", "..", "data") + "/")
    text = text.replace("defocus = 0\n", "")
    text = text.replace("frozen_phonons = 1", "frozen_phonons = 2").replace("thermal = false", "thermal = true")
    text = text.replace("algorithm = multislice", "algorithm = " + A.algorithm)
    text = text.replace("file = small.h5", "file = %s.h5" % name)
    if series:
        text += "\n[series]\ntilt_x = 0:4:8\ndefocus = %s\n" % " ".join("%g" % d for d in DEFOCI)
    text += extra
    path = os.path.join(A.workdir, name + ".ini")
    with open(path, "w") as f:
        f.write(text)
    return path


def datasets(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
        out["@complete"] = f.attrs.get("complete")
    return out


def compare(a, b, what, tol=0.0):
    import numpy as np
    bad = 0
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            log("FAIL %s: dataset %s only in one file" % (what, k))
            bad += 1
            continue
        x, y = np.asarray(a[k], dtype=float), np.asarray(b[k], dtype=float)
        if x.shape != y.shape:
            log("FAIL %s: %s shapes %s vs %s" % (what, k, x.shape, y.shape))
            bad += 1
            continue
        if tol == 0.0:
            if not np.array_equal(x, y):
                log("FAIL %s: %s differs (max |diff| %.3g), expected bit-identical" % (what, k, np.max(np.abs(x - y))))
                bad += 1
        else:
            scale = max(np.max(np.abs(y)), 1e-300)
            err = np.max(np.abs(x - y)) / scale if x.size else 0.0
            WORST[0] = max(WORST[0], err)
            if not err <= tol:
                log("FAIL %s: %s relative max difference %.3g > %.1g" % (what, k, err, tol))
                bad += 1
    return bad


def fresh(name):
    for p in (name + ".h5", name + ".h5.checkpoint"):
        full = os.path.join(A.workdir, p)
        if os.path.isdir(full):
            shutil.rmtree(full)
        elif os.path.exists(full):
            os.remove(full)


def reference(name="reference"):
    """The uninterrupted 2-rank campaign (computed once per workdir and algorithm)."""
    path = os.path.join(A.workdir, name + ".h5")
    if not os.path.exists(path):
        fresh(name)
        cfg = write_config(name)
        rc, out = run(2, cfg)
        if rc != 0:
            log(out)
            raise SystemExit("FAIL the uninterrupted campaign exited %d" % rc)
    return datasets(path)


def has_errors(ref, what):
    """The campaign keeps each point's standard errors over its configurations (leading axes too)."""
    want = ["standard_error/images/HAADF", "standard_error/rings", "standard_error/dpc_com_x", "standard_error/total_intensity"]
    missing = [k for k in want if k not in ref or ref[k].shape[:2] != (3, 2)]
    if missing:
        log("FAIL %s: standard errors missing or without the series axes: %s" % (what, missing))
    return 1 if missing else 0


def scenario_equals_single():
    import numpy as np
    ref = reference()
    bad = has_errors(ref, "equals_single")
    if list(ref["axes/tilt_x"]) != TILTS or list(ref["axes/defocus"]) != DEFOCI:
        log("FAIL axes: tilt_x %s defocus %s" % (ref["axes/tilt_x"], ref["axes/defocus"]))
        bad += 1
    for i, tilt in enumerate(TILTS):
        for j, df in enumerate(DEFOCI):
            name = "single_%d_%d" % (i, j)
            fresh(name)
            cfg = write_config(name, series=False)
            rc, out = run(2, cfg, ["--set", "sample.tilt_x=%g" % tilt, "--set", "probe.C10=%g" % df])
            if rc != 0:
                log(out)
                return 1
            single = datasets(os.path.join(A.workdir, name + ".h5"))
            point = {k: (v[i, j] if not k.startswith("axes/") and k != "@complete" else v) for k, v in ref.items()
                     if k not in ("axes/tilt_x", "axes/defocus")}
            bad += compare(point, single, "point (tilt %g, defocus %g)" % (tilt, df), tol=1e-6)
    if ref["images/HAADF"].shape[:2] != (3, 2):
        log("FAIL /images/HAADF shape %s, expected (3, 2, ny, nx)" % (ref["images/HAADF"].shape,))
        bad += 1
    # the points differ from each other: a campaign that repeated one point would fail above
    if np.array_equal(ref["images/BF"][0, 0], ref["images/BF"][2, 1]):
        log("FAIL different points gave the same BF image")
        bad += 1
    return 1 if bad else 0


def scenario_kill_resume():
    ref = reference()
    bad = has_errors(ref, "kill_resume")  # compared bit for bit below with everything else
    for tag, env in (("after0", {"STEMSIM_TEST_KILL_AFTER_UNITS": "0"}),
                     ("after1", {"STEMSIM_TEST_KILL_AFTER_UNITS": "1"}),
                     ("after4", {"STEMSIM_TEST_KILL_AFTER_UNITS": "4"}),
                     ("inwrite", {"STEMSIM_TEST_KILL_IN_CHECKPOINT": "3"})):
        name = "kill_" + tag
        fresh(name)
        cfg = write_config(name)
        rc, out = run(2, cfg, env=env)
        if rc == 0 or os.path.exists(os.path.join(A.workdir, name + ".h5")):
            log("FAIL %s: the killed run exited %d or left an output" % (tag, rc))
            bad += 1
            continue
        units = [f for f in os.listdir(os.path.join(A.workdir, name + ".h5.checkpoint")) if f.startswith("unit_")]
        log("%s: killed with exit %d, checkpoint holds %s" % (tag, rc, sorted(units)))
        rc, out = run(2, cfg, ["--set", "output.overwrite=false"])
        if rc != 0:
            log(out)
            log("FAIL %s: the rerun exited %d" % (tag, rc))
            bad += 1
            continue
        done = len([u for u in units if not u.endswith(".tmp")])
        if done and "resuming: %d of 6 units done" % done not in out:
            log(out)
            log("FAIL %s: the rerun did not say it resumed %d units" % (tag, done))
            bad += 1
        bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, tag)
        if os.path.exists(os.path.join(A.workdir, name + ".h5.checkpoint")):
            log("FAIL %s: the checkpoint was not removed after the output was published" % tag)
            bad += 1
    return 1 if bad else 0


def rank_pids(parent):
    """stemsim processes started by mpiexec (its children)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % entry).read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if comm == "stemsim" and int(rest[1]) == parent:
            pids.append(int(entry))
    return pids


def scenario_signals():
    ref = reference()
    bad = 0
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        name = "signal_" + sig.name
        fresh(name)
        cfg = write_config(name)
        env = dict(os.environ, STEMSIM_TEST_UNIT_DELAY="1")
        p = subprocess.Popen(command(2, cfg, []), cwd=A.workdir, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        ckpt = os.path.join(A.workdir, name + ".h5.checkpoint")
        deadline = time.time() + 120
        while time.time() < deadline:
            if os.path.isdir(ckpt) and any(f.startswith("unit_") and not f.endswith(".tmp") for f in os.listdir(ckpt)):
                break
            time.sleep(0.05)
        for pid in rank_pids(p.pid):
            os.kill(pid, sig)
        out = p.communicate(timeout=120)[0]
        units = sorted(f for f in os.listdir(ckpt) if f.startswith("unit_"))
        log("%s: exit %d, checkpoint holds %s" % (sig.name, p.returncode, units))
        if p.returncode != 75 or "run the same command again" not in out:
            log(out)
            log("FAIL %s: exit %d, expected 75 (stopped, checkpoint kept)" % (sig.name, p.returncode))
            bad += 1
        if not units or len(units) >= 6 or any(u.endswith(".tmp") for u in units):
            log("FAIL %s: expected a partial checkpoint of whole units" % sig.name)
            bad += 1
        rc, out = run(2, cfg)
        if rc != 0 or "resuming: %d of 6 units done" % len(units) not in out:
            log(out)
            log("FAIL %s: the rerun exited %d or did not say it resumed" % (sig.name, rc))
            bad += 1
            continue
        bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, sig.name)
    return 1 if bad else 0


def scenario_damaged():
    ref = reference()
    name = "damaged"
    fresh(name)
    cfg = write_config(name)
    run(2, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "3"})
    ckpt = os.path.join(A.workdir, name + ".h5.checkpoint")
    units = sorted(f for f in os.listdir(ckpt) if f.startswith("unit_") and not f.endswith(".tmp"))
    if not units:
        log("FAIL damaged: no unit was stored before the kill")
        return 1
    victim = os.path.join(ckpt, units[0])
    with open(victim, "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xFF]))
    before = sorted(os.listdir(ckpt))
    rc, out = run(2, cfg)
    bad = 0
    if rc != 6 or units[0] not in out or "damaged" not in out:
        log(out)
        log("FAIL damaged: exit %d, expected 6 naming %s" % (rc, units[0]))
        bad += 1
    if sorted(os.listdir(ckpt)) != before:
        log("FAIL damaged: the refusal changed the checkpoint")
        bad += 1
    os.remove(victim)
    rc, out = run(2, cfg)
    if rc != 0:
        log(out)
        log("FAIL damaged: after removing the damaged unit the run exited %d" % rc)
        return 1
    bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, "damaged")
    return 1 if bad else 0


def scenario_changed_key():
    name = "changed"
    fresh(name)
    cfg = write_config(name)
    run(2, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "2"})
    rc, out = run(2, cfg, ["--set", "probe.semiangle=21"])
    bad = 0
    if rc != 3 or "semiangle" not in out or "--restart" not in out:
        log(out)
        log("FAIL changed key: exit %d, expected 3 naming semiangle and --restart" % rc)
        bad += 1
    rc, out = run(2, cfg, ["--set", "compute.threads=2"])  # placement only: resumes
    if rc != 0 or "resuming" not in out:
        log(out)
        log("FAIL changed threads: exit %d, expected a resumed run" % rc)
        bad += 1
    fresh(name)
    run(2, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "2"})
    rc, out = run(2, cfg, ["--set", "probe.semiangle=21", "--restart"])
    if rc != 0 or "resuming" in out:
        log(out)
        log("FAIL --restart: exit %d" % rc)
        bad += 1
    return 1 if bad else 0


def scenario_fft_plans():
    """A checkpoint keeps the FFT plans its units were computed with (fft_plans); resumed under
    other plans (another CPU or wisdom cache: here a changed note) the run finishes, warned that
    its units mix two sets of plans; the note goes with the checkpoint."""
    name = "plans"
    fresh(name)
    cfg = write_config(name)
    run(2, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "2"})
    note = os.path.join(A.workdir, name + ".h5.checkpoint", "fft_plans")
    bad = 0
    if not os.path.isfile(note):
        log("FAIL the checkpoint holds no fft_plans note")
        return 1
    rc, out = run(2, cfg)  # the same plans: no warning
    if rc != 0 or "resuming" not in out or "other FFT plans" in out:
        log(out)
        log("FAIL a resume under the same plans: exit %d, or warned" % rc)
        bad += 1
    fresh(name)
    run(2, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "2"})
    with open(note, "w") as f:
        f.write("wisdom 0123456789abcdef (another machine)\n")
    rc, out = run(2, cfg)
    if rc != 0 or "resuming" not in out or "other FFT plans" not in out:
        log(out)
        log("FAIL a resume under other plans: exit %d, expected 0 with the warning" % rc)
        bad += 1
    if os.path.exists(os.path.join(A.workdir, name + ".h5.checkpoint")):
        log("FAIL the checkpoint (with its fft_plans note) was not removed after the output was published")
        bad += 1
    return 1 if bad else 0


def scenario_ranks():
    ref = reference()
    bad = 0
    for ranks in (1, 3):
        name = "ranks%d" % ranks
        fresh(name)
        rc, out = run(ranks, write_config(name))
        if rc != 0:
            log(out)
            return 1
        bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, "%d ranks" % ranks, tol=1e-6)
    return 1 if bad else 0


def scenario_depths():
    import numpy as np
    bad = 0
    prism = A.algorithm == "prism"
    # a PRISM plane is the S-matrix after the same slices as the cut sample's exit: the same bits
    tol = 0.0 if prism else 1e-6
    depths = [5.43, 10.86, 16.29]  # 2, 4 and 6 slices of 2.715: one, two and three unit cells
    name = "depths"
    fresh(name)
    cfg = write_config(name, series=False, extra="\n[series]\ndefocus = %s\n" % " ".join("%g" % d for d in DEFOCI))
    cold = ["--set", "simulation.thermal=false", "--set", "simulation.frozen_phonons=1"]
    at_depths = cold + ["--set", "sample.tile_z=3", "--set", "output.depths=%s" % " ".join(map(str, depths))]
    rc, out = run(2, cfg, at_depths)
    if rc != 0:
        log(out)
        return 1
    ref = datasets(os.path.join(A.workdir, name + ".h5"))
    if not np.allclose(ref["axes/depth"], depths, rtol=1e-12) or ref["images/HAADF"].shape[:2] != (2, 3):
        log("FAIL depth axis %s, HAADF shape %s (expected 2 defoci x 3 depths)" % (ref["axes/depth"],
                                                                                   ref["images/HAADF"].shape))
        bad += 1
    for j, df in enumerate(DEFOCI):
        for k in range(3):
            single = "depth_single_%d_%d" % (j, k)
            fresh(single)
            rc, out = run(2, write_config(single, series=False),
                          cold + ["--set", "sample.tile_z=%d" % (k + 1), "--set", "probe.C10=%g" % df])
            if rc != 0:
                log(out)
                return 1
            point = {key: (v[j, k] if not key.startswith("axes/") and key != "@complete" else v)
                     for key, v in ref.items() if key not in ("axes/defocus", "axes/depth")}
            bad += compare(point, datasets(os.path.join(A.workdir, single + ".h5")),
                           "depth %g (defocus %g) vs a %d-cell sample" % (depths[k], df, k + 1), tol=tol)
    if np.array_equal(ref["images/HAADF"][0, 0], ref["images/HAADF"][0, 2]):
        log("FAIL the first and last depths gave the same HAADF image")
        bad += 1
    if prism:
        bad += prism_depths_ranks(cfg, at_depths, ref)
        bad += prism_depths_f1(cfg, at_depths)
        bad += prism_depths_memory(cfg, cold)
    # with tilts and configurations: kill after 1 of 6 units, resume, compare with the uninterrupted run
    hot = ["--set", "sample.tile_z=3", "--set", "output.depth_every=1"]
    full, killed = "depths_full", "depths_killed"
    for n in (full, killed):
        fresh(n)
    rc, out = run(2, write_config(full), hot)
    if rc != 0:
        log(out)
        return 1
    rc, out = run(2, write_config(killed), hot, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    # both groups may pass the kill check before either has counted its unit: 1 or 2 stored
    ckdir = os.path.join(A.workdir, killed + ".h5.checkpoint")
    done = len([u for u in os.listdir(ckdir) if u.startswith("unit_") and not u.endswith(".tmp")]) \
        if os.path.isdir(ckdir) else 0
    rc2, out2 = run(2, write_config(killed), hot)
    if rc == 0 or rc2 != 0 or not done or "resuming: %d of 6 units done" % done not in out2:
        log(out + out2)
        log("FAIL depths kill/resume: exits %d then %d" % (rc, rc2))
        return 1
    a, b = datasets(os.path.join(A.workdir, killed + ".h5")), datasets(os.path.join(A.workdir, full + ".h5"))
    bad += compare(a, b, "depths resumed")
    log("depth_every = 1 with 3 tilts: depths %s, HAADF %s" % (b["axes/depth"], b["images/HAADF"].shape))
    return 1 if bad else 0


def prism_depths_ranks(cfg, at_depths, ref):
    """PRISM depths on 1 and 3 ranks (beams and probes split otherwise, the S-matrix of every
    plane gathered over 3 ranks) give the 2-rank file bit for bit; so do 4 ranks as 2 nodes of 2
    ([debug] ranks_per_node: node-shared S-matrices exchanged between nodes, each node's ranks
    arranging each plane into one shared copy that no rank may replace while another reads it)."""
    bad = 0
    nodes = ["--set", "debug.ranks_per_node=2", "--set", "compute.fp_groups=1"]
    for ranks, extra in ((1, []), (3, []), (4, nodes)):
        rc, out = run(ranks, cfg, at_depths + extra + ["--set", "output.file=depths_np%d.h5" % ranks])
        if rc != 0:
            log(out)
            return 1
        bad += compare(datasets(os.path.join(A.workdir, "depths_np%d.h5" % ranks)), ref, "depths on %d ranks" % ranks)
    return bad


def prism_depths_f1(cfg, at_depths):
    """PRISM with f = 1 keeps every plane wave and a window of the whole cell: at every depth
    the same linear map as multislice, equal to float rounding (1e-4 of each dataset's largest value)."""
    f1 = at_depths + ["--set", "simulation.interpolation_x=1", "--set", "simulation.interpolation_y=1"]
    got = {}
    for alg in ("prism", "multislice"):
        rc, out = run(2, cfg, f1 + ["--set", "simulation.algorithm=" + alg, "--set", "output.file=depths_f1_%s.h5" % alg])
        if rc != 0:
            log(out)
            return 1
        got[alg] = datasets(os.path.join(A.workdir, "depths_f1_%s.h5" % alg))
    WORST[0] = 0.0
    bad = compare(got["prism"], got["multislice"], "PRISM f = 1 vs multislice at 3 depths", tol=1e-4)
    log("PRISM f = 1 vs multislice at every depth: largest relative difference %.2e (tolerance 1e-4)" % WORST[0])
    return bad


def prism_depths_memory(cfg, cold):
    """The plan counts one S-matrix per depth ((n + 1) S-matrices where a single run holds 2): a
    max_memory between the two estimates runs the exit surface alone and refuses the depths
    (exit 5, naming the S-matrix) before anything is allocated."""
    import re
    base = cold + ["--set", "sample.tile_z=3", "--set", "simulation.interpolation_x=1",
                   "--set", "simulation.interpolation_y=1", "--dry-run"]
    every = ["--set", "output.depth_every=1"]  # 6 depths: 7 S-matrices
    est = {}
    for tag, extra in (("exit", ["--set", "output.checkpoint=true"]), ("depths", every)):
        rc, out = run(1, cfg, base + extra)
        m = re.search(r"memory per rank\s+([\d.]+) GiB .*S-matrix ([\d.]+)", out)
        if rc != 0 or not m:
            log(out)
            log("FAIL dry run (%s) exited %d without the memory estimate" % (tag, rc))
            return 1
        est[tag] = (float(m.group(1)), float(m.group(2)))
    log("plan per rank: exit surface %.3f GiB (S-matrix %.3f), 6 depths %.3f GiB (S-matrix %.3f)" %
        (est["exit"] + est["depths"]))
    bad = 0
    if not abs(est["depths"][1] - 3.5 * est["exit"][1]) <= 0.003:  # GiB printed to 3 decimals
        log("FAIL the S-matrix estimate with 6 depths is not 7/2 of the single one")
        bad += 1
    limit = ["--set", "compute.max_memory=%.6f" % ((est["exit"][0] + est["depths"][0]) / 2)]
    rc, out = run(1, cfg, base + ["--set", "output.checkpoint=true"] + limit)
    if rc != 0:
        log(out)
        log("FAIL the exit-surface plan under the limit exited %d" % rc)
        bad += 1
    rc, out = run(1, cfg, base + every + limit)
    if rc != 5 or "S-matrix" not in out or "depths" not in out:
        log(out)
        log("FAIL the depths plan over the limit: exit %d, expected 5 naming the S-matrix and the depths" % rc)
        bad += 1
    return bad


def wavelength(kev):
    """Relativistic electron wavelength in Angstrom (independent of stemsim's own)."""
    import math
    h, m0, e, c = 6.62607015e-34, 9.1093837015e-31, 1.602176634e-19, 299792458.0
    ev = kev * 1e3 * e
    return h / math.sqrt(2 * m0 * ev * (1 + ev / (2 * m0 * c * c))) * 1e10


def scenario_beam_tilts():
    import numpy as np
    bad = 0
    given_x, given_y, tilts = [-10.0, 0.0, 7.3], [0.0, 5.0], [0.0, 4.0]
    series = "\n[series]\ntilt_x = %s\nbeam_tilt_x = %s\nbeam_tilt_y = %s\ndefocus = %s\n" % tuple(
        " ".join("%g" % v for v in vals) for vals in (tilts, given_x, given_y, DEFOCI))
    name = "beam_tilts"
    fresh(name)
    extra = ["--set", "output.save_exit_wave=true"]
    rc, out = run(2, write_config(name, series=False, extra=series), extra)
    if rc != 0:
        log(out)
        return 1
    ref = datasets(os.path.join(A.workdir, name + ".h5"))
    # the plane waves of the 10.86 Angstrom cell (2 x 5.43) are lambda / L apart
    spacing = wavelength(200) / 10.86 * 1e3
    want_x = [round(v / spacing) * spacing for v in given_x]
    want_y = [round(v / spacing) * spacing for v in given_y]
    if not (np.allclose(ref["axes/beam_tilt_x"], want_x, rtol=1e-9, atol=1e-9) and
            np.allclose(ref["axes/beam_tilt_y"], want_y, rtol=1e-9, atol=1e-9)):
        log("FAIL beam tilt axes %s %s, expected %s %s" % (ref["axes/beam_tilt_x"], ref["axes/beam_tilt_y"], want_x,
                                                           want_y))
        bad += 1
    if "rounded to" not in out:
        log("FAIL the rounding of -10 mrad onto the grid was not reported")
        bad += 1
    if ref["hrtem"].shape[:4] != (2, 3, 2, 2):
        log("FAIL /hrtem shape %s, expected (2 tilts, 3, 2 beam tilts, 2 defoci, ...)" % (ref["hrtem"].shape,))
        return 1
    axes = ("axes/tilt_x", "axes/beam_tilt_x", "axes/beam_tilt_y", "axes/defocus")
    for i, tilt in enumerate(tilts):
        for jx, bx in enumerate(want_x):
            for jy, by in enumerate(want_y):
                for k, df in enumerate(DEFOCI):
                    single = "beam_single_%d_%d_%d_%d" % (i, jx, jy, k)
                    fresh(single)
                    rc, out = run(2, write_config(single, series=False), extra + [
                        "--set", "sample.tilt_x=%r" % tilt, "--set", "probe.beam_tilt_x=%r" % bx,
                        "--set", "probe.beam_tilt_y=%r" % by, "--set", "probe.C10=%r" % df])
                    if rc != 0:
                        log(out)
                        return 1
                    point = {key: (v[i, jx, jy, k] if not key.startswith("axes/") and key != "@complete" else v)
                             for key, v in ref.items() if key not in axes}
                    bad += compare(point, datasets(os.path.join(A.workdir, single + ".h5")),
                                   "tilt %g, beam tilt (%.3f, %.3f) mrad, defocus %g" % (tilt, bx, by, df), tol=1e-6)
    if np.allclose(ref["exit_wave"][0, 0, 0, 0], ref["exit_wave"][0, 2, 1, 0]):
        log("FAIL two beam tilts gave the same exit wave")
        bad += 1
    refusals = (("multislice", ["--set", "simulation.algorithm=multislice"], series, "hrtem"),
                ("one plane wave", [], series.replace("beam_tilt_x = -10", "beam_tilt_x = -10 -9.5"), "same plane wave"),
                ("probe key too", ["--set", "probe.beam_tilt_x=2"], series, "give one"))
    for what, sets, text, says in refusals:
        fresh("refused")
        rc, out = run(1, write_config("refused", series=False, extra=text), sets)
        if rc != 3 or says not in out:
            log(out)
            log("FAIL %s: exit %d, expected 3 with '%s'" % (what, rc, says))
            bad += 1
    return 1 if bad else 0


def scenario_owned():
    """A checkpoint belongs to one campaign: a held lock refuses a second one; a link planted
    under a temporary's name is refused and its target left alone; --restart removes only the
    checkpoint's own files (a model called unit_cell.xyz beside them stays); a unit replaced
    after the campaign opened is refused when read back."""
    import fcntl
    bad = 0
    name = "owned"
    fresh(name)
    cfg = write_config(name)
    ckpt = os.path.join(A.workdir, name + ".h5.checkpoint")
    rc, out = run(1, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    units = sorted(f for f in os.listdir(ckpt) if f.startswith("unit_"))
    if rc == 0 or not units:
        log(out)
        log("FAIL owned: the killed run left no unit (exit %d)" % rc)
        return 1
    # 1. another campaign holds the directory (the test takes its lock)
    with open(os.path.join(ckpt, "stemsim.lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = sorted(os.listdir(ckpt))
        rc, out = run(1, cfg)
        if rc != 6 or "in use by another running campaign" not in out or sorted(os.listdir(ckpt)) != before:
            log(out)
            log("FAIL owned: with the lock held elsewhere exit %d, expected 6 and the checkpoint untouched" % rc)
            bad += 1
        rc, out = run(1, cfg, extra=["--restart"])
        if rc != 6 or sorted(os.listdir(ckpt)) != before:
            log(out)
            log("FAIL owned: --restart with the lock held elsewhere: exit %d, expected 6 and nothing removed" % rc)
            bad += 1
    # 2. a link planted as a unit's temporary: refused, its target unchanged
    victim = os.path.join(A.workdir, "victim.txt")
    with open(victim, "w") as f:
        f.write("not stemsim's\n")
    link = os.path.join(ckpt, "unit_%07d.tmp" % 5)
    os.symlink(victim, link)
    rc, out = run(1, cfg)
    if rc != 6 or "not a regular file" not in out or open(victim).read() != "not stemsim's\n" or not os.path.islink(link):
        log(out)
        log("FAIL owned: a planted link: exit %d, expected 6 with the link and its target left alone" % rc)
        bad += 1
    if os.path.lexists(link):  # the old code removed it (a file it did not create)
        os.remove(link)
    # 3. --restart removes only the checkpoint's own names; the finished campaign too
    fresh(name)
    run(1, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    keep = os.path.join(ckpt, "unit_cell.xyz")
    with open(keep, "w") as f:
        f.write("a model\n")
    rc, out = run(1, cfg, extra=["--restart"], env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    if not os.path.exists(keep):
        log(out)
        log("FAIL owned: --restart deleted unit_cell.xyz")
        bad += 1
    rc, out = run(1, cfg)
    if rc != 0 or not os.path.exists(keep):
        log(out)
        log("FAIL owned: the campaign beside unit_cell.xyz: exit %d, the file %s" % (rc, "kept" if os.path.exists(keep) else "removed"))
        bad += 1
    log("owned: %s" % ("ok" if not bad else "%d failures" % bad))
    return 1 if bad else 0


def scenario_usable():
    """A checkpoint a user can live with: the same campaign reached through another path to its
    config (or another model path to the same model) resumes instead of being refused; --dry-run
    says what a rerun would do (resume k of n units, --restart, a changed key, a held lock) with
    the real run's exit code, and changes nothing in the checkpoint; the rerun then equals the
    uninterrupted campaign bit for bit."""
    import fcntl
    ref = reference()
    bad = 0
    name = "usable"
    fresh(name)
    sub = os.path.join(A.workdir, "sub")
    os.makedirs(sub, exist_ok=True)
    text = open(write_config(name)).read()
    here = os.path.join(os.path.dirname(os.path.abspath(A.config)), "..", "..", "data")
    text = text.replace("xyz = " + here + "/", "xyz = " + os.path.relpath(here, sub) + "/")  # relative to the config
    text = text.replace("file = %s.h5" % name, "file = " + os.path.join(A.workdir, name + ".h5"))
    with open(os.path.join(sub, name + ".ini"), "w") as f:
        f.write(text)
    rel, absolute = os.path.join("sub", name + ".ini"), os.path.join(sub, name + ".ini")
    ckpt = os.path.join(A.workdir, name + ".h5.checkpoint")
    rc, out = run(2, rel, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "2"})
    units = sorted(f for f in os.listdir(ckpt) if f.startswith("unit_") and not f.endswith(".tmp"))
    if rc == 0 or not units:
        log(out)
        log("FAIL usable: the killed run left no unit (exit %d)" % rc)
        return 1
    before = sorted(os.listdir(ckpt))
    cases = (([], 0, "holds %d of 6 units of this campaign" % len(units)),
             (["--restart"], 0, "--restart: a real run removes the"),
             (["--set", "probe.semiangle=21"], 3, "semiangle"))
    for extra, code, text in cases:
        rc, out = run(2, absolute, ["--dry-run"] + extra)
        if rc != code or text not in out or sorted(os.listdir(ckpt)) != before:
            log(out)
            log("FAIL usable: --dry-run %s: exit %d (expected %d), '%s' %s, checkpoint %s" %
                (extra, rc, code, text, "said" if text in out else "not said",
                 "unchanged" if sorted(os.listdir(ckpt)) == before else "changed"))
            bad += 1
    with open(os.path.join(ckpt, "stemsim.lock"), "a") as held:  # another campaign running on it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        rc, out = run(2, absolute, ["--dry-run"])
        if rc != 6 or "in use by another running campaign" not in out:
            log(out)
            log("FAIL usable: --dry-run with the lock held elsewhere: exit %d, expected 6" % rc)
            bad += 1
    rc, out = run(2, absolute)  # the same campaign through another path to its config
    if rc != 0 or "resuming: %d of 6 units done" % len(units) not in out:
        log(out)
        log("FAIL usable: the campaign reached through %s exited %d or did not resume" % (absolute, rc))
        return 1
    bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, "resumed through another path")
    log("usable: %s" % ("ok" if not bad else "%d failures" % bad))
    return 1 if bad else 0


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpi-flag", action="append", default=[])
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--algorithm", default="multislice")
    A = ap.parse_args()
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        log("SKIP h5py/numpy not available")
        return 77
    A.workdir = os.path.join(os.path.abspath(A.workdir), A.algorithm + "_" + A.scenario)
    os.makedirs(A.workdir, exist_ok=True)
    rc = globals()["scenario_" + A.scenario]()
    if WORST[0]:
        log("largest relative difference in a compare with tolerance: %.3g" % WORST[0])
    log("PASS" if rc == 0 else "FAILED")
    return rc


if __name__ == "__main__":
    sys.exit(main())
