#!/usr/bin/env python3
"""stemsim --from-prismatic (ctest label `interop`).

  from_prismatic.py --stemsim BIN --params prismatic_params.txt --xyz MODEL --workdir DIR

A Prismatic 2.0 parameter file in its writeParamFile format (every option Prismatic writes)
plus a command line after -- is converted: each mapped value lands in its stemsim key
with the same number (keV, mrad, Angstrom; -df = C10, same sign), a -dfr defocus range
becomes [series] defocus (and replaces -df), unconverted options are named in warnings and
in the config's comments, and the converted config passes stemsim's own --dry-run checks.
Refused: an unknown option or a value that is not a number or is missing (exit 3), an
unreadable parameter file (exit 4).
Exit: 0 pass, 1 fail.
"""
import argparse
import configparser
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--params", required=True)
    ap.add_argument("--xyz", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    work = os.path.join(os.path.abspath(a.workdir), "from_prismatic")
    os.makedirs(work, exist_ok=True)
    xyz = os.path.abspath(a.xyz)

    def convert(args, expect=0):
        p = subprocess.run([a.stemsim, "--from-prismatic"] + args, capture_output=True, text=True, timeout=60)
        if p.returncode != expect:
            print(p.stdout + p.stderr)
            raise SystemExit("FAIL --from-prismatic %s: exit %d, expected %d" % (" ".join(args), p.returncode, expect))
        return p.stdout, p.stderr

    out, err = convert([a.params, "--xyz", xyz, "--", "-o", "converted.h5", "-dfr", "-60", "60", "30"])
    ini = os.path.join(work, "converted.ini")
    with open(ini, "w") as f:
        f.write(out)
    cfg = configparser.ConfigParser(inline_comment_prefixes=(";",), comment_prefixes=(";", "#"))
    cfg.optionxform = str
    cfg.read(ini)
    want = {("sample", "xyz"): xyz, ("sample", "tile_x"): "2", ("sample", "tile_z"): "2", ("beam", "energy"): "300",
            ("probe", "semiangle"): "25", ("probe", "C30"): "100000", ("probe", "beam_tilt_x"): "1.5",
            ("simulation", "algorithm"): "prism", ("simulation", "interpolation_x"): "2",
            ("simulation", "pixel_size"): "0.05", ("simulation", "slice_thickness"): "2.715",
            ("simulation", "potential_radius"): "2", ("simulation", "frozen_phonons"): "2",
            ("simulation", "thermal"): "true", ("simulation", "seed"): "1234", ("scan", "units"): "fractional",
            ("scan", "x_start"): "0.25", ("scan", "y_end"): "0.5", ("scan", "step"): "0.5",
            ("detector", "ring_width"): "2", ("detector", "cbed_max_angle"): "60", ("detector", "save_4d"): "true",
            ("detector", "save_dpc"): "true", ("images", "ADF"): "70 200", ("output", "file"): "converted.h5",
            ("series", "defocus"): "-60:30:60", ("compute", "device"): "cpu", ("compute", "streams_per_gpu"): "3"}
    bad = 0
    for (section, key), value in want.items():
        got = cfg.get(section, key, fallback=None)
        if got != value:
            print("FAIL [%s] %s = %r, expected %r" % (section, key, got, value))
            bad += 1
    if cfg.has_option("probe", "C10"):
        print("FAIL -df kept as C10 beside the defocus series")
        bad += 1
    for named in ("--alpha-max", "--occupancy", "--nyquist-sampling", "--cell-dimension"):
        if named not in err or named not in out:
            print("FAIL %s not named in the warnings and the config's comments" % named)
            bad += 1
    p = subprocess.run([a.stemsim, ini, "--dry-run"], cwd=work, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        print("FAIL the converted config does not pass stemsim's checks (exit %d)" % p.returncode)
        bad += 1
    print("converted %d keys; the config passes --dry-run" % sum(len(cfg[s]) for s in cfg.sections()))
    # a command line alone: a negative value after its option, and -dfs as Prismatic's 9-point series
    out, _ = convert(["--", "-i", xyz, "-a", "m", "-df", "-40", "-dfs", "10"])
    if "algorithm = multislice" not in out or "defocus = -60:5:-20" not in out:
        print(out)
        print("FAIL command-line conversion (-a m, -df -40, -dfs 10)")
        bad += 1
    for args, code, says in ((["--", "-E", "200", "-bogus", "1"], 3, "-bogus"), (["--", "-E", "abc"], 3, "abc"),
                             (["--", "-wx", "0.1"], 3, "needs 2 values"),
                             ([os.path.join(work, "no_such_params.txt")], 4, "no_such_params"), ([], 3, "give")):
        _, err = convert(args, code)
        if says not in err:
            print("FAIL %s: the message does not say %r: %s" % (args, says, err))
            bad += 1
    print("refused: an unknown option, a non-number, a missing value (exit 3), a missing file (exit 4)")
    print("PASS" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
