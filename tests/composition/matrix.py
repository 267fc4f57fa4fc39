#!/usr/bin/env python3
"""The composition matrix (issue 29): what combines with what, one source of truth for the
test (ctest label `composition`) and for the README's "What combines with what" table.

Each cell is an algorithm x a feature. A cell that RUNS is run and compared with the same
points computed singly (bit for bit on the CPU engine unless the feature names a tolerance):
the per-feature check below works for any algorithm, so a cell flips from refused to runs by
changing its line in CELLS and nothing else. A cell REFUSED for a physical reason, or NOT YET
BUILT (refused today without one), must exit 3 with a message that carries `says`; when such
a refusal is removed the test fails and says to flip the cell.

  matrix.py --markdown                 the README table (between the markers)
  matrix.py --check-readme README.md   exit 1 when README.md's table is not the generated one
  matrix.py --write-readme README.md   rewrite the table in README.md
  matrix.py --self-test                every cell recorded, compare() can fail (no stemsim)
  matrix.py run FEATURE --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini
            --workdir DIR [--algorithm A]   run one feature's cells (every algorithm)
Exit: 0 pass, 1 fail, 77 skip (h5py/numpy missing).
"""
import argparse
import os
import shutil
import subprocess
import sys
import textwrap

ALGORITHMS = ("multislice", "prism", "hrtem", "cbed")
RUNS, REFUSED, NOT_YET = "runs", "refused", "not yet built"


def runs(without=(), note=None):
    """Runs and equals its single runs; `without`: datasets the single runs write and this
    combination does not (yet), said by the note (a key of REASONS: the README's footnote)."""
    return (RUNS, note, None, tuple(without))


def refused(reason, says):
    """Refused for a physical reason (a key of REASONS); the message carries `says`."""
    return (REFUSED, reason, says, ())


def not_yet(says):
    """Refused today without a physical reason: someone is building it."""
    return (NOT_YET, None, says, ())


# Physical reasons for refusals, and notes (the README's footnotes).
REASONS = {
    "no_scan": "hrtem is one plane wave and cbed one probe's pattern: no scan to place or to blur "
               "(CBED patterns over a scan are multislice or prism with save_4d)",
    "no_smatrix": "only PRISM has an S-matrix",
    "one_wave": "the distributed FFT splits one plane wave that fills a giant cell over ranks; a probe is "
                "localised and propagates in a window of the cell one rank holds (its ranks share probes)",
}

# (feature, README label, tolerance: 0 = bit for bit, else relative max difference)
FEATURES = (
    ("tilt_series", "tilt series (`[series] tilt_x`)", 0.0),
    ("defocus_series", "defocus series (`[series] defocus`)", 0.0),
    ("depths", "thickness series (`[output] depths`)", 0.0),
    ("resume", "checkpoint, kill and resume", 0.0),
    ("ranks", "1 rank = 3 ranks", 0.0),
    ("distributed_fft", "distributed FFT (`distributed_fft = on`)", 1e-5),
    ("emd", "`[output] layout = emd`", 0.0),
    ("positions", "`[scan] positions` file", 0.0),
    ("potential", "`save_potential` / `potential_file`", 0.0),
    ("smatrix", "`save_smatrix` / `smatrix_file`", 0.0),
    ("focal_spread", "focal spread", 1e-9),
    ("source_size", "source size", 1e-9),
    ("series_potential", "tilt and defocus series from a stored potential", 0.0),
    ("series_smatrix", "tilt and defocus series from a stored S-matrix", 0.0),
    ("series_distributed_fft", "tilt series on the distributed FFT", 1e-5),
    ("depths_distributed_fft", "thickness series on the distributed FFT", 1e-5),
    ("potential_distributed_fft", "`save_potential` / `potential_file` on the distributed FFT", 1e-5),
)

