#!/usr/bin/env python3
"""Whole-program fault tests (ctest label `faults`): what happens to files,
processes and messages when things go wrong. One scenario per call:

  faults.py SCENARIO --ranks N --stemsim BIN --mpiexec BIN [--mpi-flag F ...]
            --config small.ini --workdir DIR

Scenarios (each asserts exit code, message, and the files left behind):
  input_as_output   output = the config, a symlink to the model, a hard link to
                    the scattering table (overwrite = true): exit 6, both paths
                    named, every input byte-identical
  stale_temporary   earlier runs' temporaries (a symlink to a victim file, a
                    regular file) are reported, never followed or changed
  publish_race      two jobs write one output (overwrite = false): one
                    publishes, the other exits 6 and keeps its complete result
  special_output    overwrite = true onto a FIFO, a socket, a directory: exit
                    6 at once, the special file untouched
  full_disk         output on a 64 KiB tmpfs: exit 6, no crash, nothing left
                    (skipped with a message when mount is not permitted)
  vanished_dir      the output directory is removed while the job computes:
                    exit 6, no file anywhere
  signals           SIGTERM / SIGINT / SIGUSR1 mid-run: one line, exit 128+N
                    (through mpirun: its own status), no rank left alive after
                    2 s, no output or temporary; the log shows progress. With
                    2 ranks SIGTERM and SIGINT go to mpiexec, SIGUSR1 to every
                    rank (as Slurm's --signal delivers it)
  memory_rlimit     ulimit -v below the plan: exit 5 naming RLIMIT_AS
  one_message       a failure on every rank is printed once
  mpmd_mismatch     ranks started with different configs (MPMD): exit 3 naming
                    the key; a config error on rank 1 only: its message, exit 3
  mpmd_modes        --dry-run or --restart given to some ranks of an MPMD launch
                    only: exit 2 naming the option and a rank, no hang
  dist_fft_few_rows distributed_fft with a grid that leaves a rank no rows (2
                    ranks: 4 x 1; 3 ranks: 2 x 2): exit 3 before any collective
  dry_run           --dry-run exits as the real run would (0, 5, 6), writes nothing
  memory_estimate   the plan's memory per rank is at least each rank's measured peak (threads,
                    oversampling, PRISM, finite projection, 4D)
  concurrent_singletons  --count (100; 25 under ASan) one-process jobs beside as many:
                    every one exits 0, no error line, complete identical output,
                    nothing left in TMPDIR; 2 ranks: a few mpirun jobs side by side
  mpi_init_failure  MPI cannot start (TMPDIR a file): exit 7, one message; the
                    local actions (--version, --help...) start no MPI
  odd_inputs        a duplicated atom warns with its lines; <(...) and a FIFO as
                    config are refused at once; /dev/stdin from a file works;
                    a relative output path is relative to the current directory
  bad_imports       stored potentials / S-matrices with NaN, Inf, implausible values,
                    all-zero data, a dataset declared but never written, no complete
                    mark: exit 4 naming file and dataset; a FIFO, /dev/zero or a
                    directory as potential_file / smatrix_file, a FIFO as a checkpoint's
                    state, as --from-prismatic's parameter file: refused at once
                    (each run has a timeout), the FIFO left in place; nothing published
  stored_keys       potential_file / smatrix_file with a tilt, rotation,
                    parametrisation, projection, cutoff, thermal key, seed or
                    transmission oversampling other than the writer's: exit 3 naming
                    the key and both values; the same keys as the writer's run
  result_check      a final result that is not finite, or a probe whose total
                    intensity is 0 or above 1 (test hook STEMSIM_TEST_POISON_RESULT),
                    in a plain run and in a [series] campaign: exit 9, nothing
                    published, no temporary left
  reserve_estimate  the output's reserve within [1, 1.10] x the file: 4D, 65 points, EMD of many points
  checkpoint_room   a campaign's output fits a tmpfs but its checkpoint (the state twice) does
                    not: exit 6 before computing (also --dry-run), nothing left; with room it runs
  full_disk_already a tmpfs already full, and one with room for the native file but
                    not the EMD copy (a filler file stemsim did not create): exit 6 with
                    "no space left", no crash, the filler intact, nothing else left
  full_disk_late    the disk filled by another process at the final write (test hook
                    STEMSIM_TEST_PAUSE_AT=write), a single run and a campaign's end:
                    exit 6, no crash; the campaign keeps its checkpoint and a rerun
                    after space was freed publishes; filled during the EMD conversion
                    (=emd): the reserved space finishes it
  emd_signals       SIGTERM/SIGUSR1 during the EMD conversion (STEMSIM_TEST_PAUSE_AT=emd):
                    128+N (a campaign: 75, checkpoint kept), one line, nothing left
Exit: 0 pass, 1 fail, 77 skip.
"""
import argparse
import hashlib
import os
import re
import shlex
import signal
import socket
import shutil
import stat
import subprocess
import sys
import time

from itest import state_units

A = None  # parsed arguments


def log(msg):
    print(msg, flush=True)


def fail(msg):
    log("FAIL " + msg)
    return 1


def cmd(ranks, cfg, sets, extra=()):
    base = [A.stemsim] if ranks == 1 else [A.mpiexec] + A.mpi_flag + ["-np", str(ranks), A.stemsim]
    out = base + list(extra) + [cfg]
    for s in sets:
        out += ["--set", s]
    return out


def run(argv, cwd=None, env=None, timeout=120, stdin=subprocess.DEVNULL, shell=False):
    log("$ " + (argv if shell else " ".join(shlex.quote(c) for c in argv)))
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, stdin=stdin, shell=shell, executable="/bin/bash" if shell else None)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = 124, "", "(timed out)"
    log(f"  -> exit {rc} in {time.monotonic() - t0:.1f} s")
    if err.strip():
        log("  stderr: " + err.strip().replace("\n", "\n          "))
    return rc, out, err


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fresh(name):
    d = os.path.join(A.workdir, f"{name}_np{A.ranks}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def leftovers(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".incomplete"))


def complete(path):
    try:
        import h5py
    except ImportError:
        return None
    with h5py.File(path, "r") as f:
        return int(f.attrs.get("complete", 0)) == 1


def error_lines(err):
    return [l for l in err.splitlines() if l.startswith("stemsim: error")]


def expect(problems, cond, msg):
    if not cond:
        problems.append(msg)


def finish(problems, name):
    for p in problems:
        log("FAIL " + p)
    log(f"{name} (np {A.ranks}): {'FAIL' if problems else 'PASS'}")
    return 1 if problems else 0


def local_config(d, extra=""):
    """The small test case with an absolute model path, in d."""
    src = open(A.config).read().replace("../../data", os.path.join(A.root, "data"))
    path = os.path.join(d, "case.ini")
    with open(path, "w") as f:
        f.write(src + extra)
    return path


LONG = ["simulation.thermal=true", "simulation.frozen_phonons=100000"]  # minutes: always interrupted


# ------------------------------------------------------------------ scenarios

def s_input_as_output():
    d = fresh("input_as_output")
    cfg = local_config(d)
    model = os.path.join(d, "model.xyz")
    shutil.copy(os.path.join(A.root, "data", "Si100_unitcell.xyz"), model)
    table = os.path.join(d, "kirkland.txt")
    shutil.copy(os.path.join(A.root, "data", "kirkland_params.txt"), table)
    os.symlink(model, os.path.join(d, "via_symlink.h5"))
    os.link(table, os.path.join(d, "via_hardlink.h5"))
    env = dict(os.environ, STEMSIM_KIRKLAND=table)
    before = {p: digest(p) for p in (cfg, model, table)}
    problems = []
    for out, named in ((cfg, "config file"), ("via_symlink.h5", "XYZ model"), ("via_hardlink.h5", "scattering-factor table")):
        rc, _, err = run(cmd(A.ranks, cfg, [f"sample.xyz={model}", f"output.file={out}", "output.overwrite=true"]),
                         cwd=d, env=env)
        expect(problems, rc == 6, f"output {out}: exit {rc}, expected 6")
        expect(problems, "is the same file as the " + named in err, f"output {out}: message does not name the {named}")
        expect(problems, len(error_lines(err)) == 1, f"output {out}: {len(error_lines(err))} error lines, expected 1")
    for p, h in before.items():
        expect(problems, digest(p) == h, f"input {p} was changed")
    expect(problems, not leftovers(d), f"temporaries left: {leftovers(d)}")
    return finish(problems, "input_as_output")


def s_stale_temporary():
    d = fresh("stale_temporary")
    cfg = local_config(d)
    victim = os.path.join(d, "victim.txt")
    with open(victim, "w") as f:
        f.write("must survive\n")
    os.symlink(victim, os.path.join(d, "out.h5.incomplete"))          # stemsim 0.1's name
    os.symlink(victim, os.path.join(d, "out.h5.AbCdEf.incomplete"))   # this version's pattern
    with open(os.path.join(d, "out.h5.XyZ123.incomplete"), "w") as f:
        f.write("earlier crashed run\n")
    stale = {n: os.readlink(os.path.join(d, n)) if os.path.islink(os.path.join(d, n)) else digest(os.path.join(d, n))
             for n in leftovers(d)}
    rc, _, err = run(cmd(A.ranks, cfg, ["output.file=out.h5", "output.overwrite=false"]), cwd=d)
    problems = []
    expect(problems, rc == 0, f"exit {rc}, expected 0")
    expect(problems, open(victim).read() == "must survive\n", "the symlink's target was written")
    for n, v in stale.items():
        p = os.path.join(d, n)
        now = os.readlink(p) if os.path.islink(p) else (digest(p) if os.path.exists(p) else None)
        expect(problems, now == v, f"stale temporary {n} was changed or removed")
        expect(problems, n in err, f"stale temporary {n} is not reported")
    expect(problems, sorted(stale) == leftovers(d), f"new temporaries left: {leftovers(d)}")
    ok = complete(os.path.join(d, "out.h5")) if rc == 0 else False
    expect(problems, ok is not False, "out.h5 is not marked complete")
    return finish(problems, "stale_temporary")


def s_publish_race():
    d = fresh("publish_race")
    cfg = local_config(d)
    sets = ["output.file=out.h5", "output.overwrite=false", "simulation.thermal=true", "simulation.frozen_phonons=600"]
    argv = cmd(A.ranks, cfg, sets)
    log("$ 2 x " + " ".join(shlex.quote(c) for c in argv))
    # each job its own TMPDIR: two mpiexec started at once race on Open MPI 4.1's session directory
    # (/tmp/ompi.<host>.<uid>: "mkdir ... File exists", exit 1), which is not the race tested here
    tmp = [os.path.join(d, "tmp%d" % k) for k in range(2)]
    for t in tmp:
        os.makedirs(t, exist_ok=True)
    procs = [subprocess.Popen(argv, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, TMPDIR=t)) for t in tmp]
    res = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for rc, err in res:
        log(f"  -> exit {rc}: {err.strip()[:400]}")
    problems = []
    codes = sorted(rc for rc, _ in res)
    expect(problems, codes == [0, 6], f"exit codes {codes}, expected one 0 and one 6")
    loser = [err for rc, err in res if rc == 6]
    kept = [f for f in os.listdir(d) if f.endswith(".conflict.h5")]
    if loser and "already exists" in loser[0]:
        log("note: the second job started after the first had published (no race this time)")
    else:
        expect(problems, bool(loser) and "is kept as" in loser[0], "the losing job does not say where its result is")
        expect(problems, len(kept) == 1, f"kept files: {kept}")
        if kept:
            expect(problems, kept[0] in loser[0], "the message does not name the kept file")
            expect(problems, complete(os.path.join(d, kept[0])) is not False, "the kept file is not complete")
    expect(problems, os.path.exists(os.path.join(d, "out.h5")), "no job published out.h5")
    expect(problems, not leftovers(d), f"temporaries left: {leftovers(d)}")
    return finish(problems, "publish_race")


