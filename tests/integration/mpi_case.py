#!/usr/bin/env python3
"""Whole-program MPI test driver for ctest (tests/integration.cmake).

  mpi_case.py compare --name N [--set S.K=V ...] --run NP[:S.K=V,...] --run ...
      Runs stemsim once per --run (NP ranks; the extra overrides apply to that
      run only; the shared --set overrides to all), then compares every run's
      output with the first run's through check_h5.py compare (every dataset:
      2D images, 3D rings, 4D cbed, DPC, axes) at --tol (default 1e-6).
      --expect-log K:TEXT runs run K with -v and requires TEXT in its log.
  mpi_case.py fail --name N --ranks NP --fail-rank R [--set ...] [--max-seconds T]
              [--fault SITE:R] [--expect TEXT ...]
      Runs with STEMSIM_TEST_FAIL_RANK=R (or STEMSIM_TEST_FAULT=SITE:R, a
      failure at SITE on rank R) under `timeout`: the job must exit non-zero,
      within T seconds, naming the injected failure on stderr exactly once
      (plus every --expect text), and leave neither the output file nor a
      temporary <file>.*.incomplete behind.

Common: --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --check check_h5.py
        --config INI --workdir DIR.
Exit: 0 pass, 1 fail, 77 skip (h5py missing).
"""
import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import time


def parse_run(spec):
    np_, _, rest = spec.partition(":")
    sets = [s for s in rest.split(",") if s] if rest else []
    return int(np_), sets


def command(args, ranks, sets, out, verbose=False):
    cmd = [args.mpiexec] + args.mpi_flag + ["-np", str(ranks), args.stemsim, "-v" if verbose else "-q", args.config]
    for s in args.set + sets + [f"output.file={out}", "output.overwrite=false"]:
        cmd += ["--set", s]
    return cmd


def run(cmd, env, timeout):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", e.stderr or ""
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        err = err.decode(errors="replace") if isinstance(err, bytes) else err
    dt = time.monotonic() - t0
    if out.strip():
        print(out.rstrip())
    if err.strip():
        print("stderr:\n" + err.rstrip())
    print(f"  -> exit {rc} in {dt:.1f} s", flush=True)
    return rc, err, dt, out


