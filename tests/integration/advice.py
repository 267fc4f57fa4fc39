#!/usr/bin/env python3
"""Convergence advice through the program (ctest label `mpi`): --dry-run prints the plan's
advice (a HAADF range beyond the band limit) or "advice: none"; a run stores the same lines
in the output's root attribute "advice" (native layout) and in /stemsim's (EMD layout), and
"" when there is none. --convergence (no output file; 1 and 2 ranks print the same numbers)
finds BF 0-20 mrad converged and HAADF 60-200 mrad not: at 0.1 Angstrom the band stops at
86 mrad, at half the pixel size at 172 mrad, so the refined HAADF collects several times
more; hrtem is refused (exit 3). Reads the attributes with h5dump. Exit: 0 pass, 1 fail,
77 skip.

  advice.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR
"""
import os
import shutil
import subprocess
import sys

import itest

BEYOND = ["--set", "images.HAADF=60 200"]  # 0.1 A pixels at 200 keV reach ~85 mrad
CLEAN = ["--set", "images.HAADF=60 80", "--set", "simulation.slice_thickness=1.3575",
         "--set", "simulation.pixel_size=0.05"]
FOUND = "the range 60-200 mrad is cut at the band limit"


def attribute(path, where):
    p = subprocess.run(["h5dump", "-a", where, path], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("FAIL h5dump -a %s %s: %s" % (where, path, p.stderr))
    return p.stdout


def main():
    a = itest.parse_args()
    if not shutil.which("h5dump"):
        print("SKIP h5dump not available")
        return 77
    itest.small_case(a, "advice")
    fails = []
    out = itest.run(a, 1, BEYOND + ["--dry-run"], "dry")
    if FOUND not in out or "use pixel_size <=" not in out:
        fails.append("dry run does not advise on the HAADF range:\n" + out)
    out = itest.run(a, 1, CLEAN + ["--dry-run"], "dry")
    if "advice: none" not in out:
        fails.append("clean dry run is not 'advice: none':\n" + out)
    itest.run(a, 2, BEYOND, "beyond")
    if FOUND not in attribute(os.path.join(a.workdir, "beyond.h5"), "/advice"):
        fails.append("/advice of beyond.h5 lacks the HAADF advice")
    itest.run(a, 1, CLEAN, "clean")
    if 'DATA {\n   (0): ""' not in attribute(os.path.join(a.workdir, "clean.h5"), "/advice"):
        fails.append("/advice of clean.h5 is not empty:\n" + attribute(os.path.join(a.workdir, "clean.h5"), "/advice"))
    itest.run(a, 1, BEYOND + ["--set", "output.layout=emd", "--set", "detector.save_4d=false"], "emd")
    if FOUND not in attribute(os.path.join(a.workdir, "emd.h5"), "/stemsim/advice"):
        fails.append("/stemsim/advice of the EMD file lacks the HAADF advice")
    conv = ["--convergence", "--set", "images.BF=0 20", "--set", "images.HAADF=60 200", "-q"]
    lines = {}
    for ranks in (1, 2):
        out = itest.run(a, ranks, conv, "convergence")
        lines[ranks] = [l for l in out.split("\n") if l.startswith("  BF ") or l.startswith("  HAADF ")]
        if os.path.exists(os.path.join(a.workdir, "convergence.h5")):
            fails.append("--convergence wrote an output file")
    bf = [l for l in lines[1] if l.startswith("  BF 0-20 mrad")]
    haadf = [l for l in lines[1] if l.startswith("  HAADF 60-200 mrad")]
    if len(bf) != 1 or "(converged to 1%)" not in bf[0]:
        fails.append("--convergence: BF not reported converged: %s" % lines[1])
    if len(haadf) != 1 or "not converged" not in haadf[0]:
        fails.append("--convergence: HAADF not reported unconverged: %s" % lines[1])
    else:
        base, fine = (float(haadf[0].split(": ")[1].split(" as configured")[0]),
                      float(haadf[0].split(", ")[1].split(" refined")[0]))
        if not fine > 2 * base:
            fails.append("--convergence: the refined HAADF (%g) should collect far more than %g" % (fine, base))
    if lines[1] != lines[2]:
        fails.append("--convergence on 1 and 2 ranks differ:\n%s\n%s" % (lines[1], lines[2]))
    out = itest.run(a, 1, ["--convergence", "--set", "simulation.algorithm=hrtem"], "conv_hrtem", expect=3)
    if "--convergence reruns a window of a STEM scan grid" not in out:
        fails.append("--convergence with hrtem: no clear refusal:\n" + out)
    for f in fails:
        print("FAIL " + f)
    print("PASS" if not fails else "%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