def s_special_output():
    d = fresh("special_output")
    cfg = local_config(d)
    fifo, sock, sub = (os.path.join(d, n) for n in ("fifo.h5", "sock.h5", "dir.h5"))
    os.mkfifo(fifo)
    s = socket.socket(socket.AF_UNIX)
    s.bind(sock)
    os.mkdir(sub)
    problems = []
    for path, kind in ((fifo, "FIFO"), (sock, "socket"), (sub, "directory")):
        rc, _, err = run(cmd(A.ranks, cfg, [f"output.file={path}", "output.overwrite=true"]), cwd=d, timeout=60)
        expect(problems, rc == 6, f"{kind}: exit {rc}, expected 6")
        expect(problems, kind in err, f"{kind}: the message does not say what the file is")
    expect(problems, stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
    expect(problems, stat.S_ISSOCK(os.lstat(sock).st_mode), "the socket was replaced")
    expect(problems, os.path.isdir(sub), "the directory was replaced")
    s.close()
    expect(problems, not leftovers(d), f"temporaries left: {leftovers(d)}")
    return finish(problems, "special_output")


def s_full_disk():
    d = fresh("full_disk")
    cfg = local_config(d)
    mnt = os.path.join(d, "tiny")
    os.mkdir(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        log(f"SKIP full_disk: cannot mount a small tmpfs here ({m.stderr.strip() or 'not permitted'})")
        return 77
    try:
        rc, _, err = run(cmd(A.ranks, cfg, [f"output.file={mnt}/out.h5", "detector.save_4d=true"]), cwd=d)
        problems = []
        expect(problems, rc == 6, f"exit {rc}, expected 6 (a crash is > 128)")
        expect(problems, "disk full" in err, "the message does not mention a full disk")
        expect(problems, "Segmentation" not in err and "signal" not in err.lower(), "crashed on the way out")
        expect(problems, len(error_lines(err)) == 1, f"{len(error_lines(err))} error lines, expected 1")
        expect(problems, os.listdir(mnt) == [], f"left on the full disk: {os.listdir(mnt)}")
    finally:
        subprocess.run(["umount", mnt])
    return finish(problems, "full_disk")


def start(argv, cwd):
    log("$ " + " ".join(shlex.quote(c) for c in argv) + " &")
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_for(pred, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def ranks_alive(tag):
    """(pid, command) of the stemsim processes whose command line holds tag (the run's own directory)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    procs = [l.strip().split(None, 1) for l in out.splitlines() if l.strip()]
    return [(int(pid), args) for pid, args in procs if tag in args and os.path.basename(A.stemsim) in args
            and "mpiexec" not in args and "mpirun" not in args]


def s_vanished_dir():
    d = fresh("vanished_dir")
    cfg = local_config(d)
    out_dir = os.path.join(d, "results")
    os.mkdir(out_dir)
    p = start(cmd(A.ranks, cfg, [f"output.file={out_dir}/out.h5", "simulation.thermal=true",
                                 "simulation.frozen_phonons=400"]), d)
    problems = []
    # the temporary exists from the start: remove the whole directory under the running job
    expect(problems, wait_for(lambda: leftovers(out_dir) if os.path.isdir(out_dir) else False, 30),
           "no temporary appeared in the output directory")
    shutil.rmtree(out_dir)
    out, err = p.communicate(timeout=300)
    log(f"  -> exit {p.returncode}\n  stderr: {err.strip()[:600]}")
    expect(problems, p.returncode == 6, f"exit {p.returncode}, expected 6")
    expect(problems, "has gone" in err or "does not exist" in err, "the message does not say the directory went")
    expect(problems, not os.path.exists(out_dir), "something re-created the output directory")
    return finish(problems, "vanished_dir")


def s_signals():
    problems = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        d = fresh(f"signals_{sig.name}")
        cfg = local_config(d)
        p = start(cmd(A.ranks, cfg, ["output.file=out.h5"] + LONG), d)
        if not wait_for(lambda: leftovers(d), 30):
            problems.append(f"{sig.name}: the job never started writing its temporary")
        time.sleep(1.0)  # well inside the computation
        # SIGTERM, SIGINT: to stemsim itself (1 rank) or to mpiexec, as a user would send them;
        # SIGUSR1: to every rank, as Slurm delivers --signal (mpirun's forwarding differs between builds)
        targets = [p.pid] if A.ranks == 1 or sig != signal.SIGUSR1 else [pid for pid, _ in ranks_alive(d)]
        log(f"  kill -{sig.name} {targets}")
        t0 = time.monotonic()
        for t in targets:
            os.kill(t, sig)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            problems.append(f"{sig.name}: still running 30 s after the signal")
        dt = time.monotonic() - t0
        log(f"  -> exit {p.returncode} after {dt:.2f} s\n  stderr: {err.strip()[:800]}")
        gone = wait_for(lambda: not ranks_alive(d), 2.0)
        expect(problems, gone, f"{sig.name}: ranks still alive 2 s after the job ended: {ranks_alive(d)}")
        if A.ranks == 1:
            expect(problems, p.returncode == 128 + sig, f"{sig.name}: exit {p.returncode}, expected {128 + sig}")
        else:
            expect(problems, p.returncode != 0, f"{sig.name}: exit 0 after a signal")
        # mpirun turns SIGINT into SIGTERM for its ranks; stemsim itself names what it got
        said = f"received {sig.name}: stopping" if A.ranks == 1 or sig != signal.SIGINT else "received SIG"
        expect(problems, said in err, f"{sig.name}: no line '{said}'")
        expect(problems, err.count(": stopping at") == 1, f"{sig.name}: the stop is announced {err.count(': stopping at')} times")
        expect(problems, not os.path.exists(os.path.join(d, "out.h5")), f"{sig.name}: out.h5 appeared")
        expect(problems, not leftovers(d), f"{sig.name}: temporaries left: {leftovers(d)}")
        expect(problems, "configuration " in out, f"{sig.name}: the log shows no progress (not flushed?)")
    return finish(problems, "signals")


def s_memory_rlimit():
    if "ASAN_OPTIONS" in os.environ:
        log("SKIP memory_rlimit: AddressSanitizer reserves terabytes of address space, so no process starts "
            "under a small RLIMIT_AS")
        return 77
    d = fresh("memory_rlimit")
    cfg = local_config(d)
    # 4 threads each building a slice's transmission on a grid 8 x 8 times the 0.01 A one (~3.6 GiB)
    # against an address space of ~2 GiB
    big = ["simulation.pixel_size=0.01", "simulation.transmission_oversampling=8", "compute.threads=4", "output.file=out.h5"]
    argv = " ".join(shlex.quote(c) for c in cmd(A.ranks, cfg, big))
    rc, _, err = run(f"ulimit -v 2500000 && exec {argv}", cwd=d, shell=True)
    problems = []
    expect(problems, rc == 5, f"exit {rc}, expected 5")
    expect(problems, "RLIMIT_AS" in err, "the message does not name RLIMIT_AS")
    expect(problems, "transmission" in err and "transmission_oversampling" in err, "no advice for the part that is too large")
    expect(problems, len(error_lines(err)) == 1, f"{len(error_lines(err))} error lines, expected 1")
    expect(problems, os.listdir(d) == ["case.ini"], f"files left: {os.listdir(d)}")
    return finish(problems, "memory_rlimit")


def s_one_message():
    d = fresh("one_message")
    cfg = local_config(d)
    problems = []
    for sets, code in ((["compute.max_memory=0.00001"], 5), (["output.file=/no/such/dir/out.h5"], 6),
                       (["probe.semiangle=20", "simulation.pixel_size=5"], 3)):
        rc, _, err = run(cmd(A.ranks, cfg, sets), cwd=d)
        expect(problems, rc == code, f"{sets}: exit {rc}, expected {code}")
        expect(problems, len(error_lines(err)) == 1, f"{sets}: {len(error_lines(err))} error lines, expected 1")
    return finish(problems, "one_message")


def s_mpmd_mismatch():
    if A.ranks < 2:
        log("SKIP mpmd_mismatch: needs 2 ranks")
        return 77
    d = fresh("mpmd_mismatch")
    cfg = local_config(d)
    other = local_config(d, "\n[probe]\ndefocus = 25\n").replace("case.ini", "other.ini")
    os.rename(os.path.join(d, "case.ini"), other)
    cfg = local_config(d)
    problems = []
    base = [A.mpiexec] + A.mpi_flag
    argv = base + ["-np", "1", A.stemsim, cfg, "--set", "output.file=out.h5", ":",
                   "-np", "1", A.stemsim, other, "--set", "output.file=out.h5"]
    rc, _, err = run(argv, cwd=d, timeout=60)
    expect(problems, rc == 3, f"different configs: exit {rc}, expected 3")
    expect(problems, "[probe] defocus" in err and "rank 1" in err, "the message does not name the key and the rank")
    expect(problems, len(error_lines(err)) == 1, f"{len(error_lines(err))} error lines, expected 1")
    # a config only rank 1 cannot read: its own message, not silence or a hang
    broken = os.path.join(d, "broken.ini")
    with open(broken, "w") as f:
        f.write(open(cfg).read() + "\n[probe]\ndefocsu = 1\n")
    argv = base + ["-np", "1", A.stemsim, cfg, ":", "-np", "1", A.stemsim, broken]
    rc, _, err = run(argv, cwd=d, timeout=60)
    expect(problems, rc == 3, f"config error on rank 1: exit {rc}, expected 3")
    expect(problems, "(rank 1)" in err and "defocsu" in err, "rank 1's own message is missing")
    expect(problems, len(error_lines(err)) == 1, f"{len(error_lines(err))} error lines, expected 1")
    expect(problems, not os.path.exists(os.path.join(d, "out.h5")) and not leftovers(d), "output left behind")
    return finish(problems, "mpmd_mismatch")


def s_mpmd_modes():
    """An MPMD launch that gives --dry-run (or --restart) to some ranks only: exit 2 at once, the
    option and a rank named, no hang, nothing written. Needs 2 ranks (3 are started)."""
    if A.ranks < 2:
        log("SKIP mpmd_modes: needs 2 ranks")
        return 77
    d = fresh("mpmd_modes")
    cfg = local_config(d)
    base = [A.mpiexec] + A.mpi_flag
    sets = []
    for s_ in TINY + ["output.file=out.h5"]:
        sets += ["--set", s_]
    problems = []
    for first, second, flag in ((["--dry-run"], [], "--dry-run"), ([], ["--dry-run"], "--dry-run"),
                                ([], ["--restart"], "--restart")):
        argv = base + ["-np", "1", A.stemsim] + first + [cfg] + sets + [":", "-np", "2", A.stemsim] + second + [cfg] + sets
        rc, _, err = run(argv, cwd=d, timeout=60)
        what = f"{flag} on rank {'0' if first else '1-2'} only"
        expect(problems, rc == 2, f"{what}: exit {rc}, expected 2 (124: it hung)")
        expect(problems, flag in err and "rank 1" in err and "same options" in err,
               f"{what}: the message does not name the option and the rank")
        expect(problems, len(error_lines(err)) == 1, f"{what}: {len(error_lines(err))} error lines, expected 1")
    expect(problems, os.listdir(d) == ["case.ini"], f"files left: {os.listdir(d)}")
    return finish(problems, "mpmd_modes")


def s_dist_fft_few_rows():
    """A distributed FFT whose grid leaves a rank of the group no rows or Fourier columns (FFTW-MPI's
    blocks of ceil(n / ranks)): exit 3 before any collective, naming the ranks that would do; no hang,
    nothing written, the dry run says the same. Needs 2 ranks (3 are started too)."""
    if A.ranks < 2:
        log("SKIP dist_fft_few_rows: needs 2 ranks")
        return 77
    d = fresh("dist_fft_few_rows")
    cfg = local_config(d)
    hrtem = ["simulation.algorithm=hrtem", "compute.distributed_fft=on", "probe.semiangle=0.1", "sample.tile_y=1",
             "sample.tile_z=1", "output.file=out.h5"]
    problems = []
    # 2 ranks: a 4 x 1 grid (one row); 3 ranks: a 2 x 2 grid (blocks of 1: the third rank none)
    for ranks, grid, sets in ((2, "4 x 1", ["sample.tile_x=4", "simulation.pixel_size=6"]),
                              (3, "2 x 2", ["sample.tile_x=1", "simulation.pixel_size=3"])):
        for extra in ([], ["--dry-run"]):
            rc, out, err = run(cmd(ranks, cfg, hrtem + sets, extra), cwd=d, timeout=60)
            what = f"{ranks} ranks, {grid} grid{' (dry run)' if extra else ''}"
            expect(problems, rc == 3, f"{what}: exit {rc}, expected 3 (124: it hung)")
            expect(problems, f"the {grid} grid cannot be shared by the {ranks} ranks" in err and "at most" in err,
                   f"{what}: the message does not name the grid, the ranks and what would do")
            expect(problems, len(error_lines(err)) == 1, f"{what}: {len(error_lines(err))} error lines, expected 1")
    # the ranks that do: 2 ranks on the 2 x 2 grid compute
    rc, _, err = run(cmd(2, cfg, hrtem + ["sample.tile_x=1", "simulation.pixel_size=3"]), cwd=d, timeout=60)
    expect(problems, rc == 0, f"2 ranks on the 2 x 2 grid: exit {rc}, expected 0")
    expect(problems, sorted(os.listdir(d)) == ["case.ini", "out.h5"], f"files: {sorted(os.listdir(d))}")
    return finish(problems, "dist_fft_few_rows")


def s_dry_run():
    d = fresh("dry_run")
    cfg = local_config(d)
    problems = []
    with open(os.path.join(d, "exists.h5"), "w") as f:
        f.write("keep\n")
    cases = ((["output.file=new.h5"], 0, "every check passed"),
             (["output.file=exists.h5", "output.overwrite=false"], 6, "already exists"),
             (["output.file=new.h5", "compute.max_memory=0.00001"], 5, "max_memory"),
             ([f"output.file={cfg}", "output.overwrite=true"], 6, "same file as the config file"),
             (["output.file=/no/such/dir/x.h5"], 6, "does not exist"))
    for sets, code, text in cases:
        before = sorted(os.listdir(d))
        rc, out, err = run(cmd(A.ranks, cfg, sets, ["--dry-run"]), cwd=d)
        expect(problems, rc == code, f"{sets}: exit {rc}, expected {code}")
        expect(problems, text in out + err, f"{sets}: output lacks '{text}'")
        expect(problems, "plan:" in out, f"{sets}: the plan was not printed")
        expect(problems, sorted(os.listdir(d)) == before, f"{sets}: files changed: {sorted(os.listdir(d))}")
    return finish(problems, "dry_run")


def s_odd_inputs():
    d = fresh("odd_inputs")
    cfg = local_config(d)
    problems = []
    model = os.path.join(d, "dup.xyz")
    with open(model, "w") as f:
        f.write("Si with one atom twice\n5.43 5.43 5.43\n14 0 0 0 1 0.08\n14 2.715 2.715 0 1 0.08\n"
                "14 5.43 0.004 0 1 0.08\n14 2.715 0 2.715 1 0.08\n")
    rc, _, err = run(cmd(A.ranks, cfg, [f"sample.xyz={model}", "sample.tile_x=1", "sample.tile_y=1", "sample.tile_z=1",
                                        "scan.x_end=0.3", "scan.y_end=0.3", "scan.x_start=0", "scan.y_start=0",
                                        "scan.units=fractional", "output.file=dup.h5"]), cwd=d)
    expect(problems, rc == 4 and "min_distance" in err, f"duplicate atom: exit {rc}, expected 4 (closer than "
                                                           f"[sample] min_distance)")
    rc, _, err = run(cmd(A.ranks, cfg, [f"sample.xyz={model}", "sample.tile_x=1", "sample.tile_y=1", "sample.tile_z=1",
                                        "scan.x_end=0.3", "scan.y_end=0.3", "scan.x_start=0", "scan.y_start=0",
                                        "scan.units=fractional", "output.file=dup.h5", "sample.min_distance=0"]), cwd=d)
    expect(problems, rc == 0, f"duplicate atom with min_distance = 0: exit {rc}, expected 0 (a warning)")
    expect(problems, "lines 3 and 5 give the same atom" in err, "no warning naming lines 3 and 5")
    if A.ranks == 1:
        # <(...) is a pipe: refused by name, never a hang
        rc, _, err = run(f"exec {shlex.quote(A.stemsim)} <(cat {shlex.quote(cfg)}) --set output.file=pipe.h5", cwd=d,
                         shell=True, timeout=30)
        expect(problems, rc == 3 and "reading a pipe is not supported" in err, f"<(...): exit {rc}")
        fifo = os.path.join(d, "cfg.fifo")
        os.mkfifo(fifo)
        rc, _, err = run([A.stemsim, fifo], cwd=d, timeout=30)
        expect(problems, rc == 3 and "pipe" in err, f"FIFO config: exit {rc} (124 = it blocked)")
        with open(cfg) as f:
            rc, _, err = run([A.stemsim, "/dev/stdin", "--set", "output.file=stdin.h5"], cwd=d, stdin=f)
        expect(problems, rc == 0 and os.path.exists(os.path.join(d, "stdin.h5")), f"/dev/stdin from a file: exit {rc}")
    # relative output: relative to the current directory, not to the config's
    here = os.path.join(d, "cwd")
    os.mkdir(here)
    rc, _, _ = run(cmd(A.ranks, cfg, ["output.file=rel.h5"]), cwd=here)
    expect(problems, rc == 0 and os.path.exists(os.path.join(here, "rel.h5")), "rel.h5 not in the current directory")
    expect(problems, not os.path.exists(os.path.join(d, "rel.h5")), "rel.h5 written next to the config file")
    return finish(problems, "odd_inputs")


def peak_rss_gib(argv, cwd):
    """(exit code, the largest resident set of any process the command started, GiB)."""
    probe = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
             "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    rc, out, _ = run([sys.executable, "-c", probe] + argv, cwd=cwd, timeout=300)
    code, kib = out.split()[-2:] if rc == 0 and len(out.split()) >= 2 else (rc, 0)
    return int(code), int(kib) / 1048576.0


def s_memory_estimate():
    """The plan's memory per rank covers what each rank really holds at its peak (within 5%, the
    measurement's own reach: MPI_Finalize, the kernel's accounting), so --dry-run's verdict holds."""
    if "ASAN_OPTIONS" in os.environ:  # the sanitizers' shadow memory is no part of the plan
        log("SKIP memory_estimate: under AddressSanitizer (.ci/sanitize) resident memory is not the program's")
        return 77
    d = fresh("memory_estimate")
    cfg = local_config(d)
    problems = []
    # node-shared windows count once per node in the plan (their share per rank) but in full in
    # every rank's resident set: kept private here, so that each rank's peak is its own
    big = ["sample.tile_x=6", "sample.tile_y=6", "simulation.pixel_size=0.05", "output.file=m.h5",
           "compute.node_shared=false"]
    cases = (["compute.threads=1", "simulation.transmission_oversampling=1"],
             ["compute.threads=4", "simulation.transmission_oversampling=3"],
             ["compute.threads=2", "simulation.algorithm=prism", "simulation.transmission_oversampling=2"],
             ["compute.threads=2", "simulation.projection=finite", "detector.save_4d=true"])
    for sets in cases:
        rc, out, err = run(cmd(A.ranks, cfg, big + sets, ["--dry-run"]), cwd=d)
        est = [float(l.split()[3]) for l in out.splitlines() if l.strip().startswith("memory per rank")]
        expect(problems, rc == 0 and est, f"{sets}: the dry run exited {rc} without an estimate")
        if rc or not est:
            continue
        rc, peak = peak_rss_gib(cmd(A.ranks, cfg, big + sets, ["--quiet"]), d)
        log(f"  {sets}: estimate {est[0]:.3f} GiB per rank, measured peak {peak:.3f} GiB")
        expect(problems, rc == 0, f"{sets}: the run exited {rc}")
        expect(problems, peak <= 1.05 * est[0], f"{sets}: peak {peak:.3f} GiB above the plan's {est[0]:.3f} GiB")
    return finish(problems, "memory_estimate")


def s_accepted_inputs():
    """Inputs that are right and were refused or changed (issue 27, item 13): an HRTEM run at
    ordinary HRTEM sampling (the default STEM detectors do not apply to it), a seed above 2^53
    kept exact, Windows (CR LF) line endings in the config and the model."""
    d = fresh("accepted_inputs")
    cfg = local_config(d)
    problems = []
    rc, _, err = run(cmd(A.ranks, cfg, ["simulation.algorithm=hrtem", "simulation.pixel_size=0.2",
                                        "output.file=hrtem.h5"]), cwd=d)
    expect(problems, rc == 0 and os.path.exists(os.path.join(d, "hrtem.h5")),
           f"hrtem at 0.2 A pixels: exit {rc} (the default HAADF beyond its band limit?): {error_lines(err)}")
    seed = "9007199254740993"  # 2^53 + 1: a double holds only its neighbours
    rc, _, err = run(cmd(A.ranks, cfg, [f"simulation.seed={seed}", "output.file=seed.h5"]), cwd=d)
    text = ""
    if rc == 0:
        try:
            import h5py
            with h5py.File(os.path.join(d, "seed.h5"), "r") as f:
                text = f.attrs["config"]
                text = text.decode() if isinstance(text, bytes) else str(text)
        except ImportError:
            text = f"seed = {seed}"  # no h5py: the exit status is all that is checked
    expect(problems, rc == 0 and f"seed = {seed}" in text,
           f"seed {seed}: exit {rc}, the output's config says {[l for l in text.splitlines() if 'seed' in l]}")
    with open(os.path.join(A.root, "data", "Si100_unitcell.xyz")) as f:
        model = f.read()
    crlf_model = os.path.join(d, "crlf.xyz")
    with open(crlf_model, "w", newline="") as f:
        f.write(model.replace("\n", "\r\n"))
    crlf_cfg = os.path.join(d, "crlf.ini")
    with open(cfg) as f, open(crlf_cfg, "w", newline="") as g:
        g.write(f.read().replace("\n", "\r\n"))
    rc, _, err = run(cmd(A.ranks, crlf_cfg, [f"sample.xyz={crlf_model}", "output.file=crlf.h5"]), cwd=d)
    expect(problems, rc == 0 and os.path.exists(os.path.join(d, "crlf.h5")), f"CR LF config and model: exit {rc}")
    return finish(problems, "accepted_inputs")


TINY = ["sample.tile_x=1", "sample.tile_y=1", "sample.tile_z=1", "scan.x_end=2.4", "scan.y_end=2.4",
        "detector.save_4d=false", "detector.save_3d=false"]  # one probe through one cell: ~0.1 s


def h5_complete_and_images(path):
    """(complete attribute is 1, the text of /images) through h5dump, or (False, None)."""
    try:
        a = subprocess.run(["h5dump", "-a", "/complete", path], capture_output=True, text=True, timeout=30)
        i = subprocess.run(["h5dump", "-g", "/images", path], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False, None
    done = a.returncode == 0 and "(0): 1" in a.stdout
    return done, i.stdout.split("\n", 1)[-1] if i.returncode == 0 else None


def loop_of_runs(argv_of, n, cwd, env):
    """n runs one after another (argv_of(i)); [(i, rc, stderr)]."""
    res = []
    for i in range(n):
        p = subprocess.run(argv_of(i), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        res.append((i, p.returncode, p.stderr))
    return res


def s_concurrent_singletons():
    """--count one-process jobs (no mpirun) beside --count others, on one node: every one exits 0
    with no error line and a complete output with the same images; no private session directory is
    left in TMPDIR. With 2 ranks: a few mpirun jobs side by side, which keep Open MPI's own session
    (launched processes are left as they are)."""
    import threading
    d = fresh("concurrent_singletons")
    cfg = local_config(d)
    tmp = os.path.join(d, "tmp")  # the jobs' TMPDIR, so that what they leave there is seen
    os.mkdir(tmp)
    tmps = {"a": tmp, "b": tmp}
    if A.ranks > 1:  # two mpiexec started at once race on Open MPI 4.1's session directory: a TMPDIR each
        for t in tmps:
            tmps[t] = os.path.join(tmp, t)
            os.mkdir(tmps[t])
    n = A.count or 100
    if "ASAN_OPTIONS" in os.environ and not A.count:
        n = 25  # a sanitized run takes ~1.5 s (leak check): 2 x 100 would outlast the test's timeout
        log(f"note: under AddressSanitizer {n} runs beside {n} (--count sets it)")
    if A.ranks > 1:
        n = 3
    loops = {}

    def loop(tag):
        loops[tag] = loop_of_runs(lambda i: cmd(A.ranks, cfg, TINY + [f"output.file=out_{tag}_{i}.h5"], ["-q"]),
                                  n, d, dict(os.environ, TMPDIR=tmps[tag]))
    log(f"$ 2 loops of {n} x " + " ".join(shlex.quote(c) for c in cmd(A.ranks, cfg, TINY, ["-q"])))
    t0 = time.monotonic()
    threads = [threading.Thread(target=loop, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log(f"  -> {2 * n} runs in {time.monotonic() - t0:.1f} s")
    problems, images = [], set()
    for tag, res in sorted(loops.items()):
        for i, rc, err in res:
            bad = [l for l in err.splitlines() if "error" in l.lower() or "abort" in l.lower()]
            name = f"out_{tag}_{i}.h5"
            expect(problems, rc == 0, f"{name}: exit {rc}: {err.strip()[:300]}")
            expect(problems, not bad, f"{name}: error lines on stderr: {bad[:2]}")
            if rc == 0:
                done, img = h5_complete_and_images(os.path.join(d, name))
                expect(problems, done, f"{name} is not marked complete")
                images.add(img)
    expect(problems, len(images) <= 1, f"the runs' images differ ({len(images)} versions)")
    expect(problems, None not in images, "an output has no readable /images")
    expect(problems, not leftovers(d), f"temporaries left: {leftovers(d)}")
    left = sorted(set(os.listdir(tmp)) - set(tmps) if A.ranks > 1 else os.listdir(tmp))
    for t in set(tmps.values()) - {tmp}:
        left += sorted(os.path.join(os.path.basename(t), x) for x in os.listdir(t))
    expect(problems, not left, f"left in TMPDIR: {left}")
    if len(problems) > 10:
        problems = problems[:10] + [f"... and {len(problems) - 10} more"]
    return finish(problems, "concurrent_singletons")


def s_mpi_init_failure():
    """MPI cannot start (its session directory cannot be made): exit 7, one message naming the
    cause, nothing left. 1 rank (the private session directory is a one-process job's)."""
    if A.ranks != 1:
        log("SKIP mpi_init_failure: a one-process job's start-up")
        return 77
    d = fresh("mpi_init_failure")
    cfg = local_config(d)
    not_dir = os.path.join(d, "not_a_directory")
    with open(not_dir, "w") as f:
        f.write("a file\n")
    problems = []
    rc, _, err = run(cmd(1, cfg, TINY + ["output.file=out.h5"]), cwd=d, env=dict(os.environ, TMPDIR=not_dir))
    expect(problems, rc == 7, f"TMPDIR a file: exit {rc}, expected 7")
    expect(problems, "TMPDIR" in err and not_dir in err, "the message does not name TMPDIR and its value")
    expect(problems, len(error_lines(err)) == 1 and len(err.strip().splitlines()) == 1,
           f"{len(err.strip().splitlines())} lines on stderr, expected stemsim's one")
    expect(problems, sorted(os.listdir(d)) == ["case.ini", "not_a_directory"], f"files left: {sorted(os.listdir(d))}")
    # local actions start no MPI: they work where MPI cannot start
    for flag in ("--version", "--help", "--help-config"):
        rc, out, err = run([A.stemsim, flag], cwd=d, env=dict(os.environ, TMPDIR=not_dir))
        expect(problems, rc == 0 and out and not err.strip(), f"{flag} where MPI cannot start: exit {rc}")
        # a task other than 0 of a Slurm step prints too (it printed nothing, exit 0: issue 38 item 12)
        slurm = dict(os.environ, SLURM_PROCID="3", SLURM_STEP_ID="0", SLURM_NTASKS="4", SLURM_JOB_ID="1")
        rc, out, err = run([A.stemsim, flag], cwd=d, env=slurm)
        expect(problems, rc == 0 and out.strip(), f"{flag} as task 3 of a Slurm step: exit {rc}, printed {len(out)} bytes")
    return finish(problems, "mpi_init_failure")


def stored_files(d, cfg):
    """A stored potential (pot.h5: multislice, one configuration) and S-matrix (sm.h5: prism,
    thermal, two configurations) written by this stemsim; None when h5py is missing."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        return None
    prism = ["simulation.algorithm=prism", "simulation.thermal=true", "simulation.frozen_phonons=2"]
    rc1, _, _ = run(cmd(A.ranks, cfg, ["output.file=pot.h5", "output.save_potential=true"]), cwd=d)
    rc2, _, _ = run(cmd(A.ranks, cfg, ["output.file=sm.h5", "output.save_smatrix=true"] + prism), cwd=d)
    if rc1 or rc2:
        raise SystemExit(fail(f"writing the stored files: exit {rc1}, {rc2}"))
    return prism


def spoiled(d, src, name, dataset, how):
    """A copy of src with its dataset spoiled by how(h5py dataset, file)."""
    import h5py
    path = os.path.join(d, name)
    shutil.copy(os.path.join(d, src), path)
    with h5py.File(path, "r+") as f:
        how(f[dataset], f)
    return path


def unwritten(dset, f):
    """The dataset replaced by one declared with the same shape and attributes, never written."""
    name, shape, attrs = dset.name, dset.shape, dict(dset.attrs)
    del f[name]
    new = f.create_dataset(name, shape, dtype="f4")
    for k, v in attrs.items():
        new.attrs[k] = v


def refused(problems, d, what, argv, code, text, env=None, timeout=60):
    """stemsim refuses: exit code, the text on stderr, one error line, nothing published."""
    before = set(os.listdir(d))
    rc, _, err = run(argv, cwd=d, env=env, timeout=timeout)
    expect(problems, rc == code, f"{what}: exit {rc}, expected {code}" + (" (it blocked)" if rc == 124 else ""))
    expect(problems, text in err, f"{what}: stderr lacks '{text}'")
    expect(problems, rc == 124 or len(error_lines(err)) == 1, f"{what}: {len(error_lines(err))} error lines, expected 1")
    new = sorted(set(os.listdir(d)) - before)
    expect(problems, not new, f"{what}: files appeared: {new}")


def retyped(dtype, **kw):
    """The dataset rewritten as dtype (with h5py's create_dataset keywords: compression), its attributes kept."""
    def how(dset, f):
        name, data, attrs = dset.name, dset[()], dict(dset.attrs)
        del f[name]
        new = f.create_dataset(name, data=data.astype(dtype), **kw)
        for k, v in attrs.items():
            new.attrs[k] = v
    return how


def s_stale_reserve():
    """The output-sized space reserve a SIGKILLed run leaves ("<file>.XXXXXX.reserve.incomplete"):
    the next run reclaims it (every run holds its reserve's lock while it lives), names it, and
    publishes; a live run's reserve is left alone by another run on the same output. A killed
    singleton's private session directory (TMPDIR/stemsim-mpi.XXXXXX) is reclaimed by the next
    singleton alike. (Issue 38 items 9 and 12.)"""
    import glob
    import signal as sig
    d = fresh("stale_reserve")
    cfg = local_config(d)
    slow = ["output.file=out.h5", "simulation.frozen_phonons=3", "simulation.thermal=true"]
    env = dict(os.environ, STEMSIM_TEST_UNIT_DELAY="4")
    problems = []

    def reserves():
        return glob.glob(os.path.join(d, "out.h5.*.reserve.incomplete"))

    def start():
        p = subprocess.Popen(cmd(1, cfg, slow), cwd=d, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if reserves():
                return p
            time.sleep(0.05)
        p.kill()
        p.wait()
        return None
    p = start()
    if not p:
        return finish(["the slow run made no reserve"], "stale_reserve")
    p.send_signal(sig.SIGKILL)
    p.wait()
    stale = reserves()
    rc, out, err = run(cmd(A.ranks, cfg, ["output.file=out.h5"]), cwd=d, timeout=120)
    expect(problems, rc == 0 and not reserves() and "space reserve" in out + err,
           f"after a kill -9: exit {rc}, reserves left {reserves()} (the killed run's: {stale})")
    if A.ranks == 1:  # a singleton's private Open MPI session directory, left by the kill: reclaimed too
        tmp = os.path.join(d, "tmp")
        os.makedirs(tmp, exist_ok=True)
        env["TMPDIR"] = tmp
        p = start()
        p.send_signal(sig.SIGKILL)
        p.wait()
        left = glob.glob(os.path.join(tmp, "stemsim-mpi.*"))
        rc, _, _ = run(cmd(1, cfg, ["output.file=out.h5", "output.overwrite=true"]), cwd=d, timeout=120,
                       env=dict(os.environ, TMPDIR=tmp))
        expect(problems, rc == 0 and left and not glob.glob(os.path.join(tmp, "stemsim-mpi.*")),
               f"the killed singleton's session directory {left}: exit {rc}, left {glob.glob(tmp + '/stemsim-mpi.*')}")
        del env["TMPDIR"]
    p = start()  # alive now: another run on the same output must leave its reserve
    live = reserves()
    rc, _, _ = run(cmd(A.ranks, cfg, ["output.file=out.h5", "output.overwrite=true"]), cwd=d, timeout=120)
    expect(problems, rc == 0 and set(live) <= set(reserves()), f"a live run's reserve {live} was removed (exit {rc})")
    if p:
        p.kill()
        p.wait()
    return finish(problems, "stale_reserve")


def s_odd_files():
    """Files that are there but not what they seem (issue 38 item 11): an empty [compute] fft_wisdom
    file is no wisdom yet (said so, the plans measured and written to it, exit 0; it was refused);
    a 4 GiB sparse positions file is refused at once, exit 4, naming it sparse (it read 1 GiB, exit 5);
    an objective aperture inside one Fourier pixel is warned of."""
    d = fresh("odd_files")
    cfg = local_config(d)
    problems = []
    wisdom = os.path.join(d, "empty.wisdom")
    open(wisdom, "w").close()
    rc, out, err = run(cmd(A.ranks, cfg, ["output.file=w.h5", f"compute.fft_wisdom={wisdom}",
                                          "compute.fft_planning=measure"]), cwd=d, timeout=120)
    expect(problems, rc == 0 and "is empty" in out + err and os.path.getsize(wisdom) > 0,
           f"an empty fft_wisdom file: exit {rc}, {os.path.getsize(wisdom)} bytes after")
    text = open(cfg).read()
    for key in ("units", "x_start", "x_end", "y_start", "y_end", "step"):
        text = re.sub(r"(?m)^%s *=.*\n" % key, "", text)
    pos_cfg = os.path.join(d, "positions.ini")
    open(pos_cfg, "w").write(text)
    sparse = os.path.join(d, "sparse.txt")
    with open(sparse, "w") as f:
        f.write("2.0 2.0\n2.4 2.0\n")
        f.truncate(4 << 30)
    t0 = time.time()
    refused(problems, d, "a 4 GiB sparse positions file",
            cmd(A.ranks, pos_cfg, ["output.file=sp.h5", f"scan.positions={sparse}"]), 4, "sparse file")
    expect(problems, time.time() - t0 < 30, "the sparse positions file took %.0f s to refuse" % (time.time() - t0))
    os.remove(sparse)
    # an objective aperture inside one Fourier pixel: warned (it ran in silence, a flat image)
    rc, out, err = run(cmd(A.ranks, cfg, ["output.file=ap.h5", "simulation.algorithm=hrtem",
                                          "hrtem.objective_aperture=1e-9"]), cwd=d, timeout=120)
    expect(problems, rc == 0 and "inside one Fourier pixel" in err,
           f"objective_aperture = 1e-9: exit {rc}, warned: {'inside one Fourier pixel' in err}")
    # ... and a usual one (20 mrad, many Fourier pixels) is not (it was: radians against mrad)
    rc, out, err = run(cmd(A.ranks, cfg, ["output.file=ap20.h5", "simulation.algorithm=hrtem",
                                          "hrtem.objective_aperture=20"], ["--dry-run"]), cwd=d, timeout=120)
    expect(problems, rc == 0 and "inside one Fourier pixel" not in err,
           f"objective_aperture = 20: exit {rc}, warned: {'inside one Fourier pixel' in err}")
    if A.ranks == 1:  # a singleton with more threads than its cores: told so, not to use mpirun --bind-to none
        rc, out, err = run(cmd(1, cfg, ["output.file=th.h5", "compute.threads=4096"], ["--dry-run"]), cwd=d)
        expect(problems, rc == 0 and "threads = 4096" in err and "mpirun" not in err,
               f"a singleton with threads = 4096: exit {rc}, {[l for l in err.splitlines() if 'threads' in l]}")
        # a checkpointed run stopped before its checkpoint opens kept nothing: 143 as it says, not 75
        p = subprocess.Popen(cmd(1, cfg, ["output.file=early.h5", "output.checkpoint=true"]), cwd=d,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, STEMSIM_TEST_PAUSE_AT="checkpoint", STEMSIM_TEST_PAUSE_S="8"))
        time.sleep(2.5)  # in the pause, before the checkpoint opens
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        expect(problems, p.returncode == 128 + signal.SIGTERM and "no result will be written" in err and
               not os.path.exists(os.path.join(d, "early.h5.checkpoint")),
               f"stopped before its checkpoint opened: exit {p.returncode}, expected 143 and nothing kept")
    return finish(problems, "odd_files")


def h5z_available(filter_id):
    from h5py import h5z
    return h5z.filter_avail(filter_id)


def s_stored_types():
    """Stored potentials and S-matrices as stemsim wrote them, float32, however compressed: an int8 or
    float16 /potential (HAADF 35% off when read) refused, exit 4, naming the type; a gzip-compressed
    copy of each (chunks of less space than their values: refused as 'damaged' before) read and equal
    to the uncompressed file's run bit for bit; a filter this HDF5 lacks (Blosc, 32001) named.
    (Issue 38 item 7.)"""
    d = fresh("stored_types")
    cfg = local_config(d)
    problems = []
    prism = stored_files(d, cfg)
    if prism is None:
        log("SKIP h5py not available")
        return 77
    import h5py
    import numpy as np
    for tag, dtype in (("int8", "i1"), ("float16", "f2")):
        path = spoiled(d, "pot.h5", f"pot_{tag}.h5", "potential", retyped(dtype))
        refused(problems, d, f"potential_file as {tag}",
                cmd(A.ranks, cfg, ["output.file=out.h5", f"simulation.potential_file={path}"]), 4, "not the float32")
    def unavailable_filter(dset, f):  # HDF5 filter 32001 (Blosc), registered as optional, not in this HDF5
        from h5py import h5d, h5p, h5s, h5t, h5z
        name, data, attrs = dset.name, dset[()], dict(dset.attrs)
        del f[name]
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk((1,) * (data.ndim - 2) + data.shape[-2:])
        dcpl.set_filter(32001, h5z.FLAG_OPTIONAL, (0,))
        new = h5d.create(f.id, name.encode(), h5t.IEEE_F32LE, h5s.create_simple(data.shape), dcpl)
        new.write(h5s.ALL, h5s.ALL, data.astype("f4"))
        for k, v in attrs.items():
            f[name].attrs[k] = v
    if not h5z_available(32001):
        path = spoiled(d, "pot.h5", "pot_blosc.h5", "potential", unavailable_filter)
        refused(problems, d, "potential_file through a filter this HDF5 lacks",
                cmd(A.ranks, cfg, ["output.file=out.h5", f"simulation.potential_file={path}"]), 4, "filter 32001")
    for src, key, extra in (("pot.h5", "potential", []), ("sm.h5", "smatrix", prism)):
        gz = spoiled(d, src, "gz_" + src, key, retyped("f4", compression="gzip", compression_opts=4, chunks=True))
        runs = []
        for tag, path in (("plain", os.path.join(d, src)), ("gzip", gz)):
            rc, _, err = run(cmd(A.ranks, cfg, [f"output.file={key}_{tag}.h5", f"simulation.{key}_file={path}"] +
                                 extra), cwd=d)
            expect(problems, rc == 0, f"{key}_file {tag}: exit {rc}: {err.strip()[-300:]}")
            runs.append(os.path.join(d, f"{key}_{tag}.h5"))
        if all(os.path.exists(r) for r in runs):
            with h5py.File(runs[0], "r") as a, h5py.File(runs[1], "r") as b:
                same = all(np.array_equal(a[k][()], b[k][()]) for k in ("images/HAADF", "total_intensity"))
            expect(problems, same, f"{key}_file gzip-compressed: results differ from the uncompressed file's")
    return finish(problems, "stored_types")


def s_bad_imports():
    import math
    d = fresh("bad_imports")
    cfg = local_config(d)
    problems = []
    prism = stored_files(d, cfg)
    if prism is None:
        log("SKIP h5py not available")
        return 77
    nan, inf = math.nan, math.inf

    def setter(index, value):
        def how(dset, f):
            dset[index] = value
        return how

    def no_mark(dset, f):
        del f.attrs["complete"]

    pot = (("nan", setter((0, 1, 10, 10), nan), "not a finite number"),
           ("inf", setter((0, 2, 5, 5), inf), "not a finite number"),
           ("huge", setter((0, 0, 7, 7), 1e30), "beyond any atom's projected potential"),
           ("zeros", setter(Ellipsis, 0), "all zeros"),
           ("unwritten", unwritten, "declared but never written"),
           ("incomplete", no_mark, "no complete mark"))
    for tag, how, text in pot:
        path = spoiled(d, "pot.h5", f"pot_{tag}.h5", "potential", how)
        refused(problems, d, f"potential_file {tag}",
                cmd(A.ranks, cfg, ["output.file=out.h5", f"simulation.potential_file={path}"]), 4, text)
    sm = (("nan", setter((1, 5, 3, 3, 0), nan), "not a finite number"),
          ("gain", setter((0, 7, 3, 3, 1), 1e30), "more than came in"),
          ("zero_beam", setter((1, 20), 0), "all zeros, never written"),
          ("unwritten", unwritten, "declared but never written"),
          ("incomplete", no_mark, "no complete mark"))
    for tag, how, text in sm:
        path = spoiled(d, "sm.h5", f"sm_{tag}.h5", "smatrix", how)
        refused(problems, d, f"smatrix_file {tag}",
                cmd(A.ranks, cfg, ["output.file=out.h5", f"simulation.smatrix_file={path}"] + prism), 4, text)
    # special files: refused at once, never opened blocking
    fifo = os.path.join(d, "stored.fifo")
    os.mkfifo(fifo)
    for key, extra in (("potential_file", []), ("smatrix_file", prism)):
        for path, text in ((fifo, "is a pipe"), ("/dev/zero", "is a device"), (d, "is a directory")):
            refused(problems, d, f"{key} = {path}",
                    cmd(A.ranks, cfg, ["output.file=out.h5", f"simulation.{key}={path}"] + extra), 4, text, timeout=30)
    expect(problems, stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was removed or replaced")
    # a FIFO under the checkpoint state's name (a campaign killed after its first unit was stored)
    series = ["output.file=camp.h5", "series.tilt_x=0,2", "compute.fp_groups=1",  # two units, one after the other
              "output.checkpoint_interval=0"]  # a store after each
    env = dict(os.environ, STEMSIM_TEST_KILL_AFTER_UNITS="1")
    rc, _, _ = run(cmd(A.ranks, cfg, series), cwd=d, env=env)
    for left in leftovers(d):  # the killed job's temporary: SIGKILL leaves it (reported by the next run)
        os.remove(os.path.join(d, left))
    ckdir = os.path.join(d, "camp.h5.checkpoint")
    state = os.path.join(ckdir, "state")
    if rc == 0 or not os.path.isfile(state) or state_units(ckdir) != [0]:
        problems.append(f"the killed campaign exited {rc} without leaving {state} holding unit 0")
    else:
        os.remove(state)
        os.mkfifo(state)
        rc, _, err = run(cmd(A.ranks, cfg, series), cwd=d, timeout=60)
        expect(problems, rc == 6 and "camp.h5.checkpoint/state" in err and "is a pipe" in err,
               f"FIFO as the checkpoint's state: exit {rc}, expected 6 naming the pipe (124 = it blocked)")
        expect(problems, stat.S_ISFIFO(os.lstat(state).st_mode), "the FIFO state was removed or replaced")
        expect(problems, not os.path.exists(os.path.join(d, "camp.h5")), "camp.h5 was published")
    if A.ranks == 1:  # the converter runs on one rank
        for path, text in ((fifo, "is a pipe"), ("/dev/zero", "is a device"), (d, "is a directory")):
            refused(problems, d, f"--from-prismatic {path}", [A.stemsim, "--from-prismatic", path], 4, text, timeout=30)
    expect(problems, not leftovers(d), f"temporaries left: {leftovers(d)}")
    return finish(problems, "bad_imports")


def s_stored_keys():
    d = fresh("stored_keys")
    cfg = local_config(d)
    problems = []
    prism = stored_files(d, cfg)
    if prism is None:
        log("SKIP h5py not available")
        return 77
    pot = ["output.file=out.h5", "simulation.potential_file=pot.h5"]
    for key, value, was in (("sample.tilt_x", "5", "0"), ("sample.rotation_z", "10", "0"),
                            ("simulation.parametrisation", "lobato", "kirkland"),
                            ("simulation.projection", "finite", "infinite"), ("simulation.thermal", "true", "false"),
                            ("simulation.potential_radius", "3", "2")):
        name = key.split(".")[1]
        refused(problems, d, f"potential_file with {key}={value}", cmd(A.ranks, cfg, pot + [f"{key}={value}"]), 3,
                f"{name} = {value}, but [simulation] potential_file {os.path.join(d, 'pot.h5')} was written with "
                f"{name} = {was}")
    sm = ["output.file=out.h5", "simulation.smatrix_file=sm.h5"] + prism
    for key, value, text in (("sample.tilt_y", "3", "was written with tilt_y = 0"),
                             ("simulation.seed", "12", "was written with seed = 11"),
                             ("simulation.transmission_oversampling", "2", "was made with 4")):
        refused(problems, d, f"smatrix_file with {key}={value}", cmd(A.ranks, cfg, sm + [f"{key}={value}"]), 3, text)
    # what the writers had (given explicitly, or another seed without thermal displacements): accepted
    for what, argv in (("potential_file, same keys", pot + ["sample.tilt_x=0", "simulation.seed=99"]),
                       ("smatrix_file, same keys", sm + ["simulation.transmission_oversampling=4"])):
        rc, _, _ = run(cmd(A.ranks, cfg, argv), cwd=d)
        expect(problems, rc == 0 and complete(os.path.join(d, "out.h5")), f"{what}: exit {rc}, expected 0")
        if os.path.exists(os.path.join(d, "out.h5")):
            os.remove(os.path.join(d, "out.h5"))
    return finish(problems, "stored_keys")


def s_result_check():
    d = fresh("result_check")
    cfg = local_config(d)
    problems = []
    for hook, text in (("nan", "not a finite number"), ("zero", "lost all its intensity"), ("gain", "gained intensity")):
        env = dict(os.environ, STEMSIM_TEST_POISON_RESULT=hook)
        refused(problems, d, f"poisoned result ({hook})", cmd(A.ranks, cfg, ["output.file=out.h5"]), 9, text, env=env)
    env = dict(os.environ, STEMSIM_TEST_POISON_RESULT="nan")
    before = set(os.listdir(d))
    rc, _, err = run(cmd(A.ranks, cfg, ["output.file=camp.h5", "series.defocus=0,10"]), cwd=d, env=env)
    expect(problems, rc == 9 and "(series point 0)" in err, f"poisoned series campaign: exit {rc}, expected 9")
    expect(problems, not os.path.exists(os.path.join(d, "camp.h5")), "the poisoned campaign published camp.h5")
    expect(problems, sorted(set(os.listdir(d)) - before) in ([], ["camp.h5.checkpoint"]),
           f"poisoned campaign left {sorted(set(os.listdir(d)) - before)} (only its checkpoint may stay)")
    expect(problems, not leftovers(d), f"temporaries left: {leftovers(d)}")
    return finish(problems, "result_check")


# ------------------------------------------------- full disks and EMD conversions

class Tmpfs:
    """A small tmpfs at d/tiny (None when mount is not permitted), unmounted on exit."""
    def __init__(self, d, kib):
        self.path = os.path.join(d, "tiny")
        os.mkdir(self.path)
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", self.path], capture_output=True,
                           text=True)
        self.ok = m.returncode == 0
        self.why = m.stderr.strip() or "not permitted"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.ok:
            subprocess.run(["umount", self.path])


def fill(path, leave_kib=0):
    """Fill path's file system with path/filler (the test's own file), leaving leave_kib free."""
    filler = os.path.join(path, "filler")
    with open(filler, "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"\xa5" * 4096)
        except OSError:
            pass
    if leave_kib:
        os.truncate(filler, max(0, os.path.getsize(filler) - leave_kib * 1024))
    return os.path.getsize(filler)


def crashed(rc, err):
    return rc < 0 or rc >= 128 and rc != 143 or "Segmentation" in err or "signal 11" in err


def disk_full_checks(problems, what, rc, err, mnt, filler_size, allowed=()):
    expect(problems, rc == 6, f"{what}: exit {rc}, expected 6 (a crash is 139 or < 0)")
    expect(problems, not crashed(rc, err), f"{what}: crashed")
    expect(problems, "no space left" in err.lower(), f"{what}: the message does not say 'no space left'")
    expect(problems, len(error_lines(err)) == 1, f"{what}: {len(error_lines(err))} error lines, expected 1")
    left = sorted(f for f in os.listdir(mnt) if f != "filler" and f not in allowed)
    expect(problems, not left, f"{what}: left on the full disk: {left}")
    f = os.path.join(mnt, "filler")
    expect(problems, os.path.exists(f) and os.path.getsize(f) == filler_size, f"{what}: the filler was changed")


def campaign_config(d):
    """camp.ini: the small case as a two-tilt campaign (case.ini is written again plain)."""
    camp = os.path.join(d, "camp.ini")
    os.rename(local_config(d, "\n[series]\ntilt_x = 0 4\n"), camp)
    local_config(d)
    return camp


def s_full_disk_already():
    d = fresh("full_disk_already")
    cfg, camp = local_config(d), campaign_config(d)
    problems = []
    # (what, tmpfs KiB, KiB left free, config, sets): full; room for the native file but not the EMD copy;
    # a campaign on a full disk
    cases = (("full", 2048, 0, cfg, []),
             ("full, layout = emd", 2048, 0, cfg, ["output.layout=emd"]),
             ("room for the native file only, layout = emd", 512, 220, cfg, ["output.layout=emd"]),
             ("nearly full", 256, 150, cfg, []),
             ("full, campaign", 2048, 0, camp, []))
    for what, kib, leave, config, sets in cases:
        with Tmpfs(d, kib) as t:
            if not t.ok:
                log(f"SKIP full_disk_already: cannot mount a small tmpfs here ({t.why})")
                return 77
            size = fill(t.path, leave)
            # the dry run gives the real run's verdict, and writes nothing
            rc, _, err = run(cmd(A.ranks, config, [f"output.file={t.path}/out.h5"] + sets, ["--dry-run"]), cwd=d,
                             timeout=90)
            disk_full_checks(problems, what + " (--dry-run)", rc, err, t.path, size)
            rc, _, err = run(cmd(A.ranks, config, [f"output.file={t.path}/out.h5"] + sets), cwd=d, timeout=90)
            disk_full_checks(problems, what, rc, err, t.path, size)
        os.rmdir(t.path)
    return finish(problems, "full_disk_already")


def s_checkpoint_room():
    """A campaign whose output fits its disk but whose checkpoint (the state twice while a store
    replaces it) does not: refused before computing (exit 6, naming the checkpoint and 'no space
    left'), by --dry-run too, nothing left on the disk; with just enough room it runs and publishes."""
    d = fresh("checkpoint_room")
    camp = local_config(d, "\n[series]\ntilt_x = 0 4 8 12\n")
    sets = ["simulation.frozen_phonons=2", "simulation.thermal=true", "output.checkpoint_interval=0"]
    rc, out, err = run(cmd(A.ranks, camp, [f"output.file={d}/probe.h5"] + sets, ["--dry-run"]), cwd=d, timeout=90)
    m_out = re.search(r"output: about ([0-9.]+) MiB", out)
    m_state = re.search(r"its state \(every point's exact sums\) is ([0-9.]+) MiB", out)
    problems = []
    if rc != 0 or not m_out or not m_state:
        log(out + err)
        return finish([f"the dry run: exit {rc}, no output or state size printed"], "checkpoint_room")
    out_kib, state_kib = float(m_out.group(1)) * 1024, float(m_state.group(1)) * 1024
    log(f"checkpoint_room: output about {out_kib:.0f} KiB, state {state_kib:.0f} KiB")
    # the output's reserve (and its 1 MiB margin) fits, the state twice does not; then room for all
    small = int(out_kib + 1024 + 1.3 * state_kib + 64)
    large = int(out_kib + 1024 + 2 * state_kib + 1024)
    for what, kib, want in (("too small", small, 6), ("just large enough", large, 0)):
        with Tmpfs(d, kib) as t:
            if not t.ok:
                log(f"SKIP checkpoint_room: cannot mount a small tmpfs here ({t.why})")
                return 77
            argv = [f"output.file={t.path}/out.h5"] + sets
            rc, _, err = run(cmd(A.ranks, camp, argv, ["--dry-run"]), cwd=d, timeout=90)
            expect(problems, rc == want, f"{what} (--dry-run, {kib} KiB): exit {rc}, expected {want}")
            rc, out, err = run(cmd(A.ranks, camp, argv), cwd=d, timeout=120)
            expect(problems, rc == want, f"{what} ({kib} KiB): exit {rc}, expected {want}")
            if want:
                expect(problems, "no space left" in err.lower() and "checkpoint" in err,
                       f"{what}: the message does not name the checkpoint's missing space")
                expect(problems, "unit 1 of" not in out, f"{what}: units were computed before the refusal")
                left = sorted(os.listdir(t.path))
                expect(problems, not left, f"{what}: left on the disk: {left}")
            else:
                expect(problems, os.path.exists(os.path.join(t.path, "out.h5")), f"{what}: no output published")
                expect(problems, not os.path.exists(os.path.join(t.path, "out.h5.checkpoint")),
                       f"{what}: the checkpoint was not removed")
        os.rmdir(t.path)
    return finish(problems, "checkpoint_room")


def s_long_output_path():
    """An output path whose temporary Open MPI 4.1's MPI_File_open cannot hold (its sharedfp lockedfile
    component overflowed a fixed buffer at 250 characters: SIGABRT in the output's H5Fcreate, after all
    the computing, leaving a reserve and a temporary): refused before computing (exit 6, naming the
    limit), nothing left; given with --set, as the config line limit's message advises. A path just
    within the limit runs and publishes. (Issue 38 item 1.)"""
    d = fresh("long_output_path")
    config = local_config(d, "")
    problems = []
    name = "Si100_frozen_phonon_result.h5"
    for length, want, tag in ((250, 6, "a"), (200, 0, "b")):  # the output's path, in characters
        k = length - len(d) - 2 - len(name)
        if k < 1:
            log(f"the work directory's path is too long for a {length}-character output path: not tried")
            continue
        deep = os.path.join(d, tag * k)
        os.makedirs(deep, exist_ok=True)
        out = os.path.join(deep, name)
        rc, stdout, err = run(cmd(A.ranks, config, [f"output.file={out}"]), cwd=d, timeout=120)
        what = f"a {len(out)}-character output path"
        expect(problems, rc == want, f"{what}: exit {rc}, expected {want}")
        if want:
            expect(problems, "Open MPI's MPI-IO" in err and "at most" in err, f"{what}: the message names no limit")
            expect(problems, "unit 1 of" not in stdout and "probes" not in stdout.split("error")[0][-200:],
                   f"{what}: computed before the refusal")
            left = sorted(os.listdir(deep))
            expect(problems, not left, f"{what}: left {left}")
        else:
            expect(problems, os.path.exists(out), f"{what}: not published")
    return finish(problems, "long_output_path")


def s_reserve_estimate():
    """The output's space reserve (--dry-run's "output: about X MiB") holds the file it protects
    and is within 10% of it: 4D patterns (float32), a series of many points, and the EMD layout
    of many points (Prismatic's groups per point)."""
    d = fresh("reserve_estimate")
    problems = []
    series = "\n[series]\ndefocus = -64:2:64\n"
    cases = (("4D, one point", "", ["scan.step=0.05"]),
             ("a series of 65 points", series, ["detector.save_4d=false", "scan.step=0.1"]),
             ("a series of 65 points, layout = emd", series,
              ["detector.save_4d=false", "scan.step=0.1", "output.layout=emd"]),
             ("4D, 9 points, layout = emd", "\n[series]\ndefocus = -40:10:40\n", ["output.layout=emd"]))
    for k, (what, extra, sets) in enumerate(cases):
        cfg = local_config(d, extra)
        argv = [f"output.file={d}/out{k}.h5"] + sets
        rc, out, err = run(cmd(A.ranks, cfg, argv, ["--dry-run"]), cwd=d, timeout=90)
        m = re.search(r"output: about ([0-9.]+) MiB", out)
        rc2, _, _ = run(cmd(A.ranks, cfg, argv), cwd=d, timeout=240)
        path = os.path.join(d, f"out{k}.h5")
        if rc or rc2 or not m or not os.path.exists(path):
            problems.append(f"{what}: dry run exit {rc}, run exit {rc2}, estimate printed: {bool(m)}")
            continue
        est, size = float(m.group(1)) * 1048576, os.path.getsize(path)
        log(f"reserve_estimate: {what}: estimate {est / 1048576:.2f} MiB, file {size / 1048576:.2f} MiB, "
            f"ratio {est / size:.3f}")
        expect(problems, size <= est <= 1.10 * size, f"{what}: the reserve {est:.0f} B is not within "
               f"[1, 1.10] x the file's {size} B")
    return finish(problems, "reserve_estimate")


def wait_line(p, text, seconds):
    """Read p's stderr until a line holds text (True) or p ends / time runs out; the lines read."""
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(p.stderr, selectors.EVENT_READ)
    seen, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        if not sel.select(timeout=0.2):
            continue
        line = p.stderr.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return True, seen
    return False, seen


def paused_run(argv, d, stage, action, seconds=4):
    """Run argv with the test pause at stage; do action() once rank 0 pauses there. (rc, out, err, paused)"""
    env = dict(os.environ, STEMSIM_TEST_PAUSE_AT=stage, STEMSIM_TEST_PAUSE_S=str(seconds))
    log("$ STEMSIM_TEST_PAUSE_AT=" + stage + " " + " ".join(shlex.quote(c) for c in argv))
    p = subprocess.Popen(argv, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    paused, seen = wait_line(p, f"pausing {seconds:.1f} s at {stage}", 60)
    if paused:
        action(p)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += "(timed out: hung)"
    err = "".join(seen) + err
    log(f"  -> exit {p.returncode}\n  stderr: {err.strip()[:900]}")
    return p.returncode, out, err, paused


def s_full_disk_late():
    d = fresh("full_disk_late")
    cfg, camp = local_config(d), campaign_config(d)
    problems = []
    for what, config in (("single run", cfg), ("campaign", camp)):
        with Tmpfs(d, 4096) as t:
            if not t.ok:
                log(f"SKIP full_disk_late: cannot mount a small tmpfs here ({t.why})")
                return 77
            size = []
            rc, _, err, paused = paused_run(cmd(A.ranks, config, [f"output.file={t.path}/out.h5"]), d, "write",
                                            lambda p: size.append(fill(t.path)))
            expect(problems, paused, f"{what}: the job never paused before its final write (test hook missing?)")
            ck = os.path.join(t.path, "out.h5.checkpoint")
            disk_full_checks(problems, what, rc, err, t.path, size[0] if size else -1,
                             allowed=("out.h5.checkpoint",) if config == camp else ())
            if config == camp:  # the end's store (before the output is written) holds both units
                units = state_units(ck) if os.path.isdir(ck) else None
                expect(problems, units == [0, 1], f"campaign: the checkpoint's state holds {units}, expected [0, 1]")
                if os.path.exists(os.path.join(t.path, "filler")):
                    os.unlink(os.path.join(t.path, "filler"))
                rc, _, err = run(cmd(A.ranks, config, [f"output.file={t.path}/out.h5"]), cwd=d)
                expect(problems, rc == 0 and "resuming: 2 of 2 units" in err + _,
                       f"campaign: the rerun after freeing space: exit {rc}, expected 0 resuming both units")
                expect(problems, sorted(os.listdir(t.path)) == ["out.h5"], f"campaign rerun left {os.listdir(t.path)}")
        os.rmdir(t.path)
    # the disk filled by another job while the EMD copy is written: the reserved space finishes it
    with Tmpfs(d, 4096) as t:
        size = []
        rc, _, err, paused = paused_run(cmd(A.ranks, cfg, [f"output.file={t.path}/out.h5", "output.layout=emd"]), d,
                                        "emd", lambda p: size.append(fill(t.path)))
        expect(problems, paused, "emd: the job never paused in the conversion")
        expect(problems, rc == 0 and not crashed(rc, err), f"emd, disk filled during the conversion: exit {rc}, expected 0")
        expect(problems, sorted(os.listdir(t.path)) == ["filler", "out.h5"], f"emd: left {os.listdir(t.path)}")
        if rc == 0:
            expect(problems, complete(os.path.join(t.path, "out.h5")) is not False, "emd: out.h5 is not complete")
    os.rmdir(t.path)
    return finish(problems, "full_disk_late")


def s_emd_signals():
    problems = []
    for sig, campaign in ((signal.SIGTERM, False), (signal.SIGUSR1, False), (signal.SIGTERM, True)):
        what = f"{sig.name}{', campaign' if campaign else ''}"
        d = fresh(f"emd_signals_{sig.name}_{int(campaign)}")
        cfg = campaign_config(d) if campaign else local_config(d)

        def send(p):
            # SIGUSR1 to every rank (as Slurm delivers it), SIGTERM to stemsim or mpiexec (as a user does)
            targets = [p.pid] if A.ranks == 1 or sig != signal.SIGUSR1 else [pid for pid, _ in ranks_alive(d)]
            log(f"  kill -{sig.name} {targets}")
            for t in targets:
                os.kill(t, sig)
        rc, out, err, paused = paused_run(cmd(A.ranks, cfg, ["output.file=out.h5", "output.layout=emd"]), d, "emd",
                                          send, seconds=8)
        expect(problems, paused, f"{what}: the job never paused in the conversion (test hook missing?)")
        want = 75 if campaign else 128 + sig
        if A.ranks == 1 or campaign and sig == signal.SIGUSR1:
            expect(problems, rc == want, f"{what}: exit {rc}, expected {want}")
        else:
            expect(problems, rc != 0 and not crashed(rc, err) or rc == want, f"{what}: exit {rc}")
        expect(problems, "received SIG" in err, f"{what}: no 'received SIG...' line")
        expect(problems, err.count(": stopping at") == 1, f"{what}: the stop is announced {err.count(': stopping at')} times")
        expect(problems, "error" not in err.lower() or A.ranks > 1, f"{what}: an error message after a signal")
        expect(problems, not os.path.exists(os.path.join(d, "out.h5")), f"{what}: out.h5 appeared")
        expect(problems, not leftovers(d), f"{what}: temporaries left: {leftovers(d)}")
        if campaign:  # stopped after the end's store: the state holds both units
            ck = os.path.join(d, "out.h5.checkpoint")
            units = state_units(ck) if os.path.isdir(ck) else None
            expect(problems, units == [0, 1], f"{what}: the checkpoint's state holds {units}, expected [0, 1]")
        gone = wait_for(lambda: not ranks_alive(d), 2.0)
        expect(problems, gone, f"{what}: ranks still alive 2 s after the job ended")
    return finish(problems, "emd_signals")


SCENARIOS = {k[2:]: v for k, v in globals().items() if k.startswith("s_")}


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpi-flag", action="append", default=[])
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--count", type=int, default=0,
                    help="concurrent_singletons: runs in each of the two loops (100; 25 under AddressSanitizer)")
    A = ap.parse_args()
    A.root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    A.stemsim = os.path.abspath(A.stemsim)
    os.makedirs(A.workdir, exist_ok=True)
    return SCENARIOS[A.scenario]()


if __name__ == "__main__":
    sys.exit(main())
