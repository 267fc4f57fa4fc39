#!/usr/bin/env python3
"""Standard errors over frozen-phonon configurations (/standard_error, docs/accuracy.md "How accurate
is my simulation?"), checked against values computed here from stemsim's means only:

  values   runs with 1, 2, 3 and 4 configurations (the same seed: configuration c is the same
           in all of them) give each configuration's own values, x_c = c m_c - (c - 1) m_(c-1);
           the 4-configuration run's /standard_error/images/*, rings, total_intensity and
           segments equal std(x_c, ddof=1) / sqrt(4), its DPC the first-order standard error
           of the ratio sum x_c / sum t_c, and the logged "NAME a-b mrad: mean +- se" lines
           the standard error of the scan-averaged image (and the per-probe errors' rms);
           the one-configuration run has no
           /standard_error, says why in the root attribute and the log
  ranks    1 rank = 3 ranks in one group (bit for bit); 3 groups of unequal size (2, 1, 1
           configurations: Chan's combination) = 1 rank to 1e-10
  emd      [output] layout = emd keeps them under /stemsim/standard_error, equal to the native;
           [output] standard_errors = false writes none
  prism    the values check with PRISM and a focal spread (quadrature: no error of its own)
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import itest  # noqa: E402

N = 4
SEGMENTS = ["--set", "detector.segments=4", "--set", "detector.segment_inner=6", "--set", "detector.segment_outer=40",
            "--set", "detector.segment_rings=2", "--set", "probe.defocus=-40", "--set", "probe.astigmatism=20"]
PHONONS = ["--set", "simulation.thermal=true"]
FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILS.append(what)


def read(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
        out["@standard_error"] = f.attrs.get("standard_error")
    return out


def per_config(args, extra, tag):
    """Each configuration's own values of every written channel, from runs with 1..N configurations."""
    runs = []
    for n in range(1, N + 1):
        name = "%s_n%d" % (tag, n)
        log = itest.run(args, 1, PHONONS + extra + ["--set", "simulation.frozen_phonons=%d" % n], name)
        runs.append((read(os.path.join(args.workdir, name + ".h5")), log))
    return runs


def sums(f, n, key):
    """The run's sum over its n configurations of dataset key (the DPC: intensity-weighted)."""
    if key.startswith("dpc_com"):
        return f[key] * f["total_intensity"] * n
    return f[key] * n


def scenario_values(args, extra, tag):
    import numpy as np
    runs = per_config(args, extra, tag)
    one, log1 = runs[0]
    check(not any(k.startswith("standard_error") for k in one), "%s: one configuration writes no /standard_error" % tag)
    check("no error can be estimated" in str(one["@standard_error"]), "%s: the root attribute says why" % tag)
    check("no error can be estimated" in log1, "%s: the log says no error can be estimated" % tag)
    last, log = runs[-1]
    keys = [k for k in last if k.startswith("images/") or k in ("rings", "total_intensity", "segments", "dpc_com_x",
                                                                 "dpc_com_y")]
    for want in ("images/HAADF", "rings", "total_intensity", "segments", "dpc_com_x", "dpc_com_y"):
        check(want in keys and "standard_error/" + want in last, "%s: /standard_error/%s written" % (tag, want))
    x = {k: np.array([sums(runs[c][0], c + 1, k) - (sums(runs[c - 1][0], c, k) if c else 0) for c in range(N)])
         for k in keys + ["total_intensity"]}
    for k in keys:
        if "standard_error/" + k not in last:
            continue
        got = last["standard_error/" + k]
        if k.startswith("dpc_com"):  # the ratio of sums R = X / T: the sample variance of x_c - R t_c
            t = x["total_intensity"]
            R = x[k].sum(0) / t.sum(0)
            want = np.std(x[k] - R * t, axis=0, ddof=1) / np.sqrt(N) / t.mean(0)
        else:
            want = np.std(x[k], axis=0, ddof=1) / np.sqrt(N)
        scale = np.abs(want).max()
        err = np.abs(got - want).max() / scale
        check(scale > 0 and err < 1e-7, "%s: /standard_error/%s equals the standard error of the per-configuration "
              "values (max rel. %.2g; largest %.3g)" % (tag, k, err, scale))
    # the log: each named image's scan mean with its standard error over configurations
    for name in [k[len("images/"):] for k in keys if k.startswith("images/")]:
        m = re.search(r"^%s [^:]*: (\S+) \+- (\S+) \((\S+)%%\) over %d configurations(; \d+ would bring it to \S+)?; "
                      r"per probe position \+- (\S+) rms$" % (re.escape(name), N), log, re.M)
        v = x["images/" + name].mean(axis=(1, 2))
        se = np.std(v, ddof=1) / np.sqrt(N)
        pixel = np.sqrt(np.mean(np.var(x["images/" + name], axis=0, ddof=1) / N))
        # the mean and its error are printed to the error's first significant digit(s): half a unit of the last
        last = 0.5 * 10.0 ** -len(m.group(2).split(".")[1]) * 1.001 if m and "." in m.group(2) else 0
        ok = m is not None and abs(float(m.group(1)) - v.mean()) <= last and \
            abs(float(m.group(2)) - se) <= last and abs(float(m.group(5)) - pixel) <= 0.05 * pixel  # 2 digits
        check(ok, "%s: the log gives %s's scan mean %.4g +- %.2g over %d configurations, per probe +- %.2g (%s)" %
              (tag, name, v.mean(), se, N, pixel, m.group(0) if m else "no line"))