# The cells as the code stands (checked by the test; flip NOT_YET lines to runs() when built, or to
# refused(reason, says) when a refusal gains a physical reason: a changed message fails the test).
CELLS = {
    ("tilt_series", "multislice"): runs(),
    ("tilt_series", "prism"): runs(),
    ("tilt_series", "hrtem"): runs(),
    ("tilt_series", "cbed"): runs(),
    ("defocus_series", "multislice"): runs(),
    ("defocus_series", "prism"): runs(),
    ("defocus_series", "hrtem"): runs(),
    ("defocus_series", "cbed"): runs(),
    ("depths", "multislice"): runs(),
    ("depths", "prism"): runs(),
    ("depths", "hrtem"): runs(),
    ("depths", "cbed"): runs(),
    ("resume", "multislice"): runs(),
    ("resume", "prism"): runs(),
    ("resume", "hrtem"): runs(),
    ("resume", "cbed"): runs(),
    ("ranks", "multislice"): runs(),
    ("ranks", "prism"): runs(),
    ("ranks", "hrtem"): runs(),
    ("ranks", "cbed"): runs(),
    ("distributed_fft", "multislice"): refused("one_wave", "serves algorithm = hrtem only"),
    ("distributed_fft", "prism"): refused("one_wave", "serves algorithm = hrtem only"),
    ("distributed_fft", "hrtem"): runs(),
    ("distributed_fft", "cbed"): refused("one_wave", "serves algorithm = hrtem only"),
    ("emd", "multislice"): runs(),
    ("emd", "prism"): runs(),
    ("emd", "hrtem"): runs(),
    ("emd", "cbed"): runs(),
    ("positions", "multislice"): runs(),
    ("positions", "prism"): runs(),
    ("positions", "hrtem"): refused("no_scan", "has no probe"),
    ("positions", "cbed"): refused("no_scan", "has one probe"),
    ("potential", "multislice"): runs(),
    ("potential", "prism"): runs(),
    ("potential", "hrtem"): runs(),
    ("potential", "cbed"): runs(),
    ("smatrix", "multislice"): refused("no_smatrix", "only PRISM has an S-matrix"),
    ("smatrix", "prism"): runs(),
    ("smatrix", "hrtem"): refused("no_smatrix", "only PRISM has an S-matrix"),
    ("smatrix", "cbed"): refused("no_smatrix", "only PRISM has an S-matrix"),
    ("focal_spread", "multislice"): runs(),
    ("focal_spread", "prism"): runs(),
    ("focal_spread", "hrtem"): runs(),
    ("focal_spread", "cbed"): runs(),
    ("source_size", "multislice"): runs(),
    ("source_size", "prism"): runs(),
    ("source_size", "hrtem"): refused("no_scan", "blurs a scan"),
    ("source_size", "cbed"): refused("no_scan", "blurs a scan"),
    ("series_potential", "multislice"): runs(),
    ("series_potential", "prism"): runs(),
    ("series_potential", "hrtem"): runs(),
    ("series_potential", "cbed"): runs(),
    ("series_smatrix", "multislice"): refused("no_smatrix", "only PRISM has an S-matrix"),
    ("series_smatrix", "prism"): runs(),
    ("series_smatrix", "hrtem"): refused("no_smatrix", "only PRISM has an S-matrix"),
    ("series_smatrix", "cbed"): refused("no_smatrix", "only PRISM has an S-matrix"),
    ("series_distributed_fft", "multislice"): refused("one_wave", "serves algorithm = hrtem only"),
    ("series_distributed_fft", "prism"): refused("one_wave", "serves algorithm = hrtem only"),
    ("series_distributed_fft", "hrtem"): runs(),
    ("series_distributed_fft", "cbed"): refused("one_wave", "serves algorithm = hrtem only"),
    ("depths_distributed_fft", "multislice"): refused("one_wave", "serves algorithm = hrtem only"),
    ("depths_distributed_fft", "prism"): refused("one_wave", "serves algorithm = hrtem only"),
    ("depths_distributed_fft", "hrtem"): runs(),
    ("depths_distributed_fft", "cbed"): refused("one_wave", "serves algorithm = hrtem only"),
    ("potential_distributed_fft", "multislice"): refused("one_wave", "serves algorithm = hrtem only"),
    ("potential_distributed_fft", "prism"): refused("one_wave", "serves algorithm = hrtem only"),
    ("potential_distributed_fft", "hrtem"): runs(),
    ("potential_distributed_fft", "cbed"): refused("one_wave", "serves algorithm = hrtem only"),
}

BEGIN, END = "<!-- composition matrix: begin (generated by tests/composition/matrix.py --write-readme) -->", \
    "<!-- composition matrix: end -->"


# ---------------------------------------------------------------- the README table

