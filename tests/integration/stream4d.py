#!/usr/bin/env python3
"""4D patterns streamed to the output in blocks of probes (ctest label `mpi`).

  stream4d.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini
              --workdir DIR --algorithm multislice|prism

The small case over a fine scan with three thermal configurations: its 4D patterns held
whole (no limit) are the reference. Then, with [compute] max_memory leaving the results a
quarter of what the whole patterns need, the plan streams them (it says so, in two or more
blocks), the measured peak stays within the limit and below the plan's estimate, and every
dataset equals the reference bit for bit; /cbed is chunked in whole patterns. On 2 ranks
(one group, and a group per rank) with a forced probe_block, the same bits. A SIGTERM while
the blocks run leaves neither the output nor a temporary. save_potential / save_smatrix and
potential_file / smatrix_file in blocks equal their whole runs. Checkpointed, a kill -9 (1 rank)
and a SIGTERM (2 ranks) part way: the rerun resumes at a block, equals the reference bit for
bit and leaves only the output. Exit: 0 pass, 1 fail, 77 skip.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import time

import itest

A = None


def datasets(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out


def differences(ref, path):
    import numpy as np
    got = datasets(path)
    bad = [k for k in ref if k not in got]
    for k, v in ref.items():
        if k in got and getattr(v, "dtype", None) is not None and v.dtype.kind in "fc":
            if v.shape != got[k].shape or not np.array_equal(v, got[k], equal_nan=True):
                bad.append(k)
    return bad


def gib(pattern, log):
    m = re.search(pattern, log)
    if not m:
        print(log)
        raise SystemExit("FAIL the log has no %r" % pattern)
    return float(m.group(1))


def launch(ranks, name, extra, delay):
    base = [A.stemsim] if ranks == 1 else [A.mpiexec] + A.mpi_flag + ["-np", str(ranks), A.stemsim]
    return subprocess.Popen(base + [A.ini, "--set", "output.file=%s.h5" % name] + extra, cwd=A.workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, STEMSIM_TEST_UNIT_DELAY=str(delay)))


def stopped_and_resumed(ref):
    """[output] checkpoint = true: a kill -9 (1 rank) and a SIGTERM (2 ranks, exit 75) after some
    blocks were stored; the rerun resumes at a block and equals the whole run bit for bit, and
    leaves only the output."""
    problems = []
    keys = ["--set", "output.checkpoint=true", "--set", "output.checkpoint_interval=0", "--set",
            "detector.probe_block=150"]
    for ranks, sig, expect in ((1, signal.SIGKILL, -signal.SIGKILL), (2, signal.SIGTERM, 75)):
        name = "resumed%d" % ranks
        p = launch(ranks, name, keys, 0.5)
        time.sleep(4)
        for pid in ([p.pid] if ranks == 1 else itest.rank_pids(p.pid)):  # as a batch system signals the ranks
            os.kill(pid, sig)
        out, _ = p.communicate(timeout=120)
        kept = os.path.join(A.workdir, name + ".h5.checkpoint", "patterns.h5")
        if p.returncode != expect or not os.path.exists(kept):
            print(out)
            problems.append("%d rank(s), signal %d: exit %d (expected %d), patterns kept: %s" %
                            (ranks, sig, p.returncode, expect, os.path.exists(kept)))
            continue
        log = itest.run(A, ranks, keys, name)
        m = re.search(r"resuming: (\d+) of (\d+) 4D blocks done", log)
        if not m or int(m.group(1)) < 1 or int(m.group(1)) >= int(m.group(2)):
            problems.append("%d rank(s): the rerun did not resume part way (%s)" % (ranks, m.group(0) if m else log))
        bad = differences(ref, os.path.join(A.workdir, name + ".h5"))
        if bad:
            problems.append("%d rank(s), resumed: differs in %s" % (ranks, ", ".join(bad)))
        left = sorted(os.path.basename(f) for f in glob.glob(os.path.join(A.workdir, name + ".h5*")))
        if left != [name + ".h5"]:
            problems.append("%d rank(s), resumed: left %s" % (ranks, left))
        else:
            print("%d rank(s): stopped by signal %d, resumed at block %s of %s: bitwise" %
                  (ranks, sig, m.group(1), m.group(2)))
    return problems


def main():
    global A
    A = itest.parse_args(("--algorithm", {"default": "multislice"}))
    if not itest.have_numpy_h5py():
        return 77
    itest.small_case(A, "stream4d_" + A.algorithm, replace=(
        ("algorithm = multislice", "algorithm = " + A.algorithm), ("x_end = 3.2", "x_end = 5.2"),
        ("y_end = 2.8", "y_end = 4.6"), ("step = 0.4", "step = 0.06"), ("frozen_phonons = 1", "frozen_phonons = 3"),
        ("thermal = false", "thermal = true"), ("batch_size = 2", "batch_size = 8")))
    problems = []
    dry = itest.run(A, 1, ["--dry-run"], "dry")
    total, whole = gib(r"memory per rank +([0-9.]+) GiB", dry), gib(r"held whole in memory \(([0-9.]+) GiB", dry)
    itest.run(A, 1, [], "whole")
    ref = datasets(os.path.join(A.workdir, "whole.h5"))
    # a limit that leaves the patterns a quarter of what they need whole (and the 32 MiB the plan
    # counts for the collective write's buffers, src/plan_blocks.c)
    limit = total - 0.75 * whole + 32 / 1024
    log = itest.run(A, 1, ["--set", "compute.max_memory=%.4f" % limit], "limited")
    m = re.search(r"streamed in (\d+) blocks of (\d+) probes", log)
    if not m or int(m.group(1)) < 2:
        problems.append("under max_memory = %.3f GiB the plan did not stream the patterns in blocks" % limit)
    peak, estimate = gib(r"peak resident memory per rank: [0-9.]+ to ([0-9.]+) GiB", log), gib(
        r"memory per rank +([0-9.]+) GiB", log)
    if peak > limit:
        problems.append("peak %.3f GiB beyond the limit %.3f GiB" % (peak, limit))
    if estimate < peak:
        problems.append("the plan's estimate %.3f GiB below the measured peak %.3f GiB" % (estimate, peak))
    print("limit %.3f GiB (whole patterns %.3f GiB): %s blocks, peak %.3f GiB, estimate %.3f GiB" %
          (limit, whole, m.group(1) if m else "no", peak, estimate))
    bad = differences(ref, os.path.join(A.workdir, "limited.h5"))
    if bad:
        problems.append("the streamed file differs from the whole one in " + ", ".join(bad))
    import h5py
    with h5py.File(os.path.join(A.workdir, "limited.h5"), "r") as f:
        chunks, shape = f["cbed"].chunks, f["cbed"].shape
    if not chunks or tuple(chunks[-2:]) != tuple(shape[-2:]):
        problems.append("/cbed chunks %s are not whole patterns of %s" % (chunks, shape))
    for groups in (1, 2):
        name = "ranks2_groups%d" % groups
        itest.run(A, 2, ["--set", "detector.probe_block=300", "--set", "compute.fp_groups=%d" % groups], name)
        bad = differences(ref, os.path.join(A.workdir, name + ".h5"))
        if bad:
            problems.append("2 ranks, fp_groups = %d: differs in %s" % (groups, ", ".join(bad)))
    # a focal spread (several plans per block) on the small scan: blocks of 2 probes = whole
    focal = ["--set", "probe.focal_spread=20", "--set", "probe.focal_points=3", "--set", "scan.x_end=3.2", "--set",
             "scan.y_end=2.8", "--set", "scan.step=0.4"]
    itest.run(A, 1, focal, "focal_whole")
    itest.run(A, 2, focal + ["--set", "detector.probe_block=2", "--set", "compute.fp_groups=1"], "focal_blocks")
    bad = differences(datasets(os.path.join(A.workdir, "focal_whole.h5")), os.path.join(A.workdir, "focal_blocks.h5"))
    if bad:
        problems.append("focal spread, blocks of 2 probes on 2 ranks: differs in " + ", ".join(bad))
    # stored inputs and outputs in blocks: save_potential / save_smatrix, then potential_file /
    # smatrix_file read back (PRISM: no transmission functions), each = the whole run
    small = ["--set", "scan.x_end=3.2", "--set", "scan.y_end=2.8", "--set", "scan.step=0.4"]
    key = "smatrix" if A.algorithm == "prism" else "potential"
    itest.run(A, 1, small + ["--set", "output.save_%s=true" % key], "stored_whole")
    itest.run(A, 1, small + ["--set", "output.save_%s=true" % key, "--set", "detector.probe_block=2"], "stored_blocks")
    stored = os.path.join(A.workdir, "stored_whole.h5")
    itest.run(A, 1, small + ["--set", "simulation.%s_file=%s" % (key, stored)], "read_whole")
    itest.run(A, 1, small + ["--set", "simulation.%s_file=%s" % (key, stored), "--set", "detector.probe_block=2"],
              "read_blocks")
    for a, b in (("stored_whole", "stored_blocks"), ("read_whole", "read_blocks")):
        bad = differences(datasets(os.path.join(A.workdir, a + ".h5")), os.path.join(A.workdir, b + ".h5"))
        if bad:
            problems.append("%s: blocks differ from the whole run in %s" % (b, ", ".join(bad)))
    # a stop while the blocks run: nothing under the final name, no temporary left
    cmd = [A.stemsim, A.ini, "--set", "output.file=stopped.h5", "--set", "detector.probe_block=150"]
    p = subprocess.Popen(cmd, cwd=A.workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(os.environ, STEMSIM_TEST_UNIT_DELAY="0.5"))
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=120)
    left = glob.glob(os.path.join(A.workdir, "stopped.h5*"))
    if p.returncode != 128 + signal.SIGTERM or left:
        print(out)
        problems.append("SIGTERM while streaming: exit %d (expected %d), left %s" %
                        (p.returncode, 128 + signal.SIGTERM, left))
    problems += stopped_and_resumed(ref)
    for msg in problems:
        print("FAIL " + msg)
    if not problems:
        print("PASS streamed 4D (%s): bitwise on 1 and 2 ranks, within the limit, nothing left at a stop, resumed "
              "after kill -9 and SIGTERM" %
              A.algorithm)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
