#!/usr/bin/env python3
"""Render the 2D results of a stemsim output file as PNG images.

Usage: python3 examples/render_png.py result.h5 [outdir] [--probe IX IY]

Writes <outdir>/<file stem>_<NAME>.png for every /images/<NAME> dataset and,
when the run saved DPC, <file stem>_dpc_com_x.png and _dpc_com_y.png; with rings
(/rings) <file stem>_rings.png, the radial profile at probe (IX, IY) and averaged
over the scan; with 4D output (/cbed) <file stem>_cbed.png, the diffraction pattern
at probe (IX, IY) on a logarithmic scale (default probe: the scan's centre). In a
series the first point is drawn.
Axes are in Angstrom, taken from /axes/scan_x and /axes/scan_y. Files that
lack the root attribute complete == 1 (an unfinished run) are refused.
"""
import argparse
import os
import sys

try:
    import h5py
    import numpy as np
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
except ImportError as err:
    sys.exit(f"render_png.py: error: {err}; install h5py, numpy and matplotlib "
             "(Debian: apt install python3-h5py python3-matplotlib)")

PROG = "render_png.py"


def fail(msg):
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    sys.exit(1)


def text(value):
    """HDF5 strings may come back as bytes or str."""
    return value.decode() if isinstance(value, bytes) else str(value)


def extent(x, y):
    """imshow extent with pixel centres on the scan positions, y growing downwards."""
    sx = x[1] - x[0] if len(x) > 1 else 1.0
    sy = y[1] - y[0] if len(y) > 1 else 1.0
    return (x[0] - sx / 2, x[-1] + sx / 2, y[-1] + sy / 2, y[0] - sy / 2)


def render(data, x, y, title, label, path, diverging=False):
    fig, ax = plt.subplots(figsize=(6, 5), constrained_layout=True)
    kw = {"cmap": "gray"}
    if diverging:
        lim = float(np.nanmax(np.abs(data))) or 1.0
        kw = {"cmap": "RdBu_r", "vmin": -lim, "vmax": lim}
    im = ax.imshow(data, extent=extent(x, y), origin="upper", interpolation="nearest", **kw)
    ax.set_xlabel("x (Å)")
    ax.set_ylabel("y (Å)")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label=label)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    print(path)


def first_point(dset, core_ndim):
    """The first series point of a dataset with series axes in front."""
    data = dset[()]
    while data.ndim > core_ndim:
        data = data[0]
    return data


def render_probe_data(f, args, stem, x, y):
    """Rings (radial profile) and the 4D pattern at one probe; returns the PNGs written."""
    n = 0
    ix, iy = args.probe if args.probe else (len(x) // 2, len(y) // 2)
    if not (0 <= ix < len(x) and 0 <= iy < len(y)):
        fail(f"--probe {ix} {iy} lies outside the {len(x)} x {len(y)} scan")
    where = f"probe ({ix}, {iy}) at ({x[ix]:.2f}, {y[iy]:.2f}) Å"
    if "rings" in f and "axes/ring_inner_mrad" in f:
        rings = first_point(f["rings"], 3)
        centre = f["axes/ring_inner_mrad"][()] + float(f["rings"].attrs.get("ring_width_mrad", 0)) / 2
        fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
        ax.semilogy(centre, np.maximum(rings[iy, ix], 1e-12), label=where)
        ax.semilogy(centre, np.maximum(rings.mean(axis=(0, 1)), 1e-12), "--", label="mean over the scan")
        ax.set_xlabel("scattering angle (mrad, ring centres)")
        ax.set_ylabel(text(f["rings"].attrs.get("units", "")) + " per ring")
        ax.set_title("radial profile (/rings)")
        ax.legend()
        path = os.path.join(args.outdir, f"{stem}_rings.png")
        fig.savefig(path, dpi=150)
        plt.close(fig)
        print(path)
        n += 1
    if "cbed" in f and "axes/cbed_qx_mrad" in f:
        pattern = first_point(f["cbed"], 4)[iy, ix]
        qx, qy = f["axes/cbed_qx_mrad"][()], f["axes/cbed_qy_mrad"][()]
        fig, ax = plt.subplots(figsize=(6, 5), constrained_layout=True)
        im = ax.imshow(np.log10(np.maximum(pattern, 1e-12)), extent=extent(qx, qy), origin="upper",
                       interpolation="nearest", cmap="inferno")
        ax.set_xlabel("qx (mrad)")
        ax.set_ylabel("qy (mrad)")
        ax.set_title(f"4D pattern, {where}")
        fig.colorbar(im, ax=ax, label="log10 " + text(f["cbed"].attrs.get("units", "")))
        path = os.path.join(args.outdir, f"{stem}_cbed.png")
        fig.savefig(path, dpi=150)
        plt.close(fig)
        print(path)
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Render stemsim 2D results as PNG.")
    ap.add_argument("file", help="stemsim output .h5")
    ap.add_argument("outdir", nargs="?", default=".", help="directory for the PNGs (default: .)")
    ap.add_argument("--probe", nargs=2, type=int, metavar=("IX", "IY"), default=None,
                    help="scan indices of the probe whose rings and 4D pattern are drawn (default: the centre)")
    args = ap.parse_args()

    try:
        f = h5py.File(args.file, "r")
    except OSError as err:
        fail(f"cannot open {args.file}: {err}")
    with f:
        if int(f.attrs.get("complete", 0)) != 1:
            fail(f"{args.file} is incomplete (no root attribute complete=1): "
                 "the run that wrote it did not finish")
        if "axes/scan_x" not in f or "axes/scan_y" not in f:
            fail(f"{args.file} has no /axes/scan_x and /axes/scan_y: not a stemsim output file")
        x = f["axes/scan_x"][()]
        y = f["axes/scan_y"][()]
        os.makedirs(args.outdir, exist_ok=True)
        stem = os.path.splitext(os.path.basename(args.file))[0]
        n = 0
        for name, dset in f.get("images", {}).items():
            a = dset.attrs
            title = f"{name} ({a.get('inner_mrad', 0):g}-{a.get('outer_mrad', 0):g} mrad)"
            render(dset[()], x, y, title, text(a.get("units", "")),
                   os.path.join(args.outdir, f"{stem}_{name}.png"))
            n += 1
        for name in ("dpc_com_x", "dpc_com_y"):
            if name in f:
                render(f[name][()], x, y, f"DPC centre of mass, {name[-1]}",
                       text(f[name].attrs.get("units", "mrad")),
                       os.path.join(args.outdir, f"{stem}_{name}.png"), diverging=True)
                n += 1
        n += render_probe_data(f, args, stem, x, y)
        if n == 0:
            print(f"{PROG}: {args.file} holds no 2D images to render", file=sys.stderr)


if __name__ == "__main__":
    main()
