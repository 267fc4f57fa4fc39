#!/usr/bin/env python3
"""[output] layout = emd read by py4DSTEM (ctest label `interop`).

  interop.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR
             [--py4dstem-python PYTHON]

The small case (multislice, 2 ranks, images, rings, DPC, 4D) is written twice: in
stemsim's layout and in Prismatic's EMD tree. With h5py (always): the tree has Prismatic's
groups and attributes (version 0.9, emd_group_type 2 and 1, output_depth, dim vectors
with name and units) and every dataset equals the native one transposed to x-first (DPC
in 1/Angstrom, Q axes in 1/Angstrom); PACBED, segments and the segmented DPC are kept
as written under /stemsim; a defocus x depth series is named
..._depthNNNN_dfNNNN with output_depth/output_defocus; a PRISM run's /smatrix copied into
the EMD file is read back by smatrix_file. With py4DSTEM (PYTHON from --py4dstem-python,
a virtual environment made by .ci/deps): py4DSTEM's legacy reader (read_legacy12, topgroup
4DSTEM_simulation: py4DSTEM.read takes the EMD 1.0 views, checked by python_pkg) loads the
2D, 3D (rings), DPC and 4D outputs of the 0.9 tree and they equal the native data; without py4DSTEM
the test exits 77 (skipped) after the h5py checks, saying so. With hyperspy in the same
environment: hs.load opens the run's and the series' files (named .emd) and its signals hold
the files' data (total intensity, rings, the series as one signal with its depth and
defocus axes) with the scan axes in
Angstrom (this needs Prismatic's tiles attribute t, which rosettasciio reads). hrtem (a beam
tilt series), cbed (a defocus series) and a positions file are written in the EMD layout too:
py4DSTEM.read loads the HRTEM stack, cbed's pattern, the positions' images, rings and 4D
output, hs.load the HRTEM stack and the positions' total intensity, equal to the native data
(the h5py comparison of every dataset of those trees is ctest mpi_emd_layouts).
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import subprocess
import sys
import textwrap

import itest

A = None
WAVELENGTH_200KEV = 0.025079340449821935  # Angstrom


def run(ranks, extra, name, expect=0):
    """The output's path (small.ini overwrites)."""
    itest.run(A, ranks, extra, name, expect)
    return os.path.join(A.workdir, name + ".h5")


def expect(cond, what):
    if not cond:
        raise SystemExit("FAIL " + what)


