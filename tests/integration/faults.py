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
  dry_run           --dry-run exits as the real run would (0, 5, 6), writes nothing
  odd_inputs        a duplicated atom warns with its lines; <(...) and a FIFO as
                    config are refused at once; /dev/stdin from a file works;
                    a relative output path is relative to the current directory
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
import shlex
import signal
import socket
import shutil
import stat
import subprocess
import sys
import time

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
    procs = [subprocess.Popen(argv, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
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
    expect(problems, rc == 0, f"duplicate atom: exit {rc}, expected 0 (a warning)")
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
            rc, _, err = run(cmd(A.ranks, config, [f"output.file={t.path}/out.h5"] + sets), cwd=d, timeout=90)
            disk_full_checks(problems, what, rc, err, t.path, size)
        os.rmdir(t.path)
    return finish(problems, "full_disk_already")


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
            if config == camp:
                units = sorted(f for f in os.listdir(ck)) if os.path.isdir(ck) else []
                expect(problems, "unit_0000000" in units and "unit_0000001" in units,
                       f"campaign: the checkpoint lost its units: {units}")
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
        if campaign:
            ck = os.path.join(d, "out.h5.checkpoint")
            units = sorted(os.listdir(ck)) if os.path.isdir(ck) else []
            expect(problems, "unit_0000000" in units and "unit_0000001" in units, f"{what}: checkpoint units lost: {units}")
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
    A = ap.parse_args()
    A.root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    A.stemsim = os.path.abspath(A.stemsim)
    os.makedirs(A.workdir, exist_ok=True)
    return SCENARIOS[A.scenario]()


if __name__ == "__main__":
    sys.exit(main())
