#!/usr/bin/env python3
"""[output] layout = emd for hrtem, cbed and [scan] positions (ctest mpi_emd_layouts, label `mpi`).

  emd_layouts.py --stemsim BIN --mpiexec BIN [--mpi-flag F ...] --config small.ini --workdir DIR

Each case runs twice, in stemsim's layout and in Prismatic's EMD tree, and every dataset of
the tree must equal the native one it comes from (h5py): hrtem with a beam tilt x defocus
series and the exit wave (realslices/HRTEM_..., exit_wave_... [Nx][Ny][tilts] stacked over
the beam tilts, their tilts in mrad), cbed with a defocus series (its pattern as a
[1][1][Qx][Qy] datacube) and a positions file on 2 ranks with a defocus x depth series (one
probe axis as [n_probes][1], dim1 the probe index, the positions in simulation_parameters
probes_x, probes_y and /stemsim/axes). Negative controls: copies of the EMD files with one
value changed (an HRTEM pixel, the exit wave, a pattern, a positions image) must fail the same
comparison. Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import shutil
import sys

import itest

A = None
TAGS = (("tilt_x", "_tx"), ("tilt_y", "_ty"), ("beam_tilt_x", "_bx"), ("beam_tilt_y", "_by"), ("defocus", "_df"))


def run(ranks, extra, name, ini=None):
    itest.run(A, ranks, extra, name, 0, ini=ini)
    return os.path.join(A.workdir, name + ".h5")


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def axis_names(n):
    """The native file's series axes, in order."""
    names = n["total_intensity"].attrs.get("series_axes", "")
    return [a.strip() for a in text(names).split(",") if a.strip()]


def series_points(n):
    """Every series point of the native file: {axis: index}, row-major over series_axes."""
    import numpy as np
    names = axis_names(n)
    for idx in np.ndindex(*n["total_intensity"].shape[:len(names)]):
        yield dict(zip(names, idx)), idx


def suffix(point, stacked=False):
    s = "depth%04d" % point.get("depth", 0)
    for axis, tag in TAGS:
        if axis in point and not (stacked and axis.startswith("beam_tilt_")):
            s += "%s%04d" % (tag, point[axis])
    return s


def probe_axis(a):
    """A native [n_probes](...) block as the tree's [n_probes][1](...)."""
    return a[:, None]


def compare(native, emd):
    """The differences between the EMD tree and the native file (empty: equal)."""
    import h5py
    import numpy as np
    bad = []

    def same(got, want, what, exact=True):
        ok = got.shape == want.shape and (np.array_equal(got, want) if exact else np.allclose(got, want, rtol=1e-12))
        if not ok:
            bad.append(what)

    with h5py.File(native, "r") as n, h5py.File(emd, "r") as e:
        rs, dc = e["4DSTEM_simulation/data/realslices"], e["4DSTEM_simulation/data/datacubes"]
        params = e["4DSTEM_simulation/metadata/metadata_0/original/simulation_parameters"].attrs
        scale = 1e-3 / float(n.attrs["wavelength_angstrom"])
        n_probes = n["axes/probe_x"].shape[0]
        for axis in ("probe_x", "probe_y"):
            same(e["stemsim/axes/" + axis][()], n["axes/" + axis][()], "/stemsim/axes/" + axis)
        if n_probes > 1:
            for axis in ("x", "y"):
                same(np.asarray(params["probes_" + axis]), n["axes/probe_" + axis][()], "probes_" + axis)
        beam = [a for a in axis_names(n) if a.startswith("beam_tilt_")]
        for point, idx in series_points(n):
            sfx = suffix(point)
            groups = {"total_intensity_" + sfx: n["total_intensity"][idx]}
            if "images" in n:
                for name in n["images"]:
                    plain = "annular_detector_" + sfx + ("" if name == "HAADF" else "_" + name)
                    groups[plain] = n["images/" + name][idx]
            if "rings" in n:
                groups["virtual_detector_" + sfx] = n["rings"][idx]
            for g, want in groups.items():
                same(rs[g + "/data"][()], probe_axis(want), g)
                dim1 = rs[g + "/dim1"][()]
                same(dim1, np.arange(n_probes, dtype=float) if n_probes > 1 else n["axes/probe_x"][()], g + " dim1")
            if "dpc_com_x" in n:
                want = np.stack([n["dpc_com_x"][idx], n["dpc_com_y"][idx]], -1) * scale
                same(rs["DPC_CoM_%s/data" % sfx][()], probe_axis(want), "DPC_CoM_" + sfx, exact=False)
            for cube in ("cbed", "cbed_pattern"):
                if cube in n:
                    same(dc["CBED_array_%s/data" % sfx][()], probe_axis(n[cube][idx].transpose(0, 2, 1)),
                         "CBED_array_%s from /%s" % (sfx, cube))
            others = [a for a in point if not a.startswith("beam_tilt_")]
            t = 0
            for a in beam:
                t = t * n["axes/" + a].shape[0] + point[a]
            for native_name, base in (("hrtem", "HRTEM"), ("exit_wave", "exit_wave")):
                if native_name not in n:
                    continue
                g = rs[base + ("_" + suffix(point, stacked=True) if others else "")]
                image = n[native_name][idx][0]
                got = g["data"][:, :, t]
                if native_name == "exit_wave":
                    got = np.stack([got.real, got.imag], -1)  # h5py reads Prismatic's {r, i} as complex
                    image = image.transpose(1, 0, 2)
                else:
                    image = image.T
                same(got, image, "%s slice %d" % (g.name, t))
                same(g["dim1"][()], n["axes/x"][()], g.name + " dim1")
                for k, a in enumerate(("beam_tilt_x", "beam_tilt_y")):
                    if a in point:
                        same(g["tilts"][t, k], n["axes/" + a][point[a]], g.name + " tilts " + a, exact=False)
        expect_a = {"hrtem": "t", "prism": "p"}.get(text(n.attrs["algorithm"]), "m")
        a = params["a"]
        if text(a) != expect_a:
            bad.append("simulation_parameters a = %s" % a)
        if int(e.attrs["complete"]) != 1:
            bad.append("complete")
    return bad