def check_structure(native, emd):
    import h5py
    import numpy as np
    with h5py.File(native, "r") as n, h5py.File(emd, "r") as e:
        sim = e["4DSTEM_simulation"]
        expect((int(sim.attrs["version_major"]), int(sim.attrs["version_minor"]), int(sim.attrs["emd_group_type"]))
               == (0, 9, 2), "4DSTEM_simulation attributes %s" % dict(sim.attrs))
        for g in ("datacubes", "counted_datacubes", "diffractionslices", "realslices", "pointlists", "pointlistarrays"):
            expect(g in sim["data"], "data/%s missing" % g)
        expect("simulation_parameters" in sim["metadata/metadata_0/original"], "simulation_parameters missing")
        params = sim["metadata/metadata_0/original/simulation_parameters"].attrs
        expect(abs(float(params["E"]) - 200) < 1e-9 and params["a"] in (b"m", "m"), "parameters E/a: %s" % dict(params))
        expect("stemsim_config" in sim["log"].attrs, "log lacks stemsim's config")
        rs, dc = sim["data/realslices"], sim["data/datacubes"]
        names = {"annular_detector_depth0000": "images/HAADF", "annular_detector_depth0000_BF": "images/BF",
                 "annular_detector_depth0000_ABF": "images/ABF", "annular_detector_depth0000_ADF": "images/ADF",
                 "total_intensity_depth0000": "total_intensity"}
        for group, nat in names.items():
            g = rs[group]
            expect(int(g.attrs["emd_group_type"]) == 1 and "output_depth" in g.attrs, "%s attributes" % group)
            expect(np.array_equal(g["data"][()], n[nat][()].T), "%s differs from %s transposed" % (group, nat))
            expect(np.array_equal(g["dim1"][()], n["axes/scan_x"][()]) and
                   np.array_equal(g["dim2"][()], n["axes/scan_y"][()]), "%s dim1/dim2" % group)
            expect(g["dim1"].attrs["name"] in (b"R_x", "R_x"), "%s dim1 name" % group)
        vd = rs["virtual_detector_depth0000"]
        expect(np.array_equal(vd["data"][()], n["rings"][()].transpose(1, 0, 2)), "rings differ")
        width = n["rings"].attrs["ring_width_mrad"]
        expect(np.allclose(vd["dim3"][()], n["axes/ring_inner_mrad"][()] + width / 2), "ring centres")
        dpc = rs["DPC_CoM_depth0000"]["data"][()]
        scale = 1e-3 / WAVELENGTH_200KEV
        expect(np.allclose(dpc[..., 0], n["dpc_com_x"][()].T * scale, rtol=1e-12) and
               np.allclose(dpc[..., 1], n["dpc_com_y"][()].T * scale, rtol=1e-12), "DPC differs")
        cube = dc["CBED_array_depth0000"]
        expect(np.array_equal(cube["data"][()], n["cbed"][()].transpose(1, 0, 3, 2)), "4D differs")
        expect(cube["data"].chunks[:2] == (1, 1), "4D not chunked by pattern")
        expect(np.allclose(cube["dim3"][()], n["axes/cbed_qx_mrad"][()] * scale), "Q_x axis")
        expect(int(e.attrs["complete"]) == 1, "complete marker")
    print("EMD tree: groups, attributes, every dataset = native transposed (DPC and Q in 1/Angstrom)")


def check_series(emd, defoci, depths):
    import h5py
    with h5py.File(emd, "r") as e:
        rs = e["4DSTEM_simulation/data/realslices"]
        for k, depth in enumerate(depths):
            for j, df in enumerate(defoci):
                g = rs["annular_detector_depth%04d_df%04d" % (k, j)]
                expect(abs(g.attrs["output_depth"] - depth) < 1e-9 and abs(g.attrs["output_defocus"] - df) < 1e-9,
                       "series group %s: depth %s defocus %s" % (g.name, g.attrs["output_depth"],
                                                                  g.attrs.get("output_defocus")))
    print("series: annular_detector_depthNNNN_dfNNNN with output_depth and output_defocus")


def check_py4dstem(native, emd):
    """In the py4DSTEM environment: read every kind of output through py4DSTEM.read."""
    script = textwrap.dedent("""
        import sys, h5py, numpy as np, py4DSTEM
        emd, native, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
        n = h5py.File(native, "r")
        def read(name):  # the 0.9 tree (py4DSTEM.read takes the EMD 1.0 views: python_pkg checks them)
            return py4DSTEM.io.legacy.read_legacy12(emd, topgroup="4DSTEM_simulation", data_id=name)
        checks = [
            ("annular_detector_depth0000", "RealSlice", n["images/HAADF"][()].T),
            ("annular_detector_depth0000_BF", "RealSlice", n["images/BF"][()].T),
            ("virtual_detector_depth0000", "RealSlice", n["rings"][()].transpose(1, 0, 2)),
            ("DPC_CoM_depth0000", "RealSlice", np.stack([n["dpc_com_x"][()].T, n["dpc_com_y"][()].T], -1) * scale),
            ("CBED_array_depth0000", "DataCube", n["cbed"][()].transpose(1, 0, 3, 2)),
        ]
        bad = 0
        for name, kind, want in checks:
            d = read(name)
            got = np.asarray(d.data)
            ok = type(d).__name__ == kind and got.shape == want.shape and np.allclose(got, want, rtol=1e-12, atol=0)
            print("py4DSTEM %s: %s %s %s" % (py4DSTEM.__version__, name, type(d).__name__, "ok" if ok else "FAIL"))
            bad += not ok
        sys.exit(1 if bad else 0)
    """)
    p = subprocess.run([A.py4dstem_python, "-c", script, emd, native, repr(1e-3 / WAVELENGTH_200KEV)],
                       capture_output=True, text=True, timeout=600)
    print(p.stdout.strip())
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("FAIL py4DSTEM could not read the EMD file as expected")


