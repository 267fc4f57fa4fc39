#!/usr/bin/env python3
"""The FFTW wisdom cache ([compute] fft_planning = auto, [compute] fft_cache; ctest `fft_cache`).

  fft_cache.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

Each scenario has its own cache directory (given by [compute] fft_cache; the suite's
STEMSIM_FFT_CACHE is the build directory's), small.ini with PRISM (four FFT shapes: plane
waves, output windows, the potential's finer grid and the run's grid):
- shared: the first run measures and stores one file per shape and says what measuring cost;
  a second run reads them; a 3-rank run too: all three bit-identical. Negative control: the
  comparison sees estimate's results differ (reported, not required: they may coincide).
- off: fft_cache = off writes nothing.
- refused files, each left unchanged and the run completed with a warning naming the file:
  garbage; another shape's file under this name (foreign key); this shape's key followed by
  wisdom FFTW cannot plan the shape from; a symbolic link to a valid copy (never followed).
- refused directories: a symbolic link, a directory others may write (nothing stored).
- concurrent first runs: 4 jobs on one empty cache all exit 0, leave one file per shape and
  no temporary, and give the same bits (a job that lost the race uses the winner's file).
"""
import glob
import os
import shutil
import subprocess
import sys

import itest

A = itest.parse_args()
if not itest.have_numpy_h5py():
    sys.exit(77)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

itest.small_case(A, "fft_cache")
PRISM = ["--set", "simulation.algorithm=prism"]
problems = []
SHAPES = 0


def expect(ok, what):
    if not ok:
        problems.append(what)
        print("FAIL", what)


def cache(name):
    d = os.path.join(A.workdir, name)
    if os.path.islink(d):
        os.unlink(d)
    shutil.rmtree(d, ignore_errors=True)
    return d


def run(ranks, name, cache_dir, extra=(), code=0):
    env = {"STEMSIM_FFT_CACHE": "off"}  # only [compute] fft_cache points at a cache here
    return itest.run(A, ranks, PRISM + ["--set", "compute.fft_cache=" + cache_dir] + list(extra), name, code, env=env)


def datasets(name):
    out = {}
    with h5py.File(os.path.join(A.workdir, name + ".h5"), "r") as f:
        f.visititems(lambda k, o: out.__setitem__(k, o[()]) if isinstance(o, h5py.Dataset) and o.dtype.kind in "fciu"
                     else None)
    return out


def differing(a, b):
    x, y = datasets(a), datasets(b)
    return sorted(k for k in x if k not in y or not np.array_equal(x[k], y[k]))


def files(d):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*")))


def temporaries(d):
    return glob.glob(os.path.join(d, ".*"))


def shared():
    d = cache("shared")
    log = run(1, "first", d)
    expect("measured in" in log and "stored" in log, "the first run does not say it measured and stored: " + log)
    global SHAPES
    SHAPES = log.count("measured in")  # the run's FFT shapes: probes, PRISM output, potential grids
    expect(SHAPES >= 2 and len(files(d)) == SHAPES, f"shared: {files(d)}, expected one file per shape ({SHAPES})")
    log = run(1, "second", d)
    expect(log.count("read from the cache") == SHAPES and "measured in" not in log, "the second run measured again: " + log)
    run(3, "three", d)
    expect(differing("first", "second") == [], f"two runs sharing the cache differ: {differing('first', 'second')}")
    expect(differing("first", "three") == [], f"1 and 3 ranks differ: {differing('first', 'three')}")
    run(1, "estimate", d, ["--set", "compute.fft_planning=estimate"])
    print("negative control: estimate differs from measured in", differing("first", "estimate") or "no dataset")
    return d


def off():
    d = cache("off")
    log = run(1, "off", d + "_unused", ["--set", "compute.fft_cache=off"])
    expect("cache off" in log and not os.path.exists(d + "_unused"), "fft_cache = off wrote a cache: " + log)


def refused_file(name, good, plant, words):
    """A cache whose file of the main shape is replaced by plant(path); the run completes with a
    warning naming the file and the reason, and the file is left as it was."""
    d = cache(name)
    shutil.copytree(good, d)
    target = os.path.join(d, max(files(d), key=lambda f: int(f.split("-")[1].split("x")[0])))
    plant(target)
    before = os.readlink(target) if os.path.islink(target) else open(target, "rb").read()
    log = run(1, name, d)
    expect("warning: FFTW wisdom cache file" in log and os.path.basename(target) in log and words in log,
           f"{name}: no warning naming the file and '{words}': {log}")
    after = os.readlink(target) if os.path.islink(target) else open(target, "rb").read()
    expect(before == after, f"{name}: the refused file was changed")
    expect(not temporaries(d), f"{name}: temporaries left: {temporaries(d)}")


def refusals(good):
    names = files(good)
    small_shape = os.path.join(good, min(names, key=lambda f: int(f.split("-")[1].split("x")[0])))

    def garbage(p):
        open(p, "w").write("not wisdom\n")

    def foreign(p):
        shutil.copyfile(small_shape, p)

    def damaged(p):
        text = open(p).read()
        key = text[:text.index("(fftw-")]
        open(p, "w").write(key + "(fftw-3.3.10 fftwf_wisdom #x0 #x0 #x0 #x0\n  (fftw_dft_nop_register 0 #x0 #x0 #x0 #x0)\n)\n")

    copy = os.path.join(A.workdir, "valid_copy.wisdom")

    def link(p):
        shutil.copyfile(p, copy)
        os.unlink(p)
        os.symlink(copy, p)

    refused_file("garbage", good, garbage, "does not begin with this shape's key")
    refused_file("foreign", good, foreign, "does not begin with this shape's key")
    refused_file("damaged", good, damaged, "FFTW cannot plan this shape from it")
    refused_file("link", good, link, "symbolic link")
    expect(open(copy).read().startswith("stemsim FFTW wisdom cache"), "the link's target was changed")


def refused_dirs(good):
    d = cache("dir_link")
    os.symlink(good, d)
    log = run(1, "dir_link", d)
    expect("not used: it is a symbolic link" in log, "a cache directory that is a link was used: " + log)
    d = cache("dir_open")
    os.makedirs(d)
    os.chmod(d, 0o777)
    log = run(1, "dir_open", d)
    expect("others may write" in log and files(d) == [], "a directory others may write was used: " + log)


def concurrent():
    d = cache("race")
    base = [A.stemsim, A.ini] + PRISM + ["--set", "compute.fft_cache=" + d, "--set", "compute.threads=1"]
    env = dict(os.environ, STEMSIM_FFT_CACHE="off")
    jobs = [subprocess.Popen(base + ["--set", f"output.file=race{i}.h5"], cwd=A.workdir, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(4)]
    logs = [j.communicate(timeout=300)[0] for j in jobs]
    expect(all(j.returncode == 0 for j in jobs), "a concurrent job failed: " + "\n".join(logs))
    expect(not any("warning" in log for log in logs), "a concurrent job warned: " + "\n".join(logs))
    expect(len(files(d)) == SHAPES and not temporaries(d), f"race: {files(d)} {temporaries(d)}")
    for i in range(1, 4):
        expect(differing("race0", f"race{i}") == [], f"concurrent job {i} differs: {differing('race0', f'race{i}')}")


good = shared()
off()
refusals(good)
refused_dirs(good)
concurrent()
if problems:
    sys.exit("FAIL fft_cache: " + "; ".join(problems))
print("PASS fft_cache: shared cache bit-identical (1 run, 2 runs, 3 ranks), off, refused files and directories, "
      "concurrent first runs")
