#!/usr/bin/env python3
"""Inspect and compare stemsim output files (used by the tests).

  check_h5.py compare a.h5 b.h5 [--tol 1e-6] [--datasets images,rings,cbed]
      Prints the relative RMS difference ||a - b|| / ||b|| of each dataset
      both files hold (or only those under the listed top-level names); a
      standard error (standard_error/X) is measured against the values it belongs
      to, ||a - b|| / ||b's X||: it is known to the precision of the values, not
      to its own (a small difference of them).
      Exit 1 if any exceeds the tolerance, if shapes differ, if a listed
      dataset is missing, if nothing was compared, or if either file lacks
      the root attribute complete == 1.
  check_h5.py info a.h5 [--full]
      Prints the root attributes and every dataset's shape and type;
      exit 1 (after printing) when the file lacks complete == 1.

Exit codes: 0 pass, 1 fail, 2 usage, 77 h5py/numpy missing (ctest SKIP_RETURN_CODE).
"""
import argparse
import sys

try:
    import h5py
    import numpy as np
except ImportError as err:
    print(f"check_h5.py: skipped: {err} (Debian: apt install python3-h5py)", file=sys.stderr)
    sys.exit(77)

PROG = "check_h5.py"


class CheckError(Exception):
    pass


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def open_h5(path, need_complete):
    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise CheckError(f"cannot open {path}: {err}")
    if need_complete and int(f.attrs.get("complete", 0)) != 1:
        f.close()
        raise CheckError(f"{path} is incomplete (no root attribute complete=1)")
    return f


def datasets(f):
    """Paths of all datasets, in file order."""
    out = []
    f.visititems(lambda name, obj: out.append(name) if isinstance(obj, h5py.Dataset) else None)
    return out


def sum_squares(d):
    """||d||^2, streamed over the first axis."""
    if d.ndim == 0:
        return float(np.float64(d[()]) ** 2)
    step = max(1, (1 << 24) // max(1, d.size // max(1, d.shape[0])))
    return sum(float(np.sum(np.asarray(d[i:i + step], dtype=np.float64) ** 2)) for i in range(0, d.shape[0], step))


def rel_rms(da, db, scale=None):
    """||a - b|| / ||b|| (absolute when b is zero), streamed over the first axis; with
    scale (a dataset), ||a - b|| / ||scale||."""
    if da.shape == () or da.ndim == 0:
        a, b = np.float64(da[()]), np.float64(db[()])
        diff, ref = (a - b) ** 2, b ** 2
    else:
        diff = ref = 0.0
        step = max(1, (1 << 24) // max(1, da.size // max(1, da.shape[0])))
        for i in range(0, da.shape[0], step):
            a = np.asarray(da[i:i + step], dtype=np.float64)
            b = np.asarray(db[i:i + step], dtype=np.float64)
            diff += float(np.sum((a - b) ** 2))
            ref += float(np.sum(b ** 2))
    if scale is not None:
        ref = sum_squares(scale)
    return float(np.sqrt(diff / ref)) if ref > 0 else float(np.sqrt(diff))


def selected(path, wanted):
    return wanted is None or path.split("/")[0] in wanted


def compare(args):
    wanted = None
    if args.datasets:
        wanted = [w.strip().strip("/") for w in args.datasets.split(",") if w.strip()]
    failed = 0
    with open_h5(args.a, True) as fa, open_h5(args.b, True) as fb:
        la, lb = datasets(fa), datasets(fb)
        sb = set(lb)
        common = [p for p in la if p in sb and selected(p, wanted)]
        for p in [p for p in la if p not in sb and selected(p, wanted)]:
            print(f"  {p}: only in {args.a}")
        for p in [p for p in lb if p not in set(la) and selected(p, wanted)]:
            print(f"  {p}: only in {args.b}")
        for w in wanted or []:
            if not any(p.split("/")[0] == w for p in common):
                print(f"FAIL {w}: not present in both files")
                failed += 1
        for p in common:
            da, db = fa[p], fb[p]
            if da.shape != db.shape:
                print(f"FAIL {p}: shape {da.shape} vs {db.shape}")
                failed += 1
                continue
            values = p[len("standard_error/"):] if p.startswith("standard_error/") else None
            r = rel_rms(da, db, fb[values] if values is not None and values in fb else None)
            ok = np.isfinite(r) and r <= args.tol
            print(f"{'ok  ' if ok else 'FAIL'} {p}: relative rms {r:.3e} (tol {args.tol:g}) shape {da.shape}")
            failed += not ok
        if not common:
            print("FAIL nothing to compare")
            failed += 1
    print(f"{PROG}: {'FAIL' if failed else 'PASS'} ({len(common)} datasets compared, {failed} failed)")
    return 1 if failed else 0


def info(args):
    with open_h5(args.a, False) as f:
        print(f"{args.a}")
        print("root attributes:")
        for k, v in f.attrs.items():
            v = text(v)
            if isinstance(v, str):
                v = v.rstrip("\n")
                if "\n" in v and not args.full:
                    v = f"{v.split(chr(10))[0]!r} ... ({v.count(chr(10)) + 1} lines; --full shows all)"
                elif "\n" in v:
                    v = "\n    " + v.replace("\n", "\n    ")
            print(f"  {k} = {v}")
        print("datasets:")
        for p in datasets(f):
            d = f[p]
            attrs = ", ".join(f"{k}={text(v)}" for k, v in d.attrs.items())
            print(f"  /{p}  {d.dtype}  {d.shape}" + (f"  [{attrs}]" if attrs else ""))
        if int(f.attrs.get("complete", 0)) != 1:
            print(f"{PROG}: warning: {args.a} is incomplete (no complete=1)")
            return 1
    return 0


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Inspect and compare stemsim output files.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare", help="relative RMS difference of common datasets")
    c.add_argument("a")
    c.add_argument("b", help="reference: differences are relative to this file")
    c.add_argument("--tol", type=float, default=1e-6, help="largest relative RMS allowed (default 1e-6)")
    c.add_argument("--datasets", help="comma-separated top-level names, e.g. images,rings,cbed")
    i = sub.add_parser("info", help="root attributes and dataset shapes")
    i.add_argument("a")
    i.add_argument("--full", action="store_true", help="print multi-line attributes in full")
    args = ap.parse_args()
    try:
        return compare(args) if args.cmd == "compare" else info(args)
    except CheckError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
