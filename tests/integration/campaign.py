#!/usr/bin/env python3
"""Campaign tests (ctest label `campaign`): [series] campaigns with checkpoints.
One scenario per call:

  campaign.py SCENARIO --stemsim BIN --mpiexec BIN [--mpi-flag F ...]
              --config small.ini --workdir DIR [--algorithm multislice|prism]

Scenarios (the case: 3 tilts x 2 defoci x 2 frozen-phonon configurations, 2 ranks; the
checkpoint (version 2) keeps the running sums in <output>.checkpoint/state, whose header
says which units they hold; checkpoint_interval = 0 where a test counts stored units):
  equals_single  the campaign's every point equals the same point run alone with
                 the single-run keys ([sample] tilt_x, [probe] C10) to 1e-6, standard
                 errors included; the output has the leading axes and their values
  kill_resume    the job killed (SIGKILL) before a store with 0, 1+ and 4+ of 6 units
                 stored, then run again: "resuming", and the file (standard errors
                 included) equals the uninterrupted run bit for bit; the same after a kill
                 in the middle of writing state.tmp (the previous state intact)
  signals        SIGTERM, then SIGUSR1, to every rank mid-campaign (as Slurm's --signal and
                 preemption deliver them): exit 75, a valid partial state, no state.tmp,
                 the rerun resumes and equals the uninterrupted run bit for bit
  owned          a held lock refuses a second campaign (also --restart), a link planted
                 as state.tmp or as the state is refused and its target kept, --restart
                 keeps files that are not the checkpoint's (unit_cell.xyz, state.old...)
  damaged        the state with a flipped payload byte, one byte short, a wrong magic,
                 another identity: refused by name (exit 6), nothing changed; after
                 removing the state the run starts over and is exact
  changed_key    a key changed between runs is refused naming it (exit 3);
                 --restart starts over and completes
  ranks          1 rank and 3 ranks give the 2-rank result bit for bit (exact sums)
  build_ahead    each next unit's transmission functions built ahead by a helper thread
                 (STEMSIM_TEST_BUILD_AHEAD, 1 rank): the 2-rank result bit for bit, also
                 killed after 2 units and resumed
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
  state_size     rings, 4 tilts x 3 configurations: the state's size is the same with 1+
                 and 6+ units stored, at most 2 x the output + 1 MiB; the same payload
                 with 6 configurations, a smaller one with 2 tilts
  random_kills   12 units killed at 4 random points (3 before a store, 1 inside one),
                 resumed on 1-3 ranks drawn at random (STEMSIM_TEST_SEED repeats a
                 draw), finished: bit for bit the uninterrupted run
  groups_bitwise 2 ranks with fp_groups 1 and 2, and 1 rank: bit for bit
  interval       checkpoint_interval = 1e6: nothing stored before the end (the kill hook
                 at 1 never fires, at 0 leaves no state, kill -9 mid-campaign leaves no
                 state); SIGTERM stores it (exit 75); each rerun bit for bit
  foreign        checkpoint_dir holding a user's fft_plans, unit_0000001 or state but no manifest:
                 exit 6 naming it, nothing changed; the user's empty stemsim.lock is never removed
  old_version    a version 1 checkpoint: exit 3 naming the version (run and --dry-run),
                 nothing changed; --restart removes only its names and completes
Exit: 0 pass, 1 fail, 77 skip.
"""
import argparse
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import itest
from itest import state_info, state_units

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


def write_config(name, series=True, extra="", interval=0, tilts="0:4:8", configurations=2):
    """The small case with frozen phonons (configurations of them), and the series (tilts x
    the defoci) unless series=False. interval: [output] checkpoint_interval (None: not given,
    the default); 0, so that the tests that count stored units see a store after every round."""
    text = open(A.config).read()
    here = os.path.dirname(os.path.abspath(A.config))
    text = text.replace("xyz = ../../data/", "xyz = " + os.path.join(here, "..", "..", "data") + "/")
    text = text.replace("defocus = 0\n", "")
    text = text.replace("frozen_phonons = 1", "frozen_phonons = %d" % configurations)
    text = text.replace("thermal = false", "thermal = true")
    text = text.replace("algorithm = multislice", "algorithm = " + A.algorithm)
    text = text.replace("file = small.h5", "file = %s.h5" % name)
    if interval is not None:
        text = text.replace("overwrite = true\n", "overwrite = true\ncheckpoint_interval = %g\n" % interval)
    if series:
        text += "\n[series]\ntilt_x = %s\ndefocus = %s\n" % (tilts, " ".join("%g" % d for d in DEFOCI))
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


REFERENCES = {}


def reference(name="reference", **config):
    """The uninterrupted 2-rank campaign (write_config's config, checkpoint_interval left at its
    default), computed once per call of this script: never a file an earlier stemsim left."""
    if name not in REFERENCES:
        fresh(name)
        cfg = write_config(name, interval=None, **config)
        rc, out = run(2, cfg)
        if rc != 0:
            log(out)
            raise SystemExit("FAIL the uninterrupted campaign exited %d" % rc)
        REFERENCES[name] = datasets(os.path.join(A.workdir, name + ".h5"))
    return REFERENCES[name]


