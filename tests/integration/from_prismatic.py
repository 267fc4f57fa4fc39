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

    def convert(args, expect=0, cwd=None):
        p = subprocess.run([a.stemsim, "--from-prismatic"] + args, capture_output=True, text=True, timeout=60, cwd=cwd)
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
    bad += issue27_cases(a, work, xyz, convert)
    bad += aberration_file_cases(work, xyz, convert)
    print("PASS" if not bad else "FAILED")
    return 1 if bad else 0


def aberration_file_cases(work, xyz, convert):
    """-aber: Prismatic's 'm n mag angle' lines (chi += mag (lambda q)^m cos(n (phi - angle)), mag in
    radians) become C_(m-1)n = mag m lambda / (2 pi) Angstrom and phi = angle, against the closed-form
    relativistic wavelength; -df/-C3 win over the file's C10/C30; lines outside Prismatic's basis are
    noted, coefficients stemsim lacks (a probe shift, m = 1) refused."""
    import math
    h, me, e, c = 6.62607015e-34, 9.1093837015e-31, 1.602176634e-19, 299792458.0
    volts = 300e3
    lam = h / math.sqrt(2 * me * e * volts * (1 + e * volts / (2 * me * c * c))) * 1e10
    bad = 0
    ab = os.path.join(work, "aberrations.txt")
    with open(ab, "w") as f:
        f.write("Prismatic aberrations\n2 0 12.5 0\n3 1, 40.0, 30\n4 0 1000 0\n5 3 7 15\n3 2 5 0\n\n6 6 9 9\n")
    out, err = convert(["--xyz", xyz, "--", "-E", "300", "-aber", ab, "-C3", "0.5e7"])
    cfg = parse_ini(out)
    want = {"C10": 12.5 * 2 * lam / (2 * math.pi), "C21": 40.0 * 3 * lam / (2 * math.pi), "phi21": 30.0,
            "C43": 7 * 5 * lam / (2 * math.pi), "phi43": 15.0, "C30": 0.5e7}
    for key, value in want.items():
        got = float(cfg.get("probe", key, fallback="nan"))
        if not abs(got - value) <= 1e-6 * abs(value):
            print("FAIL -aber: [probe] %s = %s, expected %.10g" % (key, got, value))
            bad += 1
    if "not in Prismatic's basis" not in err or cfg.has_option("probe", "C56") or "replaced by -df/-C3/-C5" not in err:
        print("FAIL -aber: the line outside the basis was not noted, a line after the end was read, or -C3's win "
              "was not said: %s" % err)
        bad += 1
    # -df and -dfr with -aber: Prismatic's updateAberrations (src/aberration.cpp) sets the file's C1 to the
    # probe defocus (mag = C1 pi / lambda), each series point to its own value: it replaces, never adds
    out, err = convert(["--xyz", xyz, "--", "-E", "300", "-aber", ab, "-df", "-50"])
    got = float(parse_ini(out).get("probe", "C10", fallback="nan"))
    if got != -50:
        print("FAIL -df with -aber: [probe] C10 = %s, expected -50 (Prismatic replaces the file's C1)" % got)
        bad += 1
    out, err = convert(["--xyz", xyz, "--", "-E", "300", "-aber", ab, "-dfr", "-100", "100", "50"])
    series = parse_ini(out).get("series", "defocus", fallback="")
    if series.replace(" ", "") != "-100:50:100":
        print("FAIL -dfr with -aber: [series] defocus = %r, expected -100:50:100 (absolute, as Prismatic)" % series)
        bad += 1
    with open(ab, "w") as f:
        f.write("shift\n1 1 0.3 0\n")
    out, err = convert(["--xyz", xyz, "--", "-aber", ab], expect=3)
    if "shift of the probe" not in err:
        print("FAIL -aber with a probe shift (m = 1): %s" % err)
        bad += 1
    print("-aber: C10, C21, C43 and azimuths from Prismatic's magnitudes at 300 keV; -C3, -df and -dfr replace the "
          "file's values; a shift refused")
    return bad


def parse_ini(text):
    cfg = configparser.ConfigParser(inline_comment_prefixes=(";",), comment_prefixes=(";", "#"))
    cfg.optionxform = str
    cfg.read_string(text)
    return cfg