def tampered(emd, name, path):
    """A copy of emd with one value of dataset `path` changed."""
    import h5py
    copy = os.path.join(A.workdir, name + ".h5")
    shutil.copyfile(emd, copy)
    with h5py.File(copy, "r+") as f:
        d = f[path]
        v = d[()]
        flat = v.reshape(-1)
        flat[len(flat) // 2] += 1e-3
        d[...] = v
    return copy


def positions_ini():
    text = open(A.ini).read()
    lines = [l for l in text.split("\n") if not any(l.startswith(k) for k in
                                                     ("units", "x_start", "x_end", "y_start", "y_end", "step"))]
    with open(os.path.join(A.workdir, "probes.txt"), "w") as f:
        f.write("# x y (Angstrom)\n2.0 2.0\n3.1 2.4\n0.5 5.2\n2.0 2.0\n4.4 1.3\n")
    path = os.path.join(A.workdir, "positions.ini")
    open(path, "w").write("\n".join(lines).replace("[scan]", "[scan]\npositions = probes.txt"))
    return path


def main():
    global A
    A = itest.parse_args()
    if not itest.have_numpy_h5py():
        return 77
    itest.small_case(A, "emd_layouts", replace=(("defocus = 0\n", ""),))
    hrtem = ["--set", "simulation.algorithm=hrtem", "--set", "series.beam_tilt_x=0,5", "--set", "series.defocus=-20,20",
             "--set", "output.save_exit_wave=true"]
    cbed = ["--set", "simulation.algorithm=cbed", "--set", "series.defocus=-20,20"]
    pos = positions_ini()
    series = ["--set", "series.defocus=-20,20", "--set", "output.depths=5.43,10.86"]
    emd = ["--set", "output.layout=emd"]
    cases = {
        "hrtem": (run(1, hrtem, "hrtem_native"), run(1, hrtem + emd, "hrtem_emd")),
        "hrtem plain": (run(1, hrtem[:2], "hrtem1_native"), run(1, hrtem[:2] + emd, "hrtem1_emd")),
        "cbed": (run(1, cbed, "cbed_native"), run(1, cbed + emd, "cbed_emd")),
        "positions": (run(2, series, "pos_native", ini=pos), run(2, series + emd, "pos_emd", ini=pos)),
    }
    failed = 0
    for name, (native, emd) in cases.items():
        bad = compare(native, emd)
        print("%s: %s" % (name, "every EMD dataset equals the native one" if not bad else "FAIL %s" % bad))
        failed += bool(bad)
    import h5py
    with h5py.File(cases["hrtem plain"][1], "r") as f:
        if "4DSTEM_simulation/data/realslices/HRTEM/data" not in f:
            print("FAIL a plain hrtem run's stack is not realslices/HRTEM (Prismatic's name)")
            failed += 1
    controls = (("hrtem", "control_hrtem", "4DSTEM_simulation/data/realslices/HRTEM_depth0000_df0001/data"),
                ("hrtem", "control_wave", "4DSTEM_simulation/data/realslices/exit_wave_depth0000_df0000/data"),
                ("cbed", "control_cbed", "4DSTEM_simulation/data/datacubes/CBED_array_depth0000_df0001/data"),
                ("positions", "control_pos", "4DSTEM_simulation/data/realslices/total_intensity_depth0001_df0000/data"))
    for case, name, path in controls:
        native, emd = cases[case]
        if not compare(native, tampered(emd, name, path)):
            print("FAIL negative control: a changed %s went unnoticed" % path)
            failed += 1
    print("negative controls: a changed value in HRTEM, exit_wave, a pattern and a positions image is caught")
    # an EMD file not named .emd: hyperspy's hs.load would not know it; said (issue 39 item 8)
    log = itest.run(A, 1, ["--set", "output.layout=emd", "--set", "simulation.algorithm=cbed"], "named_h5")
    if "name it .emd" not in log:
        print("FAIL layout = emd written to a .h5 name without a hint at .emd")
        failed += 1
    # an [images] range beyond the simulated angles is labelled with the angles it integrates
    path = run(1, ["--set", "images.WIDE=60 1000"], "wide_range")
    with h5py.File(path, "r") as f:
        a = f["images/WIDE"].attrs
        top = float(a["outer_mrad"])
        if not (top < 1000 and float(a.get("outer_mrad_requested", 0)) == 1000):
            print("FAIL an [images] range to 1000 mrad is labelled outer_mrad = %g (requested %s)"
                  % (top, a.get("outer_mrad_requested")))
            failed += 1
    # a seed above 2^53 is kept exactly in the EMD metadata's rs (it was rounded, then cut to 32 bits)
    big = 9007199254740993
    path = run(1, cbed[:2] + ["--set", "output.layout=emd", "--set", "simulation.seed=%d" % big], "seed_emd")
    seeds = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: seeds.append(int(o.attrs["rs"])) if "rs" in o.attrs else None)
    if seeds != [big]:
        print("FAIL the EMD metadata's rs holds %s, not the seed %d" % (seeds, big))
        failed += 1
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