def markdown():
    """The table: features as rows, algorithms as columns; reasons and notes as footnotes."""
    order = []  # footnote keys in the order they first appear
    for feature, _, _ in FEATURES:
        for alg in ALGORITHMS:
            note = CELLS[(feature, alg)][1]
            if note and note not in order:
                order.append(note)
    marks = {r: "¹²³⁴⁵⁶⁷⁸⁹"[i] for i, r in enumerate(order)}
    words = {RUNS: "yes", REFUSED: "no", NOT_YET: "not yet"}
    lines = ["| | " + " | ".join(ALGORITHMS) + " |", "|---" * (len(ALGORITHMS) + 1) + "|"]
    for feature, label, _ in FEATURES:
        cells = [words[CELLS[(feature, alg)][0]] + marks.get(CELLS[(feature, alg)][1], "") for alg in ALGORITHMS]
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    tol = {f: ("%.0e" % t).replace("e-0", "e-") for f, _, t in FEATURES}
    lines += [""] + textwrap.wrap("*yes*: runs, and the test finds it equal to the same points computed singly (a series point "
                  "to a single run, 3 ranks to 1, a resumed run to an uninterrupted one, EMD datasets to the native "
                  "ones, a loaded potential or S-matrix to a computed one) bit for bit on the CPU; the distributed FFT "
                  "to %s; a focal spread to the weighted mean of its defoci's runs and a source size to numpy's "
                  "Fourier blur of the unblurred run, to %s (float32 4D patterns to 1e-6). *not yet*: refused "
                  "today, being built. *no*: refused (exit 3), for the reason below."
              % (tol["distributed_fft"], tol["focal_spread"]), 90) + [""]
    for i, r in enumerate(order):  # one footnote a line: a Markdown line break ("  ") ends each but the last
        lines += textwrap.wrap("%s %s" % (marks[r], REASONS[r]), 90)
        lines[-1] += "  " if i + 1 < len(order) else ""
    return "\n".join(lines) + "\n"


def readme_with_table(text):
    if BEGIN not in text or END not in text:
        raise SystemExit("README.md lacks the markers %r ... %r" % (BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + markdown() + END + tail


# ---------------------------------------------------------------- running stemsim

class Case:
    """One algorithm's runs for one feature, in <workdir>/<feature>_<algorithm>."""

    def __init__(self, args, feature, alg):
        self.args, self.feature, self.alg = args, feature, alg
        self.dir = os.path.join(os.path.abspath(args.workdir), "composition_%s_%s" % (feature, alg))
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(args.config)), "..", ".."))
        text = open(args.config).read().replace("xyz = ../../data/", "xyz = " + os.path.join(repo, "data") + "/")
        text = text.replace("algorithm = multislice", "algorithm = " + alg)
        if alg == "hrtem":  # the exit wave too, and a lens with an aperture
            text = text.replace("[output]", "[hrtem]\nobjective_aperture = 30\n\n[output]\nsave_exit_wave = true")
        self.base = text
        self.sets = []
        self.without = CELLS[(feature, alg)][3]

    def config(self, name, drop=(), append=""):
        """The case's config as <name>.ini, lines opening with a `drop` entry removed."""
        lines = [l for l in self.base.split("\n") if not any(l.startswith(d) for d in drop)]
        path = os.path.join(self.dir, name + ".ini")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n" + append)
        return path

    def run(self, name, sets=(), ranks=1, ini=None, env=None, expect=0):
        """stemsim writing <name>.h5; (exit code, output). SystemExit when not `expect` (None: any)."""
        a = self.args
        base = [a.stemsim] if ranks == 1 else [a.mpiexec] + a.mpi_flag + ["-np", str(ranks), a.stemsim]
        cmd = base + [ini or self.config(name), "--set", "output.file=%s.h5" % name]
        for s in list(self.sets) + list(sets):
            cmd += ["--set", s]
        p = subprocess.run(cmd, cwd=self.dir, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, **(env or {})))
        out = p.stdout + p.stderr
        if expect is not None and p.returncode != expect:
            print(out)
            raise CellFailed("%s: exit %d, expected %d" % (" ".join(cmd), p.returncode, expect))
        return p.returncode, out

    def compare(self, got, want, what, tol, skip=()):
        """compare(), leaving out the datasets the cell is known not to write (and checking they are absent)."""
        missing = [k for k in self.without if k in got]
        return (["%s: %s is written now: remove it from the cell's without=" % (what, k) for k in missing] +
                compare(got, want, what, tol, tuple(skip) + tuple(self.without)))

    def h5(self, name):
        return datasets(os.path.join(self.dir, name + ".h5"))