def compare(a, b, what, tol):
    import numpy as np
    names = sorted(k for k in a if k.startswith("standard_error/"))
    check(len(names) >= 6 and names == sorted(k for k in b if k.startswith("standard_error/")),
          "%s: the same standard-error datasets (%d)" % (what, len(names)))
    for k in names:
        x, y = a[k], b[k]
        diff = np.abs(x - y).max() / max(np.abs(y).max(), 1e-300)
        check(x.shape == y.shape and (np.array_equal(x, y) if tol == 0 else diff <= tol),
              "%s: /%s %s (max rel. %.2g)" % (what, k, "bit for bit" if tol == 0 else "to %g" % tol, diff))


def scenario_ranks(args):
    base = PHONONS + SEGMENTS + ["--set", "simulation.frozen_phonons=%d" % N]
    itest.run(args, 1, base, "ranks_1")
    itest.run(args, 3, base + ["--set", "compute.fp_groups=1"], "ranks_3_one_group")
    itest.run(args, 3, base + ["--set", "compute.fp_groups=3"], "ranks_3_three_groups")
    one = read(os.path.join(args.workdir, "ranks_1.h5"))
    compare(read(os.path.join(args.workdir, "ranks_3_one_group.h5")), one, "3 ranks, one group", 0)
    compare(read(os.path.join(args.workdir, "ranks_3_three_groups.h5")), one, "3 groups of 2, 1, 1 configurations", 1e-10)


def scenario_emd(args):
    base = PHONONS + SEGMENTS + ["--set", "simulation.frozen_phonons=3"]
    itest.run(args, 1, base, "native")
    itest.run(args, 1, base + ["--set", "output.layout=emd"], "emd")
    native, emd = read(os.path.join(args.workdir, "native.h5")), read(os.path.join(args.workdir, "emd.h5"))
    kept = {k[len("stemsim/"):]: v for k, v in emd.items() if k.startswith("stemsim/standard_error/")}
    compare(kept, native, "EMD /stemsim/standard_error", 0)
    log = itest.run(args, 1, base + ["--set", "output.standard_errors=false"], "off")
    off = read(os.path.join(args.workdir, "off.h5"))
    on = itest.run(args, 1, base, "on")
    same = [line.split("; per probe")[0] for line in on.splitlines() if "; per probe position" in line]
    check(not any(k.startswith("standard_error") for k in off) and "standard_errors = false" in str(off["@standard_error"])
          and len(same) == 4 and all(line + "\n" in log for line in same),
          "[output] standard_errors = false: none written, the root attribute says why, the log keeps the scan means' "
          "errors (%s)" % same)


def main():
    args = itest.parse_args(("scenario", {"choices": ["values", "ranks", "emd", "prism"]}))
    if not itest.have_numpy_h5py():
        return 77
    itest.small_case(args, "errors_" + args.scenario)
    if args.scenario == "values":
        scenario_values(args, SEGMENTS, "multislice")
    elif args.scenario == "prism":
        scenario_values(args, SEGMENTS + ["--set", "simulation.algorithm=prism", "--set", "probe.focal_spread=30",
                                          "--set", "probe.focal_points=3"], "prism")
    elif args.scenario == "ranks":
        scenario_ranks(args)
    else:
        scenario_emd(args)
    print("%s: %s" % (args.scenario, "FAIL (%d)" % len(FAILS) if FAILS else "PASS"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