def fresh_dir(args):
    d = os.path.join(args.workdir, args.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def check_total_channel(path):
    """/total_intensity against /rings summed over rings (both from the same
    detector pixels): None without h5py, '' if fine, else the problem."""
    try:
        import h5py
        import numpy as np
    except ImportError:
        return None
    with h5py.File(path, "r") as f:
        if "total_intensity" not in f or "rings" not in f:
            return "total_intensity or rings missing"
        total, rings = f["total_intensity"][()], f["rings"][()].sum(axis=-1)
    if not np.allclose(total, rings, rtol=1e-9, atol=0):
        return f"total_intensity differs from the summed rings by up to {np.abs(total - rings).max():.3g}"
    if not (total.min() > 0 and total.max() <= 1 + 1e-3):
        return f"total_intensity outside (0, 1]: [{total.min():.6f}, {total.max():.6f}]"
    with h5py.File(path, "r") as f:
        env = f.attrs.get("environment", None)
        if "pacbed" in f and "cbed" in f:  # the mean pattern is the mean of the 4D patterns over the scan
            pac, mean = f["pacbed"][()], f["cbed"][()].astype(np.float64).mean(axis=(0, 1))
            if pac.shape != mean.shape or not np.allclose(pac, mean, rtol=1e-5, atol=1e-7 * np.abs(mean).max()):
                return f"pacbed differs from the mean of /cbed over the scan (shapes {pac.shape}, {mean.shape})"
        if "segments" in f:  # a segmented detector on ring edges: its segments sum to those rings
            seg, a = f["segments"][()], f["segments"].attrs
            w = f["rings"].attrs["ring_width_mrad"]
            lo, hi = a["inner_mrad"] / w, a["outer_mrad"] / w
            if abs(lo - round(lo)) < 1e-9 and abs(hi - round(hi)) < 1e-9:
                ring_sum = f["rings"][()][..., int(round(lo)):int(round(hi))].sum(axis=-1)
                if not np.allclose(seg.sum(axis=(2, 3)), ring_sum, rtol=1e-9, atol=1e-15):
                    return f"segments differ from their rings by {np.abs(seg.sum(axis=(2, 3)) - ring_sum).max():.3g}"
    want = "STEMSIM_KIRKLAND=" + os.environ.get("STEMSIM_KIRKLAND", "")
    if env is None or (os.environ.get("STEMSIM_KIRKLAND") and want not in env.splitlines()):
        return f"the environment attribute does not record {want}: {env!r}"
    return ""


OPTIONAL = ("segments", "dpc_segments_x", "dpc_segments_y", "pacbed", "exit_wave", "hrtem", "cbed_pattern",
            "standard_error")


def optional_datasets(path):
    """The optional outputs this file has (compared whenever the reference has them)."""
    try:
        import h5py
    except ImportError:
        return []
    with h5py.File(path, "r") as f:
        return [n for n in OPTIONAL if n in f]


def do_compare(args):
    d = fresh_dir(args)
    outs, failed = [], 0
    expect = [e.partition(":")[::2] for e in args.expect_log]  # (run index, text)
    for k, spec in enumerate(args.run):
        ranks, sets = parse_run(spec)
        out = os.path.join(d, f"run{k}_np{ranks}.h5")
        texts = [t for i, t in expect if int(i) == k]
        rc, err, _, log = run(command(args, ranks, sets, out, bool(texts)), dict(os.environ), args.timeout)
        if rc != 0 or not os.path.exists(out):
            print(f"FAIL run {k} ({spec}): exit {rc}, output {'present' if os.path.exists(out) else 'missing'}")
            return 1
        for t in texts:
            if t not in log + err:
                print(f"FAIL run {k} ({spec}): its -v log does not say {t!r}")
                return 1
            print(f"ok   run {k} says {t!r}")
        left = glob.glob(glob.escape(out) + "*.incomplete")
        if left:
            print(f"FAIL run {k}: {left} left behind")
            return 1
        outs.append((spec, out))
    ref_spec, ref = outs[0]
    bad = check_total_channel(ref)
    if bad is not None:
        if bad:
            print("FAIL " + bad)
            return 1
        print("ok   total_intensity: equals the sum of /rings per probe and lies in (0, 1]; environment recorded"
              + "".join(f"; {n} checked" for n in optional_datasets(ref) if n in ("segments", "pacbed")))
    for spec, out in outs[1:]:
        print(f"== {spec}  vs  {ref_spec}", flush=True)
        # listing the datasets makes a missing one (2D images, 3D rings, 4D cbed, DPC, segments) a failure
        four_d = [] if "cbed_pattern" in optional_datasets(ref) else ["cbed"]  # algorithm = cbed: /cbed_pattern
        names = ",".join(["images,rings,dpc_com_x,dpc_com_y,total_intensity,axes"] + four_d + optional_datasets(ref))
        p = subprocess.run([sys.executable, args.check, "compare", out, ref, "--tol", str(args.tol), "--datasets", names])
        if p.returncode == 77:
            return 77
        failed += p.returncode != 0
    print(f"{args.name}: {len(outs) - 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


def do_fail(args):
    d = fresh_dir(args)
    out = os.path.join(d, "failed.h5")
    env = dict(os.environ)
    if args.fault:
        env["STEMSIM_TEST_FAULT"] = args.fault
    else:
        env["STEMSIM_TEST_FAIL_RANK"] = str(args.fail_rank)
    cmd = ["timeout", "-k", "5", str(args.max_seconds)] + command(args, args.ranks, [], out)
    rc, err, dt, _ = run(cmd, env, args.max_seconds + 30)
    problems = []
    if rc == 0:
        problems.append("exited 0 although a rank failed")
    if rc in (124, 137):
        problems.append(f"hung: killed by timeout after {args.max_seconds} s")
    if "injected failure" not in err:
        problems.append("stderr does not report the injected failure")
    elif err.count("stemsim: error") != 1:
        problems.append(f"{err.count('stemsim: error')} error messages, expected one")
    for text in args.expect:
        if text not in err:
            problems.append(f"stderr lacks '{text}'")
    for leftover in [out] + glob.glob(glob.escape(out) + "*.incomplete"):
        if os.path.exists(leftover):
            problems.append(f"left {leftover} behind")
    for p in problems:
        print("FAIL " + p)
    print(f"{args.name}: exit {rc} after {dt:.1f} s: {'FAIL' if problems else 'PASS'}")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["compare", "fail"])
    ap.add_argument("--name", required=True)
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpi-flag", action="append", default=[])
    ap.add_argument("--check", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--run", action="append", default=[])
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--fail-rank", type=int, default=1)
    ap.add_argument("--max-seconds", type=int, default=60)
    ap.add_argument("--fault", default="")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--expect-log", action="append", default=[], metavar="K:TEXT",
                    help="compare: run K (from 0) is run with -v and its log must hold TEXT")
    args = ap.parse_args()
    if args.mode == "compare":
        if len(args.run) < 2:
            ap.error("compare needs at least two --run")
        return do_compare(args)
    return do_fail(args)


if __name__ == "__main__":
    sys.exit(main())