class CellFailed(Exception):
    pass


def datasets(path, under="/"):
    """Every dataset (of group `under`): its path there and values."""
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f[under].visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


def mean_scale(data, key):
    """A centre of mass is a mean of the pattern's angles (the segments' DPC one of unit vectors):
    its rounding is relative to them (a symmetric pattern's is zero plus rounding); the largest
    angle of the run's axes (1), else 0."""
    import numpy as np
    if key.startswith("dpc_segments"):
        return 1.0
    if not key.startswith("dpc_com"):
        return 0.0
    axes = [np.max(np.abs(np.asarray(v))) for k, v in data.items() if k.startswith("axes/") and k.endswith("_mrad")]
    return float(max(axes)) if axes else 0.0


def compare(got, want, what, tol, skip=()):
    """Every dataset of `want` in `got` (and no other), equal bit for bit (tol 0) or to a
    relative max difference tol; the list of problems."""
    import numpy as np
    problems = []
    keys = sorted((set(got) | set(want)) - set(skip))
    for k in keys:
        if k not in got or k not in want:
            problems.append("%s: %s only in %s" % (what, k, "the combined run" if k in got else "the single run"))
            continue
        x, y = np.asarray(got[k]), np.asarray(want[k])
        if x.shape != y.shape:
            problems.append("%s: %s shape %s, expected %s" % (what, k, x.shape, y.shape))
        elif tol == 0:
            if not np.array_equal(x, y):
                problems.append("%s: %s differs (max |diff| %.3g), expected bit for bit" %
                                (what, k, float(np.max(np.abs(x.astype(float) - y.astype(float))))))
        else:  # float32 datasets (4D patterns) to their own precision
            t = max(tol, 1e-6) if np.float32 in (x.dtype, y.dtype) else tol
            x, y = x.astype(float), y.astype(float)
            scale = max(float(np.max(np.abs(y))) if y.size else 0.0, mean_scale(want, k), 1e-300)
            err = float(np.max(np.abs(x - y)) / scale) if x.size else 0.0
            if not err <= t:
                problems.append("%s: %s relative max difference %.3g > %g" % (what, k, err, t))
    if not keys:
        problems.append("%s: no datasets" % what)
    return problems


def point(data, index, axes):
    """The series run's point `index` (its leading axis), without the series' own axes."""
    return {k: (v if k.startswith("axes/") else v[index]) for k, v in data.items() if k not in axes}


# ---------------------------------------------------------------- the per-feature checks
# Each takes a Case and the feature's tolerance, runs the combination and the single runs,
# and returns the problems (an empty list: the cell runs and equals its single runs).

def series_check(case, tol, series_key, values, single_key, axis, drop=(), series_sets=(), ranks=1):
    """Each point of a [series] run (with series_sets, on `ranks`) = the single run at its value."""
    ini = case.config("series", drop=drop, append="\n[series]\n%s = %s\n" % (series_key, " ".join(map(str, values))))
    case.run("series", series_sets, ranks=ranks, ini=ini)
    combined = case.h5("series")
    problems = []
    for i, v in enumerate(values):
        case.run("single%d" % i, ["%s=%r" % (single_key, v)], ini=case.config("single", drop=drop))
        single = case.h5("single%d" % i)
        problems += case.compare(point(combined, i, ["axes/" + axis]), single, "%s %g" % (axis, v), tol)
    problems += distinct(combined, "the %s points" % axis)
    return problems


def distinct(data, what):
    """A negative control: the points of a series differ (a run repeating one would pass otherwise)."""
    import numpy as np
    main = [k for k in ("images/HAADF", "hrtem", "cbed_pattern", "cbed") if k in data]
    if main and np.array_equal(data[main[0]][0], data[main[0]][-1]):
        return ["%s: %s is the same at the first and the last point" % (what, main[0])]
    return []


def check_tilt_series(case, tol):
    return series_check(case, tol, "tilt_x", [0.0, 3.0], "sample.tilt_x", "tilt_x")


def check_defocus_series(case, tol):
    return series_check(case, tol, "defocus", [-30.0, 30.0], "probe.defocus", "defocus", drop=("defocus = 0",))