def checkpoint_dir(name):
    return os.path.join(A.workdir, name + ".h5.checkpoint")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def snapshot(ckdir):
    """Every name in ckdir with its contents' digest (a link: its target), to see that nothing changed."""
    out = {}
    for n in sorted(os.listdir(ckdir)):
        full = os.path.join(ckdir, n)
        if os.path.islink(full):
            out[n] = "-> " + os.readlink(full)
        elif os.path.isfile(full):
            out[n] = digest(full)
        else:
            out[n] = "(not a file)"
    return out


def resumed_says(out, done, total):
    """The rerun's log says it resumed `done` units (nothing when none was stored)."""
    if not done:
        return "resuming" not in out
    return "resuming: %d of %d units done" % (done, total) in out


def has_errors(ref, what, shape=(3, 2)):
    """The campaign keeps each point's standard errors over its configurations (leading axes too)."""
    want = ["standard_error/images/HAADF", "standard_error/rings", "standard_error/dpc_com_x", "standard_error/total_intensity"]
    missing = [k for k in want if k not in ref or ref[k].shape[:2] != shape]
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
    """checkpoint_interval = 0 (a store after every round of 2 units, one per group): killed before
    the first store (no state), after 1 (a state of 2 units) and 4 stored units, and halfway
    through writing the store that brings the state to >= 3 (state.tmp partial, the state of 2
    units intact); each run again to the end equals the uninterrupted campaign bit for bit."""
    ref = reference()
    bad = has_errors(ref, "kill_resume")  # compared bit for bit below with everything else
    # (tag, hook, the least and most units the state may hold after the kill (None: no state), state.tmp left)
    for tag, env, least, most, tmp in (("after0", {"STEMSIM_TEST_KILL_AFTER_UNITS": "0"}, None, None, False),
                                       ("after1", {"STEMSIM_TEST_KILL_AFTER_UNITS": "1"}, 1, 5, False),
                                       ("after4", {"STEMSIM_TEST_KILL_AFTER_UNITS": "4"}, 4, 5, False),
                                       ("inwrite", {"STEMSIM_TEST_KILL_IN_CHECKPOINT": "3"}, 1, 2, True)):
        name = "kill_" + tag
        fresh(name)
        cfg = write_config(name)
        rc, out = run(2, cfg, env=env)
        if rc == 0 or os.path.exists(os.path.join(A.workdir, name + ".h5")):
            log("FAIL %s: the killed run exited %d or left an output" % (tag, rc))
            bad += 1
            continue
        ckdir = checkpoint_dir(name)
        units = state_units(ckdir)
        has_tmp = os.path.exists(os.path.join(ckdir, "state.tmp"))
        listing = sorted(os.listdir(ckdir)) if os.path.isdir(ckdir) else []
        log("%s: killed with exit %d, the state holds %s%s; the directory: %s" %
            (tag, rc, units, ", state.tmp left" if has_tmp else "", listing))
        if least is None and units is not None or least is not None and not (units and least <= len(units) <= most):
            log("FAIL %s: the state holds %s, expected %s" %
                (tag, units, "no state" if least is None else "%d to %d units" % (least, most)))
            bad += 1
        if has_tmp != tmp:
            log("FAIL %s: state.tmp %s" % (tag, "left by a kill between stores" if has_tmp else
                                            "missing after a kill in the middle of a store"))
            bad += 1
        if any(f.startswith("unit_") for f in listing):
            log("FAIL %s: unit files in a version 2 checkpoint without save_smatrix" % tag)
            bad += 1
        rc, out = run(2, cfg, ["--set", "output.overwrite=false"])
        if rc != 0:
            log(out)
            log("FAIL %s: the rerun exited %d" % (tag, rc))
            bad += 1
            continue
        done = len(units or [])
        if not resumed_says(out, done, 6):
            log(out)
            log("FAIL %s: the rerun did not say it resumed %d units" % (tag, done))
            bad += 1
        bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, tag)
        if os.path.exists(os.path.join(A.workdir, name + ".h5.checkpoint")):
            log("FAIL %s: the checkpoint was not removed after the output was published" % tag)
            bad += 1
    return 1 if bad else 0


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
        ckpt = checkpoint_dir(name)
        deadline = time.time() + 120
        while time.time() < deadline:  # a state stored (after the first round: checkpoint_interval = 0)
            if os.path.exists(os.path.join(ckpt, "state")):
                break
            time.sleep(0.05)
        for pid in itest.rank_pids(p.pid):
            os.kill(pid, sig)
        out = p.communicate(timeout=120)[0]
        units = state_units(ckpt) or []
        log("%s: exit %d, the state holds %s; the directory: %s" % (sig.name, p.returncode, units,
                                                                  sorted(os.listdir(ckpt))))
        if p.returncode != 75 or "run the same command again" not in out:
            log(out)
            log("FAIL %s: exit %d, expected 75 (stopped, checkpoint kept)" % (sig.name, p.returncode))
            bad += 1
        if not units or len(units) >= 6 or os.path.exists(os.path.join(ckpt, "state.tmp")):
            log("FAIL %s: expected a partial checkpoint (a whole state of 1 to 5 units, no state.tmp)" % sig.name)
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
    """A state damaged on disk: a flipped byte in the payload (checksum), one byte short (size), a
    wrong magic, another identity: each refused by name (exit 6), nothing changed; a manifest cut
    mid-line named truncated (exit 6), not another campaign's; after removing
    the state the campaign starts over (its manifest kept) and completes exactly."""
    ref = reference()
    name = "damaged"
    fresh(name)
    cfg = write_config(name)
    run(2, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "3"})
    ckpt = checkpoint_dir(name)
    info = state_info(ckpt)
    if not info or not info["done"]:
        log("FAIL damaged: no unit was stored before the kill")
        return 1
    log("damaged: the killed run left a state of %d bytes holding units %s" % (info["size"], info["done"]))
    state = os.path.join(ckpt, "state")
    with open(state, "rb") as f:
        good = f.read()
    payload_at = 64 + info["n_units"]

    def flipped(at):
        return good[:at] + bytes([good[at] ^ 0xFF]) + good[at + 1:]

    damages = (("payload byte flipped", flipped(payload_at + info["payload_bytes"] // 2)),
               ("one byte short", good[:-1]),
               ("wrong magic", b"STEMSTAX" + good[8:]),
               ("another identity", flipped(16)))
    bad = 0
    for what, data in damages:
        with open(state, "wb") as f:
            f.write(data)
        before = snapshot(ckpt)
        rc, out = run(2, cfg)
        if rc != 6 or name + ".h5.checkpoint/state" not in out or "damaged" not in out:
            log(out)
            log("FAIL damaged (%s): exit %d, expected 6 naming %s as damaged" % (what, rc, state))
            bad += 1
        if snapshot(ckpt) != before:
            log("FAIL damaged (%s): the refusal changed the checkpoint: %s, was %s" % (what, snapshot(ckpt), before))
            bad += 1
        if os.path.exists(os.path.join(A.workdir, name + ".h5")):
            log("FAIL damaged (%s): an output was published" % what)
            bad += 1
            os.remove(os.path.join(A.workdir, name + ".h5"))
    with open(state, "wb") as f:
        f.write(good)
    manifest = os.path.join(ckpt, "manifest")  # truncated mid-line: named so, not "a different campaign"
    whole = open(manifest, "rb").read()
    with open(manifest, "wb") as f:
        f.write(whole[:len(whole) // 2])
    rc, out = run(2, cfg)
    if rc != 6 or "manifest is truncated" not in out or "different campaign" in out:
        log(out)
        log("FAIL damaged (truncated manifest): exit %d, expected 6 naming the manifest truncated" % rc)
        bad += 1
    with open(manifest, "wb") as f:
        f.write(whole)
    os.remove(state)
    rc, out = run(2, cfg)
    if rc != 0 or "resuming" in out:
        log(out)
        log("FAIL damaged: after removing the damaged state the run exited %d (expected 0, not resuming)" % rc)
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
        # exact sums: the bits do not depend on the ranks (they were 1e-6 apart with float sums)
        bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, "%d ranks" % ranks)
    return 1 if bad else 0


def scenario_build_ahead():
    """The next unit's transmission functions built ahead on a helper thread while a unit runs
    (STEMSIM_TEST_BUILD_AHEAD: the CPU engine too; the GPU does it by default), on 1 rank, the
    series' next unit often of the next tilt: the 2-rank reference bit for bit; the same after
    a kill with 2 units stored and a resume."""
    ref = reference()
    env = {"STEMSIM_TEST_BUILD_AHEAD": "1"}
    fresh("ahead")
    rc, out = run(1, write_config("ahead"), ["-v"], env=env)
    if rc != 0:
        log(out)
        return 1
    if "built ahead on a helper thread" not in out:
        log(out)
        log("FAIL the helper did not build ahead")
        return 1
    bad = compare(datasets(os.path.join(A.workdir, "ahead.h5")), ref, "built ahead")
    fresh("ahead_kill")
    cfg = write_config("ahead_kill")
    rc, out = run(1, cfg, env=dict(env, STEMSIM_TEST_KILL_AFTER_UNITS="2"))
    if rc == 0:
        log("FAIL the kill after 2 units did not stop the run")
        return 1
    rc, out = run(1, cfg, env=env)
    if rc != 0 or "resum" not in out:
        log(out)
        log("FAIL the resumed run (exit %d)" % rc)
        return 1
    bad += compare(datasets(os.path.join(A.workdir, "ahead_kill.h5")), ref, "built ahead, killed and resumed")
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
    # a store after every round (checkpoint_interval = 0): the first round's 2 units stored, then killed
    ckdir = checkpoint_dir(killed)
    done = len(state_units(ckdir) or []) if os.path.isdir(ckdir) else 0
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
    """The plan counts one S-matrix per depth (over the rank's tile: the whole box at f = 1; n where a
    single run holds 1, each beside a round of beams of about the same size): a max_memory between
    the two estimates runs the exit surface alone and refuses the depths (exit 5, naming the
    S-matrix) before anything is allocated."""
    import re
    base = cold + ["--set", "sample.tile_z=3", "--set", "simulation.interpolation_x=1",
                   "--set", "simulation.interpolation_y=1", "--dry-run"]
    every = ["--set", "output.depth_every=1"]  # 6 depths: 6 S-matrices
    est = {}
    whole = None
    for tag, extra in (("exit", ["--set", "output.checkpoint=true"]), ("depths", every)):
        rc, out = run(1, cfg, base + extra)
        m = re.search(r"memory per rank\s+([\d.]+) GiB .*S-matrix ([\d.]+)", out)
        if rc != 0 or not m:
            log(out)
            log("FAIL dry run (%s) exited %d without the memory estimate" % (tag, rc))
            return 1
        est[tag] = (float(m.group(1)), float(m.group(2)))
        dims = re.search(r"S-matrix\s+(\d+) beams x (\d+) x (\d+) pixels", out)
        whole = 8.0 * int(dims.group(1)) * int(dims.group(2)) * int(dims.group(3)) / 2**30
    log("plan per rank: exit surface %.3f GiB (S-matrix %.3f), 6 depths %.3f GiB (S-matrix %.3f)" %
        (est["exit"] + est["depths"]))
    bad = 0
    if not abs(est["depths"][1] - est["exit"][1] - 5 * whole) <= 0.003:  # GiB printed to 3 decimals
        log("FAIL the S-matrix estimate with 6 depths is not 5 S-matrices (%.4f GiB) above the single one" % whole)
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


def scenario_foreign():
    """checkpoint_dir = a directory of the user's (e.g. '.') holding files named like a
    checkpoint's (fft_plans, unit_0000001, state) but no stemsim manifest: refused by name (exit 6),
    every file unchanged, nothing written; an empty stemsim.lock of the user's is used for locking
    but never removed, and the campaign beside it completes."""
    bad = 0
    name = "foreign"
    fresh(name)
    own = os.path.join(A.workdir, "foreign_dir")
    shutil.rmtree(own, ignore_errors=True)
    os.makedirs(own)
    cfg = write_config(name, extra="\n[output]\ncheckpoint_dir = %s\n" % own)
    lock = os.path.join(own, "stemsim.lock")
    open(lock, "w").close()
    for planted in ("fft_plans", "unit_0000001", "state"):
        path = os.path.join(own, planted)
        with open(path, "w") as f:
            f.write("the user's own %s\n" % planted)
        before = {f: digest(os.path.join(own, f)) for f in os.listdir(own)}
        rc, out = run(1, cfg)
        after = {f: digest(os.path.join(own, f)) for f in os.listdir(own)}
        log("foreign %s: exit %d" % (planted, rc))
        if rc != 6 or planted not in out or "did not create" not in out:
            log(out)
            log("FAIL foreign: a user's %s in checkpoint_dir: exit %d, expected 6 naming it" % (planted, rc))
            bad += 1
        if after != before:
            log("FAIL foreign: the directory changed: %s -> %s" % (sorted(before), sorted(after)))
            bad += 1
        os.remove(path)
    rc, out = run(1, cfg)
    left = sorted(os.listdir(own))
    log("foreign: the campaign beside the user's stemsim.lock: exit %d, left %s" % (rc, left))
    if rc != 0 or left != ["stemsim.lock"]:
        log(out)
        log("FAIL foreign: expected exit 0 and the user's stemsim.lock kept (and nothing else), got %d, %s" % (rc, left))
        bad += 1
    return 1 if bad else 0


def scenario_owned():
    """A checkpoint belongs to one campaign: a held lock refuses a second one (and its --restart),
    nothing changed; a link planted under the state's temporary name (state.tmp) or as the state
    itself is refused and its target left alone; --restart removes only the checkpoint's own
    names (a model called unit_cell.xyz and files named state.old, manifest.bak, unit_0000001.bak
    beside them stay, in the campaign that follows too)."""
    import fcntl
    bad = 0
    name = "owned"
    fresh(name)
    cfg = write_config(name)
    ckpt = checkpoint_dir(name)
    rc, out = run(1, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    units = state_units(ckpt) if os.path.isdir(ckpt) else None
    if rc == 0 or not units:
        log(out)
        log("FAIL owned: the killed run stored no state (exit %d)" % rc)
        return 1
    # 1. another campaign holds the directory (the test takes its lock)
    with open(os.path.join(ckpt, "stemsim.lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = snapshot(ckpt)
        rc, out = run(1, cfg)
        if rc != 6 or "in use by another running campaign" not in out or snapshot(ckpt) != before:
            log(out)
            log("FAIL owned: with the lock held elsewhere exit %d, expected 6 and the checkpoint untouched" % rc)
            bad += 1
        rc, out = run(1, cfg, extra=["--restart"])
        if rc != 6 or snapshot(ckpt) != before:
            log(out)
            log("FAIL owned: --restart with the lock held elsewhere: exit %d, expected 6 and nothing removed" % rc)
            bad += 1
    # 2. a link planted as the state's temporary, then as the state: refused, the link and its target unchanged
    victim = os.path.join(A.workdir, "victim.txt")
    with open(victim, "w") as f:
        f.write("not stemsim's\n")
    link = os.path.join(ckpt, "state.tmp")
    os.symlink(victim, link)
    rc, out = run(1, cfg)
    if rc != 6 or "not a regular file" not in out or open(victim).read() != "not stemsim's\n" or not os.path.islink(link):
        log(out)
        log("FAIL owned: a link as state.tmp: exit %d, expected 6 with the link and its target left alone" % rc)
        bad += 1
    if os.path.lexists(link):
        os.remove(link)
    state = os.path.join(ckpt, "state")
    os.rename(state, state + ".kept")
    os.symlink(victim, state)
    rc, out = run(1, cfg)
    if rc != 6 or name + ".h5.checkpoint/state" not in out or open(victim).read() != "not stemsim's\n" or not os.path.islink(state):
        log(out)
        log("FAIL owned: a link as the state: exit %d, expected 6 naming it, the link and its target left alone" % rc)
        bad += 1
    if os.path.lexists(state):
        os.remove(state)
    os.rename(state + ".kept", state)
    # 3. --restart removes only the checkpoint's own names; the finished campaign too
    fresh(name)
    run(1, cfg, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    keep = [os.path.join(ckpt, n) for n in ("unit_cell.xyz", "state.old", "manifest.bak", "unit_0000001.bak")]
    for k in keep:
        with open(k, "w") as f:
            f.write("a user's file\n")
    rc, out = run(1, cfg, extra=["--restart"], env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"})
    gone = [os.path.basename(k) for k in keep if not os.path.exists(k)]
    if gone:
        log(out)
        log("FAIL owned: --restart deleted %s" % gone)
        bad += 1
    if "resuming" in out:
        log(out)
        log("FAIL owned: --restart resumed")
        bad += 1
    rc, out = run(1, cfg)
    gone = [os.path.basename(k) for k in keep if not os.path.exists(k)]
    if rc != 0 or gone:
        log(out)
        log("FAIL owned: the campaign beside a user's files: exit %d, removed %s" % (rc, gone))
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
    ckpt = checkpoint_dir(name)
    rc, out = run(2, rel, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "2"})
    units = state_units(ckpt) if os.path.isdir(ckpt) else None
    if rc == 0 or not units:
        log(out)
        log("FAIL usable: the killed run stored no state (exit %d)" % rc)
        return 1
    before = snapshot(ckpt)
    cases = (([], 0, "holds %d of 6 units of this campaign (verified): a real run resumes and computes the other %d"
              % (len(units), 6 - len(units))),
             (["--restart"], 0, "--restart: a real run removes the"),
             (["--set", "probe.semiangle=21"], 3, "semiangle"))
    for extra, code, text in cases:
        rc, out = run(2, absolute, ["--dry-run"] + extra)
        if rc != code or text not in out or snapshot(ckpt) != before:
            log(out)
            log("FAIL usable: --dry-run %s: exit %d (expected %d), '%s' %s, checkpoint %s" %
                (extra, rc, code, text, "said" if text in out else "not said",
                 "unchanged" if snapshot(ckpt) == before else "changed"))
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


TWELVE = "0 4 8 12"  # 4 tilts: with 3 configurations, 12 units of 2 points each


def killed_run(ranks, cfg, hook, k, extra=()):
    """A run with the kill hook (STEMSIM_TEST_KILL_AFTER_UNITS or _IN_CHECKPOINT) at k: (rc, out)."""
    var = {"after": "STEMSIM_TEST_KILL_AFTER_UNITS", "in": "STEMSIM_TEST_KILL_IN_CHECKPOINT"}[hook]
    return run(ranks, cfg, extra, env={var: str(k)})


def scenario_state_size():
    """The state grows with the points, not the units: rings (save_3d, no 4D patterns), 4 tilts x 2
    defoci x 3 configurations (12 units), checkpoint_interval = 0, killed with 1+ and then 6+ units
    stored: the state has one size (64 + 12 + its payload), at most twice the finished output + 1
    MiB; the same points with 6 configurations (24 units) add no more than each configuration's
    few whole-scan values per point (its images summed over the scan: at most 1/16 of a point's
    sums), 2 tilts give a smaller payload."""
    sets = ["--set", "detector.save_4d=false"]
    name = "size12"
    fresh(name)
    cfg = write_config(name, tilts=TWELVE, configurations=3)
    ckpt = checkpoint_dir(name)
    bad = 0
    sizes = []
    for k in (1, 6):
        rc, out = killed_run(2, cfg, "after", k, sets)
        info = state_info(ckpt) if os.path.isdir(ckpt) else None
        if rc == 0 or not info or not k <= info["n_done"] < 12:
            log(out)
            log("FAIL state_size: killed after %d units: exit %d, state %s" % (k, rc, info))
            return 1
        log("state_size: %d of %d units stored: state %d bytes (payload %d)" %
            (info["n_done"], info["n_units"], info["size"], info["payload_bytes"]))
        sizes.append(info)
    rc, out = run(2, cfg, sets)
    if rc != 0:
        log(out)
        log("FAIL state_size: the rerun exited %d" % rc)
        return 1
    output = os.path.getsize(os.path.join(A.workdir, name + ".h5"))
    if sizes[0]["size"] != sizes[1]["size"] or sizes[0]["payload_bytes"] != sizes[1]["payload_bytes"]:
        log("FAIL state_size: the state's size moved with the units stored: %d bytes with %d units, %d with %d" %
            (sizes[0]["size"], sizes[0]["n_done"], sizes[1]["size"], sizes[1]["n_done"]))
        bad += 1
    limit = 2 * output + (1 << 20)
    log("state_size: state %d bytes, output %d bytes (limit 2 x output + 1 MiB = %d)" % (sizes[1]["size"], output, limit))
    if not sizes[1]["size"] <= limit:
        log("FAIL state_size: the state (%d bytes) is larger than twice the output (%d bytes) + 1 MiB" %
            (sizes[1]["size"], output))
        bad += 1
    payload = sizes[0]["payload_bytes"]
    per_point = payload / 8.0  # 4 tilts x 2 defoci
    for other, tilts, configurations, want in (("size24", TWELVE, 6, "nearly the same"), ("size6", "0 4", 3, "smaller")):
        fresh(other)
        rc, out = killed_run(2, write_config(other, tilts=tilts, configurations=configurations), "after", 1, sets)
        info = state_info(checkpoint_dir(other)) if os.path.isdir(checkpoint_dir(other)) else None
        if rc == 0 or not info:
            log(out)
            log("FAIL state_size: %s killed after 1 unit: exit %d, no state" % (other, rc))
            bad += 1
            continue
        log("state_size: tilts %s x %d configurations (%d units): state %d bytes, payload %d" %
            (tilts, configurations, info["n_units"], info["size"], info["payload_bytes"]))
        if want == "smaller":
            ok = info["payload_bytes"] < payload
        else:  # 3 more configurations of 8 points
            per_unit_point = (info["payload_bytes"] - payload) / (3 * 8.0)
            log("state_size: each added configuration adds %.0f bytes per point (a point's sums: %.0f bytes)" %
                (per_unit_point, per_point))
            ok = 0 <= per_unit_point <= per_point / 16
        if not ok or info["n_units"] != len(tilts.split()) * configurations:
            log("FAIL state_size: %s: payload %d bytes for %d units, expected %s as the 12 units' %d bytes" %
                (other, info["payload_bytes"], info["n_units"], want, payload))
            bad += 1
    return 1 if bad else 0


def scenario_random_kills():
    """One campaign (12 units) killed at 4 points drawn at random (3 kills before a store at k units,
    one halfway through a store, in a random order), each time resumed on 1, 2 or 3 ranks drawn at
    random, then run to the end: every dataset (standard errors too) equals the uninterrupted run's
    bit for bit. STEMSIM_TEST_SEED=n repeats a draw (the seed is logged)."""
    ref = reference("reference12", tilts=TWELVE, configurations=3)
    seed = int(os.environ.get("STEMSIM_TEST_SEED") or random.SystemRandom().randrange(1 << 30))
    log("random_kills: seed %d (STEMSIM_TEST_SEED=%d repeats this draw)" % (seed, seed))
    rng = random.Random(seed)
    plan = ["after", "after", "after", "in"]
    rng.shuffle(plan)
    name = "random"
    fresh(name)
    cfg = write_config(name, tilts=TWELVE, configurations=3)
    ckpt = checkpoint_dir(name)
    state = os.path.join(ckpt, "state")
    bad = 0
    done = []
    for hook in plan:
        ranks = rng.choice((1, 2, 3))
        k = len(done) + rng.randint(1, 2)  # at most 3 + 3 + 3 + 1 stored before the last kill: never the end
        what = "kill %s %d on %d rank%s" % ("after" if hook == "after" else "in the store reaching", k, ranks,
                                            "s" if ranks > 1 else "")
        kept = digest(state) if os.path.exists(state) else None
        rc, out = killed_run(ranks, cfg, hook, k)
        if rc == 0 or os.path.exists(os.path.join(A.workdir, name + ".h5")):
            log(out)
            log("FAIL random_kills: %s: exit %d or an output published" % (what, rc))
            return 1
        if not resumed_says(out, len(done), 12):
            log(out)
            log("FAIL random_kills: %s: the run did not say it resumed %d units" % (what, len(done)))
            bad += 1
        units = state_units(ckpt) or []
        has_tmp = os.path.exists(os.path.join(ckpt, "state.tmp"))
        log("random_kills: %s: exit %d, the state holds %d units %s%s" % (what, rc, len(units), units,
                                                                      ", state.tmp left" if has_tmp else ""))
        if not set(done) <= set(units) or len(units) >= 12:
            log("FAIL random_kills: %s: the state went from %s to %s" % (what, done, units))
            bad += 1
        if hook == "after" and (len(units) < k or has_tmp):
            log("FAIL random_kills: %s: expected >= %d units and no state.tmp" % (what, k))
            bad += 1
        if hook == "in" and (len(units) >= k or not has_tmp):
            log("FAIL random_kills: %s: expected < %d units and a partial state.tmp" % (what, k))
            bad += 1
        if hook == "in" and len(units) == len(done) and kept and digest(state) != kept:
            log("FAIL random_kills: %s: killed in its first store, yet the state changed" % what)
            bad += 1
        done = units
    ranks = rng.choice((1, 2, 3))
    rc, out = run(ranks, cfg)
    if rc != 0 or not resumed_says(out, len(done), 12):
        log(out)
        log("FAIL random_kills: the last run (%d ranks) exited %d or did not say it resumed %d units" %
            (ranks, rc, len(done)))
        return 1
    if os.path.exists(ckpt):
        log("FAIL random_kills: the checkpoint was not removed after the output was published: %s" %
            os.listdir(ckpt))
        bad += 1
    bad += has_errors(ref, "random_kills", shape=(4, 2))
    bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, "killed at %s, resumed" % plan)
    return 1 if bad else 0


def scenario_groups_bitwise():
    """Exact sums: 2 ranks as one group of 2 (fp_groups = 1) and as two groups (fp_groups = 2), and 1
    rank, give the same bits in every dataset, standard errors included."""
    ref = reference()
    bad = has_errors(ref, "groups_bitwise")
    for tag, ranks, sets in (("2 ranks, fp_groups = 1", 2, ["--set", "compute.fp_groups=1"]),
                             ("2 ranks, fp_groups = 2", 2, ["--set", "compute.fp_groups=2"]),
                             ("1 rank", 1, [])):
        name = "groups_np%d_%s" % (ranks, sets[-1][-1] if sets else "default")
        fresh(name)
        rc, out = run(ranks, write_config(name, interval=None), sets)
        if rc != 0:
            log(out)
            log("FAIL groups_bitwise: %s exited %d" % (tag, rc))
            return 1
        m = re.search(r"configurations over (\d+) rank group", out)
        log("groups_bitwise: %s: %s group(s)" % (tag, m.group(1) if m else "?"))
        bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, tag)
    return 1 if bad else 0


def watched(cfg, env, pattern, timeout=90):
    """A 2-rank campaign started with env, its log read as it comes: (process, reader, lines,
    whether pattern was seen while the job still ran)."""
    p = subprocess.Popen(command(2, cfg, []), cwd=A.workdir, env=dict(os.environ, **env), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    lines, seen = [], threading.Event()

    def read():
        for line in p.stdout:
            lines.append(line)
            if re.search(pattern, line):
                seen.set()
        seen.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    ok = seen.wait(timeout) and p.poll() is None and any(re.search(pattern, line) for line in lines)
    return p, reader, lines, ok


def finished(p, reader, lines):
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    reader.join(10)
    return p.returncode, "".join(lines)


def scenario_interval():
    """checkpoint_interval = 1e6: no store before the end but at a signal. With the hook
    STEMSIM_TEST_KILL_AFTER_UNITS=1 the campaign finishes (the end's store is its first) and
    equals the uninterrupted run; =0 kills it before that store, every unit computed: no state;
    kill -9 of every rank mid-campaign: no state, the rerun starts over; SIGTERM mid-campaign:
    exit 75, a state of 1 to 5 units, the rerun resumes them; each bit for bit."""
    ref = reference()
    bad = 0
    name = "interval"
    ckpt = checkpoint_dir(name)
    out_h5 = os.path.join(A.workdir, name + ".h5")
    fresh(name)
    cfg = write_config(name, interval=1e6)
    rc, out = killed_run(2, cfg, "after", 1)
    if rc != 0:
        log(out)
        log("FAIL interval: KILL_AFTER_UNITS=1 with checkpoint_interval = 1e6: exit %d, expected 0 (a store "
            "before the end?)" % rc)
        bad += 1
    else:
        bad += compare(datasets(out_h5), ref, "interval 1e6, uninterrupted")
    fresh(name)
    rc, out = killed_run(2, cfg, "after", 0)
    units = state_units(ckpt) if os.path.isdir(ckpt) else None
    if rc == 0 or units is not None or os.path.exists(out_h5):
        log(out)
        log("FAIL interval: KILL_AFTER_UNITS=0: exit %d, state %s, output %s (expected a kill, no state, no output)" %
            (rc, units, os.path.exists(out_h5)))
        bad += 1
    for sig in (signal.SIGKILL, signal.SIGTERM):
        fresh(name)
        p, reader, lines, ok = watched(cfg, {"STEMSIM_TEST_UNIT_DELAY": "2"}, r"unit \d+ of 6 done")
        for pid in itest.rank_pids(p.pid):
            os.kill(pid, sig)
        rc, out = finished(p, reader, lines)
        if not ok:
            log(out)
            log("FAIL interval: %s: no unit was done while the campaign ran" % sig.name)
            bad += 1
            continue
        units = state_units(ckpt) if os.path.isdir(ckpt) else None
        log("interval: %s mid-campaign: exit %d, the state holds %s" % (sig.name, rc, units))
        if sig == signal.SIGKILL:
            if rc == 0 or units is not None or os.path.exists(os.path.join(ckpt, "state.tmp")):
                log(out)
                log("FAIL interval: kill -9 mid-campaign: exit %d, state %s: expected nothing stored" % (rc, units))
                bad += 1
        elif rc != 75 or not units or len(units) >= 6 or os.path.exists(os.path.join(ckpt, "state.tmp")):
            log(out)
            log("FAIL interval: SIGTERM mid-campaign: exit %d, state %s: expected 75 and a state of 1 to 5 units" %
                (rc, units))
            bad += 1
        done = len(units or [])
        rc, out = run(2, cfg)
        if rc != 0 or not resumed_says(out, done, 6):
            log(out)
            log("FAIL interval: the rerun after %s exited %d or did not say it resumed %d units" % (sig.name, rc, done))
            bad += 1
            continue
        bad += compare(datasets(out_h5), ref, "interval 1e6, %s and rerun" % sig.name)
    return 1 if bad else 0


def scenario_old_version():
    """A version 1 checkpoint (one file per unit) is refused naming its version (exit 3), by the run
    and by --dry-run, nothing changed; --restart (its --dry-run counts them) removes only its names
    (manifest, fft_plans, unit_NNNNNNN[.tmp]) and computes the campaign, equal to the uninterrupted
    run bit for bit; a user's files beside them stay."""
    ref = reference()
    name = "old"
    fresh(name)
    cfg = write_config(name)
    ckpt = checkpoint_dir(name)
    os.makedirs(ckpt)
    unit = b"STEMUNIT" + bytes(40) + bytes(range(256)) * 4
    ours = {"manifest": b"stemsim checkpoint 1\nunits = 6\nunit_bytes = 1024\nstemsim 0.9.0\n[probe]\nsemiangle = 20\n",
            "fft_plans": b"wisdom 0123456789abcdef\n", "unit_0000000": unit, "unit_0000001": unit,
            "unit_0000002.tmp": unit[:100]}
    users = {"unit_cell.xyz": b"a model\n", "notes.txt": b"my notes\n", "unit_0000003.bak": unit,
             "state.old": b"not stemsim's\n"}
    for n, data in list(ours.items()) + list(users.items()):
        with open(os.path.join(ckpt, n), "wb") as f:
            f.write(data)
    open(os.path.join(ckpt, "stemsim.lock"), "w").close()
    before = snapshot(ckpt)
    bad = 0
    for extra in ([], ["--dry-run"]):
        rc, out = run(2, cfg, extra)
        if rc != 3 or "checkpoint version 1" not in out or snapshot(ckpt) != before or os.path.exists(
                os.path.join(A.workdir, name + ".h5")):
            log(out)
            log("FAIL old_version%s: exit %d, expected 3 naming 'checkpoint version 1', the checkpoint unchanged" %
                (" --dry-run" if extra else "", rc))
            bad += 1
    rc, out = run(2, cfg, ["--dry-run", "--restart"])
    if rc != 0 or "removes the %d checkpoint files" % len(ours) not in out or snapshot(ckpt) != before:
        log(out)
        log("FAIL old_version --dry-run --restart: exit %d, expected 0 counting the %d checkpoint files, nothing "
            "changed" % (rc, len(ours)))
        bad += 1
    rc, out = run(2, cfg, ["--restart"])
    if rc != 0 or "resuming" in out:
        log(out)
        log("FAIL old_version --restart: exit %d, expected 0 without resuming" % rc)
        return 1
    left = set(os.listdir(ckpt)) if os.path.isdir(ckpt) else set()
    ours_left = sorted(left & (set(ours) | {"state", "state.tmp", "manifest.tmp"}))
    users_gone = sorted(n for n, data in users.items()
                        if n not in left or open(os.path.join(ckpt, n), "rb").read() != data)
    log("old_version: after --restart the directory holds %s" % sorted(left))
    if ours_left or users_gone:
        log("FAIL old_version --restart: left the checkpoint's %s, removed or changed the user's %s" %
            (ours_left, users_gone))
        bad += 1
    bad += compare(datasets(os.path.join(A.workdir, name + ".h5")), ref, "old checkpoint discarded by --restart")
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