def check_py4dstem_others(files):
    """hrtem, cbed and [scan] positions trees through py4DSTEM.read: the HRTEM stack (a RealSlice,
    one image per beam tilt), cbed's pattern and the positions' 4D output (DataCubes [n][1][Qx][Qy]),
    the positions' image and rings (RealSlices [n][1]) equal the native data."""
    script = textwrap.dedent("""
        import sys, h5py, numpy as np, py4DSTEM
        f = dict(zip(("hrtem", "hrtem_native", "cbed", "cbed_native", "pos", "pos_native"), sys.argv[1:7]))
        h, c, p = (h5py.File(f[k + "_native"], "r") for k in ("hrtem", "cbed", "pos"))
        checks = [
            ("hrtem", "HRTEM", "RealSlice", h["hrtem"][:, 0].transpose(2, 1, 0)),
            ("hrtem", "CBED_array_depth0000_bx0001", "DataCube", h["cbed"][1].transpose(0, 2, 1)[:, None]),
            ("cbed", "CBED_array_depth0000_df0001", "DataCube", c["cbed_pattern"][1].transpose(0, 2, 1)[:, None]),
            ("cbed", "annular_detector_depth0000_df0000", "RealSlice", c["images/HAADF"][0][:, None]),
            ("pos", "annular_detector_depth0000", "RealSlice", p["images/HAADF"][()][:, None]),
            ("pos", "virtual_detector_depth0000", "RealSlice", p["rings"][()][:, None]),
            ("pos", "CBED_array_depth0000", "DataCube", p["cbed"][()].transpose(0, 2, 1)[:, None]),
        ]
        bad = 0
        for file, name, kind, want in checks:
            d = py4DSTEM.read(f[file], data_id=name, verbose=False)
            got = np.asarray(d.data)
            ok = type(d).__name__ == kind and got.shape == want.shape and np.array_equal(got, want)
            print("py4DSTEM: %s %s %s %s" % (file, name, type(d).__name__, "ok" if ok else "FAIL %s" % (got.shape,)))
            bad += not ok
        sys.exit(1 if bad else 0)
    """)
    p = subprocess.run([A.py4dstem_python, "-c", script] + files, capture_output=True, text=True, timeout=600)
    print(p.stdout.strip())
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("FAIL py4DSTEM could not read the hrtem, cbed or positions EMD files as expected")


def check_hyperspy_others(files):
    """hs.load opens the hrtem and positions trees: the HRTEM stack (its title cut to "H" by
    rosettasciio, which drops a Prismatic group name's last four characters) as [tilt][y][x] with
    the pixels in Angstrom, the positions' total intensity along the probe index."""
    script = textwrap.dedent("""
        import os, sys, h5py, numpy as np, hyperspy.api as hs
        hrtem, hrtem_native, pos, pos_native, work = sys.argv[1:6]
        def load(path, name):
            link = os.path.join(work, name + ".emd")
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(path, link)
            s = hs.load(link)
            return {x.metadata.General.title: x for x in (s if isinstance(s, list) else [s])}
        h, p = h5py.File(hrtem_native, "r"), h5py.File(pos_native, "r")
        bad = []
        s = load(hrtem, "hrtem").get("H")
        if s is None or not np.array_equal(s.data, h["hrtem"][:, 0]):
            bad.append("HRTEM stack")
        elif not np.isclose(s.axes_manager["R_x"].scale, h["axes/x"][1] - h["axes/x"][0]):
            bad.append("HRTEM pixel axis %s" % s.axes_manager["R_x"].scale)
        t = load(pos, "positions").get("total_intensity")
        if t is None or not np.array_equal(t.data, p["total_intensity"][()][None, :]):
            bad.append("positions' total intensity")
        print("hyperspy: hrtem and positions trees %s" % (bad or "ok"))
        sys.exit(1 if bad else 0)
    """)
    p = subprocess.run([A.py4dstem_python, "-c", script] + files + [A.workdir], capture_output=True, text=True,
                       timeout=600)
    print(p.stdout.strip())
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("FAIL hyperspy could not read the hrtem or positions EMD files as expected")