def check_depths(case, tol, depth_sets=(), ranks=1):
    """Depths 5.43 and 10.86 Angstrom of the 10.86 Angstrom sample (with depth_sets, on `ranks`)
    = the sample cut there (tile_z 1, 2), run serially."""
    case.run("depths", ["output.depths=5.43 10.86"] + list(depth_sets), ranks=ranks)
    combined = case.h5("depths")
    problems = []
    for i, tiles in enumerate((1, 2)):
        case.run("single%d" % i, ["sample.tile_z=%d" % tiles])
        single = case.h5("single%d" % i)
        problems += case.compare(point(combined, i, ["axes/depth"]), single, "depth %d cells" % tiles, tol)
    return problems + distinct(combined, "the depths")


def check_resume(case, tol):
    """Two configurations checkpointed, killed after one unit, run again: = the uninterrupted run."""
    case.sets = ["simulation.thermal=true", "simulation.frozen_phonons=2"]
    case.run("whole")
    every = ["output.checkpoint=true", "output.checkpoint_interval=0"]  # a store after every unit (one rank)
    rc, out = case.run("resumed", every, env={"STEMSIM_TEST_KILL_AFTER_UNITS": "1"}, expect=None)
    if rc == 0:
        return ["the run was not killed after its first unit (exit 0)"]
    rc, out = case.run("resumed", every + ["output.overwrite=false"])
    problems = [] if "resuming: 1 of 2 units done" in out else ["the rerun did not resume 1 of 2 units:\n" + out]
    return problems + case.compare(case.h5("resumed"), case.h5("whole"), "resumed", tol)


def check_ranks(case, tol):
    """Two configurations in one group of 3 ranks, and in 3 groups, = 1 rank."""
    case.sets = ["simulation.thermal=true", "simulation.frozen_phonons=2"]
    case.run("one")
    case.run("three", ["compute.fp_groups=1"], ranks=3)
    case.run("groups", ranks=3)
    return (case.compare(case.h5("three"), case.h5("one"), "3 ranks in one group", tol) +
            case.compare(case.h5("groups"), case.h5("one"), "3 ranks in groups", tol))


def check_distributed_fft(case, tol):
    """3 ranks sharing one wave in slabs = 1 rank; the slabs form the transmission on the run's
    grid, so the serial run does too; a segmented detector and two images beside the rings, 4D and DPC."""
    case.sets = ["simulation.transmission_oversampling=1", "detector.segments=4", "detector.segment_inner=5",
                 "detector.segment_outer=40", "detector.segment_rings=2", "images.BF=0 10", "images.ADF=20 60"]
    case.run("serial", ["compute.distributed_fft=off"])
    case.run("slabs", ["compute.distributed_fft=on"], ranks=3)
    return case.compare(case.h5("slabs"), case.h5("serial"), "distributed over 3 ranks", tol)


def squeezed(v):
    """An array without its length-1 axes, a complex one as its (real, imaginary) pairs."""
    import numpy as np
    v = np.asarray(v)
    if np.iscomplexobj(v):
        v = np.stack([v.real, v.imag], axis=-1)
    return np.squeeze(v)


def same_up_to_axis_order(e, n):
    """e equals n with its axes in some order (the EMD tree puts x before y)."""
    import itertools
    import numpy as np
    return any(n.transpose(p).shape == e.shape and np.array_equal(n.transpose(p), e)
               for p in itertools.permutations(range(n.ndim)))


def check_emd(case, tol):
    """Every dataset of the EMD tree (DPC aside: in 1/Angstrom) is a native one, up to the order of
    its axes and axes of length 1; the main native results all appear in it."""
    case.run("native")
    case.run("emd", ["output.layout=emd"])
    native = {k: squeezed(v) for k, v in case.h5("native").items() if not k.startswith("axes/")}
    problems, found = [], set()
    # visited from Prismatic's group: the reader views hard-link its datasets, and a visit of
    # the whole file names each dataset once, by its first name (/0_signals...)
    for k, v in datasets(os.path.join(case.dir, "emd.h5"), "4DSTEM_simulation/data").items():
        if not k.endswith("/data") or "DPC" in k:
            continue
        v = squeezed(v)
        match = [n for n, w in native.items() if same_up_to_axis_order(v, w)]
        if not match:
            problems.append("EMD %s equals no native dataset" % k)
        found.update(match)
    for want in ("images/HAADF", "rings", "cbed", "hrtem", "exit_wave", "cbed_pattern"):
        if want in native and want not in found:
            problems.append("native /%s is nowhere in the EMD tree" % want)
    return problems


