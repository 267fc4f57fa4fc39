"""What the whole-program test scripts share: their command line (--stemsim, --mpiexec,
--mpi-flag, --config small.ini, --workdir), the small case's config written into the
test's own work directory with absolute data paths, and stemsim run on N ranks that must
exit with an expected code."""
import argparse
import os
import subprocess


def parse_args(*extra):
    """The common options, plus extra (name, kwargs) pairs; args.repo is the repository."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpi-flag", action="append", default=[])
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    for name, kwargs in extra:
        ap.add_argument(name, **kwargs)
    args = ap.parse_args()
    args.repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(args.config)), "..", ".."))
    return args


def have_numpy_h5py():
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("SKIP h5py/numpy not available")
        return False
    return True


def small_case(args, subdir, name="small.ini", replace=(), append=""):
    """args.workdir becomes <workdir>/<subdir> and args.ini the small config there, its model
    path absolute, with each (old, new) of replace applied and append added."""
    args.workdir = os.path.join(os.path.abspath(args.workdir), subdir)
    os.makedirs(args.workdir, exist_ok=True)
    text = open(args.config).read().replace("xyz = ../../data/", "xyz = " + os.path.join(args.repo, "data") + "/")
    for old, new in replace:
        text = text.replace(old, new)
    args.ini = os.path.join(args.workdir, name)
    with open(args.ini, "w") as f:
        f.write(text + append)
    return args.ini


def run(args, ranks, extra, name, expect=0, ini=None, env=None):
    """stemsim on `ranks` ranks writing <name>.h5 in the work directory; its output, or
    SystemExit naming the command when the exit code is not `expect`."""
    base = [args.stemsim] if ranks == 1 else [args.mpiexec] + args.mpi_flag + ["-np", str(ranks), args.stemsim]
    cmd = base + [ini or args.ini, "--set", "output.file=%s.h5" % name] + list(extra)
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, cwd=args.workdir, capture_output=True, text=True, timeout=300, env=full_env)
    if p.returncode != expect:
        print(p.stdout + p.stderr)
        raise SystemExit("FAIL %s: exit %d, expected %d" % (" ".join(cmd), p.returncode, expect))
    return p.stdout + p.stderr