def other_trees():
    """hrtem (a beam tilt series), cbed (a defocus series) and a positions file, in the EMD layout
    and natively (the h5py comparison of every dataset is ctest mpi_emd_layouts)."""
    hrtem = ["--set", "simulation.algorithm=hrtem", "--set", "series.beam_tilt_x=0,5"]
    cbed = ["--set", "simulation.algorithm=cbed", "--set", "series.defocus=-20,20"]
    probes = os.path.join(A.workdir, "probes.txt")
    with open(probes, "w") as f:
        f.write("2.0 2.0\n3.1 2.4\n0.5 5.2\n")
    text = open(A.ini).read()
    lines = [l for l in text.split("\n") if not l.split("=")[0].strip() in ("units", "x_start", "x_end", "y_start",
                                                                            "y_end", "step")]
    pos_ini = os.path.join(A.workdir, "positions.ini")
    open(pos_ini, "w").write("\n".join(lines).replace("[scan]", "[scan]\npositions = probes.txt"))
    emd = ["--set", "output.layout=emd"]
    files = []
    for extra, name, ini in ((hrtem, "hrtem", None), (cbed, "cbed", None), ([], "pos", pos_ini)):
        itest.run(A, 1, extra + emd, name + "_emd", 0, ini=ini)
        itest.run(A, 1, extra, name + "_native", 0, ini=ini)
        files += [os.path.join(A.workdir, name + s + ".h5") for s in ("_emd", "_native")]
    return files


def check_hyperspy(native, emd, series):
    """In the same environment: hyperspy's hs.load (rosettasciio's EMD reader) opens a run's and a
    series' EMD files by name (.emd), with the data the files hold and the scan axes in Angstrom."""
    script = textwrap.dedent("""
        import os, sys, h5py, numpy as np, hyperspy.api as hs
        native, emd, series, work = sys.argv[1:5]
        def load(path, name):
            link = os.path.join(work, name + ".emd")  # hs.load picks its reader by the extension
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(path, link)
            s = hs.load(link)
            return {x.metadata.General.title: x for x in (s if isinstance(s, list) else [s])}
        n = h5py.File(native, "r")
        one, many = load(emd, "run"), load(series, "series")
        bad = []
        t = one.get("total_intensity")
        if t is None or not np.allclose(t.data, n["total_intensity"][()], rtol=1e-6, atol=0):
            bad.append("total_intensity of the run")
        else:
            ry, rx = t.axes_manager["R_y"], t.axes_manager["R_x"]
            x = n["axes/scan_x"][()]
            if str(rx.units) != "\u00c5" or not np.isclose(rx.scale, x[1] - x[0]) or not np.isclose(rx.offset, x[0]):
                bad.append("scan axis R_x: %s %s %s" % (rx.units, rx.scale, rx.offset))
        v = one.get("virtual_detector")
        if v is None or not np.allclose(v.data, n["rings"][()].transpose(2, 0, 1), rtol=1e-6, atol=0):
            bad.append("virtual_detector (rings) of the run")
        with h5py.File(series, "r") as f:
            rs = f["4DSTEM_simulation/data/realslices"]
            s = many.get("total_intensity")  # one signal, the series (depth, defocus) its navigation
            want = np.stack([np.stack([rs["total_intensity_depth%04d_df%04d/data" % (k, j)][()].T for j in range(2)])
                             for k in range(2)])
            if s is None or not np.allclose(s.data, want, rtol=1e-6, atol=0):
                bad.append("series: %s" % (None if s is None else s.data.shape))
            elif [s.axes_manager[a].offset for a in ("defocus", "depth")] != [-20, 5.43]:
                bad.append("series axes: %s" % s.axes_manager)
        print("hyperspy %s: the run's %d signals and the series' %d signals loaded; %s" %
              (hs.__version__ if hasattr(hs, "__version__") else "", len(one), len(many), bad or "data and axes ok"))
        sys.exit(1 if bad else 0)
    """)
    p = subprocess.run([A.py4dstem_python, "-c", script, native, emd, series, A.workdir],
                       capture_output=True, text=True, timeout=600)
    print(p.stdout.strip())
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("FAIL hyperspy could not read the EMD files as expected")