def check_positions(case, tol):
    """The grid's positions (shuffled, one repeated) from a file = the grid run's probes there."""
    import numpy as np
    case.run("grid")
    grid = case.h5("grid")
    flat = [(x, y) for y in grid["axes/scan_y"] for x in grid["axes/scan_x"]]  # probe iy * nx + ix
    order = list(np.random.default_rng(5).permutation(len(flat))) + [0]
    with open(os.path.join(case.dir, "probes.txt"), "w") as f:
        f.write("".join("%.17g %.17g\n" % flat[k] for k in order))
    ini = case.config("positions", drop=("units", "x_start", "x_end", "y_start", "y_end", "step"))
    text = open(ini).read().replace("[scan]", "[scan]\npositions = probes.txt")
    open(ini, "w").write(text)
    case.run("positions", ini=ini)
    got = case.h5("positions")
    want = {}
    for k, v in grid.items():
        if k in ("axes/scan_x", "axes/scan_y") or k == "pacbed":
            continue
        v = np.asarray(v)
        want[k] = v if k.startswith("axes/") else v.reshape((v.shape[0] * v.shape[1],) + v.shape[2:])[order]
    want["axes/probe_x"] = np.array([flat[k][0] for k in order])
    want["axes/probe_y"] = np.array([flat[k][1] for k in order])
    return case.compare(got, want, "positions file", tol, skip=("pacbed",))


def check_potential(case, tol, ranks=1):
    case.run("computed", ["output.save_potential=true"], ranks=ranks)
    case.run("loaded", ["simulation.potential_file=computed.h5"], ranks=ranks)
    return case.compare(case.h5("loaded"), case.h5("computed"), "loaded potential", tol, skip=("potential",))


def check_smatrix(case, tol):
    case.run("computed", ["output.save_smatrix=true"])
    case.run("loaded", ["simulation.smatrix_file=computed.h5"])
    return case.compare(case.h5("loaded"), case.h5("computed"), "loaded S-matrix", tol,
                        skip=("smatrix", "smatrix_beams"))


def check_focal_spread(case, tol):
    """A focal spread = the Gauss-Hermite weighted mean of the runs at its defoci (intensities)."""
    import numpy as np
    sigma, n = 40.0, 3
    case.sets = ["probe.defocus=-20", "probe.cs=0.002"]
    case.run("spread", ["probe.focal_spread=%r" % sigma, "probe.focal_points=%d" % n])
    x, w = np.polynomial.hermite.hermgauss(n)
    w = w / np.sqrt(np.pi)
    mean = {}
    for i in range(n):
        case.run("single%d" % i, ["probe.defocus=%r" % (-20 + np.sqrt(2) * sigma * x[i])])
        for k, v in case.h5("single%d" % i).items():
            mean[k] = v if k.startswith("axes/") else mean.get(k, 0) + w[i] * np.asarray(v, dtype=float)
    linear = {k for k in mean if not k.startswith(("dpc_com", "exit_wave"))}  # intensities: means of the defoci's
    got = case.h5("spread")
    return case.compare({k: got[k] for k in linear if k in got}, {k: mean[k] for k in linear}, "focal spread", tol)


def check_source_size(case, tol):
    """A source size over a scan of the whole cell = the unblurred channels times the Gaussian's
    transform exp(-2 pi^2 sigma^2 q^2) on the scan's periodic grid (numpy); 4D patterns unchanged."""
    import numpy as np
    fwhm = 1.2
    case.sets = ["scan.units=fractional", "scan.x_start=0", "scan.x_end=1", "scan.y_start=0", "scan.y_end=1",
                 "scan.step=2.715"]
    case.run("sharp")
    case.run("blurred", ["probe.source_size=%r" % fwhm])
    sharp, got = case.h5("sharp"), case.h5("blurred")
    nx, step = len(sharp["axes/scan_x"]), float(sharp["axes/scan_x"][1] - sharp["axes/scan_x"][0])
    q = np.fft.fftfreq(nx, step)
    s = fwhm / (2 * np.sqrt(2 * np.log(2)))
    g = np.exp(-2 * np.pi ** 2 * s * s * q * q)
    want = {}
    for k, v in sharp.items():
        v = np.asarray(v)
        if k.startswith(("images/", "rings", "dpc_com", "total_intensity")):
            spec = np.fft.fft(np.fft.fft(v.astype(float), axis=0), axis=1)
            shape = (nx, nx) + (1,) * (v.ndim - 2)
            v = np.real(np.fft.ifft(np.fft.ifft(spec * (g[:, None] * g[None, :]).reshape(shape), axis=1), axis=0))
        want[k] = v
    problems = case.compare(got, want, "source size", tol)
    if np.allclose(got["images/HAADF"], sharp["images/HAADF"], rtol=1e-3):
        problems.append("the blur did not change the HAADF image")
    return problems