def issue27_cases(a, work, xyz, convert):
    """The converter's silent wrong conversions of issues 27 (item 12) and 30; returns failures."""
    bad = 0
    strict = convert

    def convert(args, expect=0, cwd=None):  # a wrong exit counts as one failure and the checks go on
        nonlocal bad
        try:
            return strict(args, expect, cwd)
        except SystemExit as e:
            print(e)
            bad += 1
            return "", ""

    def check(ok, what, detail=""):
        nonlocal bad
        if not ok:
            print("FAIL %s%s" % (what, (": " + detail) if detail else ""))
            bad += 1

    def params(name, text):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # a GPU build's GUI writes its GPUs and threads into every parameter file: the converted config
    # runs on a CPU node too (device = auto, said in a note); no note is cut short (issue 39 item 3)
    gui = params("gui_gpu.txt", "--num-gpus:4\n--num-threads:12\n--tile-uc:4 4 1\n")
    out, err = convert([gui, "--xyz", xyz])
    cfg = parse_ini(out)
    check(cfg.get("compute", "device", fallback=None) == "auto" and cfg.get("compute", "gpus_per_rank",
                                                                         fallback=None) == "4",
          "a GUI parameter file's --num-gpus 4 becomes device = auto, gpus_per_rank = 4", out)
    check("device = auto" in err and "within a few percent of Prismatic's -3DP 0 (docs/prismatic.md)" in err,
          "the notes are whole (the 3D potential's ended mid-word at 320 bytes)", err)
    gui_ini = os.path.join(work, "gui_gpu.ini")
    with open(gui_ini, "w") as f:
        f.write(out)
    p = subprocess.run([a.stemsim, gui_ini, "--dry-run", "--set", "compute.device=auto"], capture_output=True,
                       text=True, timeout=120, cwd=work)
    check(p.returncode == 0, "the converted GUI config plans on this machine (exit %d)" % p.returncode,
          p.stderr[-300:])
    # --streaming-mode 0 and 1: memory modes the config accepts (0 wrote "single-transfer", refused)
    for flag, mode in (("0", "single"), ("1", "streaming")):
        out, err = convert(["--", "-i", xyz, "-f", "1", "--streaming-mode", flag])
        check(parse_ini(out).get("compute", "memory_mode", fallback="") == mode,
              "--streaming-mode %s converts to memory_mode = %s" % (flag, mode), out)
        ini = os.path.join(work, "streaming_%s.ini" % flag)
        with open(ini, "w") as f:
            f.write(out)
        p = subprocess.run([a.stemsim, ini, "--dry-run"], capture_output=True, text=True, timeout=120, cwd=work)
        check(p.returncode == 0, "the --streaming-mode %s config plans (exit %d)" % (flag, p.returncode), p.stderr[-300:])

    # -dfs before -df (a parameter file's order, or -df on the command line): around the final -df
    out, _ = convert([params("dfs_first.txt", "--probe-defocus-sigma:10\n--probe-defocus:-40\n"), "--xyz", xyz])
    check("defocus = -60:5:-20" in out, "-dfs then -df: the series is not around -df -40", out)
    out, _ = convert([params("dfs_file.txt", "--probe-defocus:-40\n--probe-defocus-sigma:10\n"), "--xyz", xyz,
                      "--", "-df", "100"])
    check("defocus = 80:5:120" in out, "-dfs in the file, -df 100 on the command line", out)
    check(not parse_ini(out).has_option("probe", "C10"), "-df kept as C10 beside the -dfs series")

    # windows: each axis its own unit; mixed ones through the model's cell (times the tiles)
    with open(xyz) as f:
        f.readline()
        cell = [float(t) for t in f.readline().split()[:3]]
    out, err = convert(["--", "-i", xyz, "-t", "2", "3", "1", "-wx", "0.1", "0.5", "-wyr", "1", "5"])
    cfg = parse_ini(out)
    ly = 3 * cell[1]
    got = [cfg.get("scan", k, fallback="") for k in ("units", "x_start", "x_end", "y_start", "y_end")]
    check(got[0] == "fractional" and got[1:3] == ["0.1", "0.5"] and abs(float(got[3] or 0) - 1 / ly) < 1e-12
          and abs(float(got[4] or 0) - 5 / ly) < 1e-12, "-wx 0.1 0.5 with -wyr 1 5", "%s (cell y %g)" % (got, ly))
    check("-wyr" in err, "the mixed window's conversion is not named in the warnings", err)
    _, err = convert(["--", "-wxr", "1", "5"], 3)
    check("one unit for both axes" in err, "-wxr without a model (fractional default y) not refused clearly", err)
    out, _ = convert(["--", "-i", xyz, "-wxr", "1", "5", "-wyr", "2", "6"])
    cfg = parse_ini(out)
    check(cfg.get("scan", "units", fallback="") == "angstrom" and cfg.get("scan", "y_end", fallback="") == "6",
          "both windows in Angstrom", out)
    out, _ = convert([params("unset_windows.txt", "--scan-window-x:0 0.99999\n--scan-window-y:0 0.99999\n"
                             "--scan-window-xr:0 0\n--scan-window-yr:0 0\n"), "--xyz", xyz])
    cfg = parse_ini(out)
    check(cfg.get("scan", "units", fallback="fractional") == "fractional"
          and cfg.get("scan", "x_end", fallback="") == "0.99999", "-wxr 0 0 (Prismatic's unset) applied", out)

    # Prismatic's own unset values and options
    out, err = convert([params("nan.txt", "--probe-defocus:nan\n-C3:nan\n-C5:-nan\n--output-folder:./\n"
                               "--random-seed:9007199254740993\n"), "--xyz", xyz])
    cfg = parse_ini(out)
    check(not any(cfg.has_option("probe", k) for k in ("C10", "C30", "C50")), "nan written as a value", out)
    check("--output-folder" in err, "-of not named in the warnings", err)
    check(cfg.get("simulation", "seed", fallback="") == "9007199254740993", "a seed above 2^53 rounded", out)

    # a relative model path resolves from where Prismatic ran (here), written absolute
    sub = os.path.join(work, "rel")
    os.makedirs(sub, exist_ok=True)
    with open(xyz) as f, open(os.path.join(sub, "model_rel.xyz"), "w") as g:
        g.write(f.read())
    out, _ = convert(["--", "-i", "model_rel.xyz", "-o", "rel.h5"], cwd=sub)
    check(parse_ini(out).get("sample", "xyz", fallback="") == os.path.join(sub, "model_rel.xyz"),
          "a relative -i not written absolute", out)

    # what a config line cannot hold is refused, not cut or turned into a comment
    for name, why in (("a ;b.h5", "';'"), ("a\tb.h5", "control character"), ("x" * 300 + ".h5", "config line"),
                      ("/" + "d" * 600 + ".h5", "config line")):
        _, err = convert(["--", "-i", xyz, "-o", name], 3)
        check(why in err, "-o %r: the message does not say %s" % (name[:20], why), err)
    for f in ("1e30", str(2 ** 40), "2.5", "0"):
        _, err = convert(["--", "-f", f], 3)
        check("-f" in err, "-f %s not refused with its name" % f, err)
    _, err = convert([work], 4)
    check("directory" in err, "a directory as the parameter file", err)
    with open("/dev/full", "w") as full:
        p = subprocess.run([a.stemsim, "--from-prismatic", "--", "-i", xyz], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    check(p.returncode == 6 and "No space" in p.stderr, "the config written to a full device", "exit %d: %s" %
          (p.returncode, p.stderr))

    # every line within the INI parser's limit, whatever the notes and the source path
    longdir = os.path.join(work, "p" * 150)
    os.makedirs(longdir, exist_ok=True)
    out, _ = convert([params(os.path.join(longdir, "long.txt"), "--probe-defocus-sigma:10\n"), "--xyz", xyz,
                      "--", "-2D", "70", "200", "-xtt", "1", "10", "1", "-a", "t"])
    longest = max(len(line) for line in out.splitlines())
    check(longest < 199, "a config line of %d characters (inih reads 199)" % longest)
    print("issue 27/30 converter cases: %s" % ("pass" if not bad else "%d failed" % bad))
    return bad


if __name__ == "__main__":
    sys.exit(main())
