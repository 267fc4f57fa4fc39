"""What the whole-program test scripts share: their command line (--stemsim, --mpiexec,
--mpi-flag, --config small.ini, --workdir), the small case's config written into the
test's own work directory with absolute data paths, and stemsim run on N ranks that must
exit with an expected code; and what a campaign checkpoint's state file holds (state_units)."""
import argparse
import os
import shutil
import struct
import subprocess

# A campaign checkpoint (version 2) keeps its running sums in <dir>/state: a 64-byte header
# (magic, format, units, identity hash, payload bytes, checksum, units held, reserved), then a
# byte per unit (1: its values are in the sums), then the payload. Little-endian.
STATE_HEADER = struct.Struct("<8sIIQQQII")
STATE_HEADER_BYTES = 64


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


def fresh_workdir(args, name):
    """args.workdir/<name>, emptied (a rerun starts clean), as args.workdir; args.ini: the config."""
    args.workdir = os.path.join(os.path.abspath(args.workdir), name)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    args.ini = os.path.abspath(args.config)


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


def state_info(ckdir):
    """The header of ckdir's state file as a dict (magic, format, n_units, identity, payload_bytes,
    checksum, n_done, done: the unit numbers it holds, size: the file's), or None when there is no
    state (nothing stored yet). A state that is not whole (size, magic, format, its count of units
    against its map) raises ValueError: stemsim only ever renames a whole one into place."""
    path = os.path.join(ckdir, "state")
    if not os.path.lexists(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < STATE_HEADER_BYTES:
        raise ValueError("%s: %d bytes, shorter than its header" % (path, len(data)))
    magic, fmt, n_units, identity, payload, checksum, n_done, _ = STATE_HEADER.unpack_from(data, 0)
    if magic != b"STEMSTAT" or fmt != 2:
        raise ValueError("%s: magic %r format %d, expected b'STEMSTAT' 2" % (path, magic, fmt))
    if len(data) != STATE_HEADER_BYTES + n_units + payload:
        raise ValueError("%s: %d bytes, its header says 64 + %d + %d" % (path, len(data), n_units, payload))
    done_map = data[STATE_HEADER_BYTES:STATE_HEADER_BYTES + n_units]
    if any(b not in (0, 1) for b in done_map):
        raise ValueError("%s: its done map holds bytes other than 0 and 1" % path)
    done = [u for u, b in enumerate(done_map) if b]
    if len(done) != n_done:
        raise ValueError("%s: the header counts %d units, its map %d" % (path, n_done, len(done)))
    return {"magic": magic, "format": fmt, "n_units": n_units, "identity": identity, "payload_bytes": payload,
            "checksum": checksum, "n_done": n_done, "done": done, "size": len(data)}


def state_units(ckdir):
    """The units ckdir's state holds (sorted unit numbers), or None when it has no state."""
    info = state_info(ckdir)
    return None if info is None else info["done"]


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