def stored_series_check(case, tol, save_key, read_key):
    """A tilt x defocus series that reads what the same series stored (save_key) = the stored series."""
    ini = case.config("series", drop=("defocus = 0",), append="\n[series]\ntilt_x = 0 3\ndefocus = -30 30\n")
    case.run("computed", ["output.%s=true" % save_key], ini=ini)
    case.run("loaded", ["simulation.%s=computed.h5" % read_key], ini=ini)
    computed, loaded = ({k: v for k, v in case.h5(n).items() if not k.startswith(("potential", "smatrix"))}
                        for n in ("computed", "loaded"))
    return case.compare(loaded, computed, "series read from %s" % read_key, tol) + distinct(loaded, "the tilts")


def check_series_potential(case, tol):
    return stored_series_check(case, tol, "save_potential", "potential_file")


def check_series_smatrix(case, tol):
    return stored_series_check(case, tol, "save_smatrix", "smatrix_file")


def check_series_distributed_fft(case, tol):
    """A tilt series on 3 ranks sharing each wave in slabs = serial single runs at each tilt."""
    case.sets = ["simulation.transmission_oversampling=1"]
    return series_check(case, tol, "tilt_x", [0.0, 3.0], "sample.tilt_x", "tilt_x",
                        series_sets=["compute.distributed_fft=on"], ranks=3)


def check_depths_distributed_fft(case, tol):
    """Depths on 3 ranks sharing the wave in slabs = serial single runs of the sample cut there."""
    case.sets = ["simulation.transmission_oversampling=1"]
    return check_depths(case, tol, ["compute.distributed_fft=on"], ranks=3)


def check_potential_distributed_fft(case, tol):
    """On 3 ranks sharing the wave in slabs: the potential a run stores equals a serial run's, and a
    run reading it back equals the run that computed it."""
    case.sets = ["simulation.transmission_oversampling=1", "compute.distributed_fft=on"]
    problems = check_potential(case, tol, ranks=3)
    case.sets = ["simulation.transmission_oversampling=1"]
    case.run("serial", ["output.save_potential=true"])
    stored = {k: v for k, v in case.h5("computed").items() if k == "potential"}
    serial = {k: v for k, v in case.h5("serial").items() if k == "potential"}
    return problems + case.compare(stored, serial, "the stored potential against a serial run's", tol)


CHECKS = {f: globals()["check_" + f] for f, _, _ in FEATURES}


def refusal_sets(feature):
    """The keys that ask for a feature, for the cells that must refuse it."""
    return {"tilt_series": ["series.tilt_x=0 3"], "defocus_series": ["series.defocus=-30 30"],
            "depths": ["output.depths=5.43 10.86"], "resume": ["output.checkpoint=true"],
            "distributed_fft": ["compute.distributed_fft=on"], "emd": ["output.layout=emd"],
            "potential": ["output.save_potential=true"], "smatrix": ["output.save_smatrix=true"],
            "focal_spread": ["probe.focal_spread=40"], "source_size": ["probe.source_size=1.2"],
            "series_potential": ["series.tilt_x=0 3", "simulation.potential_file=stored.h5"],
            "series_smatrix": ["series.tilt_x=0 3", "simulation.smatrix_file=stored.h5"],
            "series_distributed_fft": ["series.tilt_x=0 3", "compute.distributed_fft=on"],
            "depths_distributed_fft": ["output.depths=5.43 10.86", "compute.distributed_fft=on"],
            "potential_distributed_fft": ["output.save_potential=true", "compute.distributed_fft=on"]}.get(feature, [])


