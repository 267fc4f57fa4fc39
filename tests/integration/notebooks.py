#!/usr/bin/env python3
"""ctest notebooks: every notebooks/*.ipynb executed with `jupyter nbconvert --to notebook --execute`
(copied into <workdir>, where their files land), with the package python/ pip-installed into
<workdir>/pypkg and stemsim given by $STEMSIM. Fails on any cell's error (the notebooks assert
what they show) or a notebook over --timeout seconds; exit 77 (skipped, saying what is missing)
when --python (build-venv/bin/python, .ci/deps --interop) lacks nbconvert, nbclient, ipykernel or
the package's dependencies. Each executed notebook is kept in <workdir> to look at."""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_pkg import NEEDED, install, missing_modules  # noqa: E402

NB_NEEDED = NEEDED + ("nbconvert", "nbclient", "ipykernel", "nbformat")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--python", required=True)
    p.add_argument("--stemsim", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--timeout", type=float, default=120, help="seconds per notebook (default 120)")
    a = p.parse_args()
    source, work = os.path.abspath(a.source), os.path.abspath(a.workdir)
    a.python = os.path.abspath(a.python)
    missing = missing_modules(a.python, NB_NEEDED)
    if missing is None or missing:
        print("SKIP: %s %s (bash .ci/deps --interop installs nbconvert, nbclient, ipykernel and the package's "
              "dependencies into build-venv/)" % (a.python, "does not run" if missing is None else
                                                  "lacks " + " ".join(missing)))
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    target = os.path.join(work, "pypkg")
    err = install(a.python, source, target)
    if err:
        print("FAIL: pip install ./python: %s" % err)
        return 1
    env = dict(os.environ, PYTHONPATH=target, STEMSIM=os.path.abspath(a.stemsim),
               JUPYTER_PLATFORM_DIRS="1")
    notebooks = sorted(glob.glob(os.path.join(source, "notebooks", "*.ipynb")))
    if not notebooks:
        print("FAIL: no notebooks under %s/notebooks" % source)
        return 1
    failed = []
    for nb in notebooks:
        name = os.path.basename(nb)
        src = os.path.join(work, name.replace(".ipynb", ".source.ipynb"))
        shutil.copy(nb, src)
        t = time.time()
        r = subprocess.run([a.python, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                            "--ExecutePreprocessor.timeout=%d" % int(a.timeout), "--ExecutePreprocessor.kernel_name=python3",
                            "--output-dir", work, "--output", name, src], env=env, cwd=work,
                           capture_output=True, text=True, timeout=a.timeout + 60)
        dt = time.time() - t
        if r.returncode != 0:
            failed.append(name)
            print("FAIL %s (%.1f s):\n%s" % (name, dt, (r.stdout + r.stderr)[-4000:]))
        elif dt > a.timeout:
            failed.append(name)
            print("FAIL %s took %.1f s (limit %g)" % (name, dt, a.timeout))
        else:
            print("ok   %s executed in %.1f s -> %s" % (name, dt, os.path.join(work, name)))
        # committed notebooks carry no outputs
        with open(nb) as fh:
            if '"output_type"' in fh.read():
                failed.append(name + " (committed with outputs)")
                print("FAIL %s is committed with outputs: clear them (jupyter nbconvert --clear-output)" % name)
    print("%d passed, %d failed" % (len(notebooks) - len(set(f.split()[0] for f in failed)), len(set(
        f.split()[0] for f in failed))))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