def hyperspy_available():
    p = subprocess.run([A.py4dstem_python, "-c", "import hyperspy.api"], capture_output=True, text=True, timeout=300)
    return p.returncode == 0


def py4dstem_available():
    if not A.py4dstem_python or not os.path.exists(A.py4dstem_python):
        return False
    p = subprocess.run([A.py4dstem_python, "-c", "import py4DSTEM"], capture_output=True, text=True, timeout=300)
    return p.returncode == 0


def main():
    global A
    A = itest.parse_args(("--py4dstem-python", {"default": ""}))
    if not itest.have_numpy_h5py():
        return 77
    itest.small_case(A, "interop", replace=(("defocus = 0\n", ""),))

    native = run(2, [], "native")
    emd = run(2, ["--set", "output.layout=emd"], "emd")
    check_structure(native, emd)
    extra = ["--set", "detector.save_pacbed=true", "--set", "detector.segments=4", "--set", "detector.segment_inner=20",
             "--set", "detector.segment_outer=60"]
    kept_native, kept_emd = run(1, extra, "kept_native"), run(1, extra + ["--set", "output.layout=emd"], "kept_emd")
    import h5py
    import numpy as np
    with h5py.File(kept_native, "r") as n, h5py.File(kept_emd, "r") as e:
        for name in ("pacbed", "segments", "dpc_segments_x", "axes/scan_x"):
            expect(np.array_equal(n[name][()], e["stemsim/" + name][()]), "/%s not kept as /stemsim/%s" % (name, name))
    print("kept under /stemsim: pacbed, segments, segmented DPC, axes")
    defoci, depths = [-20.0, 20.0], [5.43, 10.86]
    series = run(2, ["--set", "output.layout=emd", "--set", "series.defocus=-20,20", "--set", "output.depths=5.43,10.86"],
                 "series")
    check_series(series, defoci, depths)
    prism = ["--set", "simulation.algorithm=prism"]
    stored = run(1, prism + ["--set", "output.layout=emd", "--set", "output.save_smatrix=true"], "prism_emd")
    reread = run(1, prism + ["--set", "simulation.smatrix_file=" + stored], "prism_reread")
    with h5py.File(stored, "r") as a, h5py.File(reread, "r") as b:
        expect(np.array_equal(a["4DSTEM_simulation/data/realslices/annular_detector_depth0000/data"][()],
                              b["images/HAADF"][()].T), "smatrix_file from an EMD file changed the image")
    print("PRISM: /smatrix kept in the EMD file and read back by smatrix_file")
    others = other_trees()

    if not py4dstem_available():
        print("SKIP py4DSTEM is not installed (.ci/deps makes build-venv/ with it when pip can reach PyPI): "
              "the h5py checks above passed")
        return 77
    check_py4dstem(native, emd)
    check_py4dstem_others(others)
    if not hyperspy_available():
        print("SKIP hyperspy is not installed in %s (.ci/deps installs it beside py4DSTEM): py4DSTEM's "
              "checks passed" % A.py4dstem_python)
        return 77
    check_hyperspy(native, emd, series)
    check_hyperspy_others([others[0], others[1], others[4], others[5]])
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