def check_refused(case, says):
    """Exit 3 and the reason in the message."""
    if case.feature == "positions":
        with open(os.path.join(case.dir, "probes.txt"), "w") as f:
            f.write("2 2\n")
        ini = case.config("refused", drop=("units", "x_start", "x_end", "y_start", "y_end", "step"))
        text = open(ini).read().replace("[scan]", "[scan]\npositions = probes.txt")
        open(ini, "w").write(text)
        rc, out = case.run("refused", ini=ini, expect=None)
    else:
        if case.feature == "series_potential":  # a real stored potential: the refusal is the series'
            case.run("stored", ["output.save_potential=true"])
        if case.feature == "series_smatrix" and case.alg == "prism":
            case.run("stored", ["output.save_smatrix=true"])
        rc, out = case.run("refused", refusal_sets(case.feature), ranks=3 if "distributed_fft" in case.feature else 1,
                           ini=case.config("refused", drop=("defocus = 0",)), expect=None)
    if rc == 3 and says in out:
        print("     " + next((l for l in out.split("\n") if "error" in l), out.strip()))
        return []
    return ["exit %d (expected 3 with '%s'):\n%s" % (rc, says, out.strip())]


def run_cell(args, feature, alg):
    status, reason, says, _ = CELLS[(feature, alg)]
    tol = dict((f, t) for f, _, t in FEATURES)[feature]
    case = Case(args, feature, alg)
    try:
        problems = CHECKS[feature](case, tol) if status == RUNS else check_refused(case, says)
    except CellFailed as e:
        problems = [str(e)]
    if problems and status == NOT_YET:
        problems.append("(refused 'not yet built' today: if it runs now, flip CELLS[(%r, %r)] to runs())" %
                        (feature, alg))
    label = status if status != REFUSED else "refused (%s)" % REASONS[reason]
    print("%-4s %-15s %-10s %s" % ("ok" if not problems else "FAIL", feature, alg, label), flush=True)
    for p in problems:
        print("     " + p.replace("\n", "\n     "))
    return not problems


def self_test():
    """The matrix is whole and the comparison can fail (a negative control without stemsim)."""
    import numpy as np
    problems = ["no cell for %s x %s" % (f, a) for f, _, _ in FEATURES for a in ALGORITHMS if (f, a) not in CELLS]
    problems += ["%s: refused without a reason in REASONS" % (k,) for k, c in CELLS.items()
                 if c[0] == REFUSED and c[1] not in REASONS]
    problems += ["%s: refused without the text its message carries" % (k,) for k, c in CELLS.items()
                 if c[0] != RUNS and not c[2]]
    a = {"images/HAADF": np.array([[1.0, 2.0]]), "cbed": np.ones((1, 2, 3, 3), np.float32)}
    b = {"images/HAADF": np.array([[1.0, np.nextafter(2.0, 3.0)]]), "cbed": a["cbed"]}
    controls = (("one ulp", a, b, 0.0), ("a dataset missing", a, {"cbed": a["cbed"]}, 0.0),
                ("a shape", a, {"images/HAADF": a["images/HAADF"].T, "cbed": a["cbed"]}, 0.0),
                ("2e-6 in a float32 dataset", a, {"images/HAADF": a["images/HAADF"], "cbed": a["cbed"] * 1.000002},
                 1e-9))
    for what, x, y, tol in controls:
        if not compare(x, y, what, tol):
            problems.append("compare() did not notice %s" % what)
    if compare(a, dict(a), "the same", 0.0):
        problems.append("compare() failed equal datasets")
    for p in problems:
        print("FAIL " + p)
    print("self test: %d cells, %d problems" % (len(CELLS), len(problems)))
    return 1 if problems else 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    if "--markdown" in sys.argv:
        sys.stdout.write(markdown())
        return 0
    for opt in ("--check-readme", "--write-readme"):
        if opt in sys.argv:
            path = sys.argv[sys.argv.index(opt) + 1]
            text = open(path).read()
            new = readme_with_table(text)
            if opt == "--write-readme":
                open(path, "w").write(new)
                return 0
            if new != text:
                print("FAIL %s: the composition table is stale; run python3 tests/composition/matrix.py "
                      "--write-readme README.md" % path)
                return 1
            print("ok   %s: the composition table is the generated one" % path)
            return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["run"])
    ap.add_argument("feature", choices=[f for f, _, _ in FEATURES])
    ap.add_argument("--stemsim", required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpi-flag", action="append", default=[])
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--algorithm", choices=ALGORITHMS, action="append")
    args = ap.parse_args()
    args.stemsim = os.path.abspath(args.stemsim)
    try:
        import h5py  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("SKIP h5py/numpy not available")
        return 77
    results = [run_cell(args, args.feature, alg) for alg in (args.algorithm or ALGORITHMS)]
    print("%s: %d of %d cells as recorded" % (args.feature, sum(results), len(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
