#!/usr/bin/env python3
"""Render the 2D results of a stemsim output file as PNG images.

Usage: python3 examples/render_png.py result.h5 [outdir] [--probe IX IY] [--point I [J ...]]
                                         [--max-panels N] [--summary]

Writes <outdir>/<file stem>_<NAME>.png for every /images/<NAME> dataset and,
when the run saved DPC, <file stem>_dpc_com_x.png and _dpc_com_y.png; with rings
(/rings) <file stem>_rings.png, the radial profile at probe (IX, IY) and averaged
over the scan; with 4D output (/cbed) <file stem>_cbed.png, the diffraction pattern
at probe (IX, IY) on a logarithmic scale (default probe: the scan's centre).
A series (tilt, defocus, depth ... axes in front, named by the attribute series_axes)
draws one panel per point, titled with the point's axis values, up to --max-panels
(default 12; beyond that the first point, with a note); --point picks one point by its
indices along the series axes (the rings and the 4D pattern use it, or the first point).
--summary prints one line per drawn panel (dataset, point, min, max, mean) for checks.
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


OPEN_ENDED_MRAD = 1e8  # an [images] range "inner max" is stored with a huge outer angle


def range_text(attrs):
    inner, outer = float(attrs.get("inner_mrad", 0)), float(attrs.get("outer_mrad", 0))
    return f"{inner:g} mrad and beyond" if outer >= OPEN_ENDED_MRAD else f"{inner:g}-{outer:g} mrad"


def series_points(f, dset, core_ndim, chosen):
    """[(label, index tuple)] of the series points to draw (one entry (\"\", ()) without a series)."""
    lead = dset.ndim - core_ndim
    if lead <= 0:
        return [("", ())]
    names = [n.strip() for n in text(dset.attrs.get("series_axes", "")).split(",") if n.strip()]
    names = names if len(names) == lead else [f"axis {k}" for k in range(lead)]
    shape = dset.shape[:lead]
    if chosen is not None:
        if len(chosen) != lead or any(not 0 <= c < n for c, n in zip(chosen, shape)):
            fail(f"--point {' '.join(map(str, chosen))}: the series has {lead} axes ({', '.join(names)}) of "
                 f"lengths {' x '.join(map(str, shape))}")
        points = [tuple(chosen)]
    else:
        points = list(np.ndindex(*shape))

    def label(idx):
        parts = []
        for name, k in zip(names, idx):
            values = f[f"axes/{name}"] if f"axes/{name}" in f else None
            unit = text(values.attrs.get("units", "")) if values is not None else ""
            parts.append(f"{name} {values[k]:g} {unit}".strip() if values is not None else f"{name} [{k}]")
        return ", ".join(parts)
    return [(label(p), p) for p in points]


def render(f, dset, x, y, title, label, path, args, diverging=False):
    """One panel per series point (or the chosen one) of a [series...][scan_y][scan_x] dataset."""
    points = series_points(f, dset, 2, args.point)
    note = ""
    if len(points) > args.max_panels:
        note = f" (point 1 of {len(points)}; --point chooses another)"
        points = points[:1]
    cols = min(len(points), 4)
    rows = (len(points) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 4 * rows), constrained_layout=True, squeeze=False)
    for ax in axes.flat[len(points):]:
        ax.axis("off")
    for ax, (where, idx) in zip(axes.flat, points):
        data = np.asarray(dset[idx] if idx else dset[()], dtype=float)
        kw = {"cmap": "gray"}
        if diverging:
            lim = float(np.nanmax(np.abs(data))) or 1.0
            kw = {"cmap": "RdBu_r", "vmin": -lim, "vmax": lim}
        im = ax.imshow(data, extent=extent(x, y), origin="upper", interpolation="nearest", **kw)
        ax.set_xlabel("x (Å)")
        ax.set_ylabel("y (Å)")
        ax.set_title(where or title, fontsize=9 if where else None)
        fig.colorbar(im, ax=ax, label=label)
        if args.summary:
            print(f"DRAWN {dset.name} point {list(idx)} min {data.min():.17g} max {data.max():.17g} "
                  f"mean {data.mean():.17g}")
    if points[0][0]:
        fig.suptitle(title + note)
    if args.summary:
        print(f"FIGURE {os.path.basename(path)} {title}{note}")
    fig.savefig(path, dpi=150)
    plt.close(fig)
    print(path)


def one_point(f, dset, core_ndim, args):
    """The chosen (default: first) series point of a dataset with series axes in front."""
    where, idx = series_points(f, dset, core_ndim, args.point)[0]
    return (dset[idx] if idx else dset[()]), where


def render_probe_data(f, args, stem, x, y):
    """Rings (radial profile) and the 4D pattern at one probe; returns the PNGs written."""
    n = 0
    ix, iy = args.probe if args.probe else (len(x) // 2, len(y) // 2)
    if not (0 <= ix < len(x) and 0 <= iy < len(y)):
        fail(f"--probe {ix} {iy} lies outside the {len(x)} x {len(y)} scan")
    where = f"probe ({ix}, {iy}) at ({x[ix]:.2f}, {y[iy]:.2f}) Å"
    if "rings" in f and "axes/ring_inner_mrad" in f:
        rings, point = one_point(f, f["rings"], 3, args)
        centre = f["axes/ring_inner_mrad"][()] + float(f["rings"].attrs.get("ring_width_mrad", 0)) / 2
        fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
        ax.semilogy(centre, np.maximum(rings[iy, ix], 1e-12), label=where)
        ax.semilogy(centre, np.maximum(rings.mean(axis=(0, 1)), 1e-12), "--", label="mean over the scan")
        ax.set_xlabel("scattering angle (mrad, ring centres)")
        ax.set_ylabel(text(f["rings"].attrs.get("units", "")) + " per ring")
        ax.set_title("radial profile (/rings)" + (f", {point}" if point else ""))
        ax.legend()
        path = os.path.join(args.outdir, f"{stem}_rings.png")
        fig.savefig(path, dpi=150)
        plt.close(fig)
        print(path)
        n += 1
    if "cbed" in f and "axes/cbed_qx_mrad" in f:
        patterns, point = one_point(f, f["cbed"], 4, args)
        pattern = patterns[iy, ix]
        qx, qy = f["axes/cbed_qx_mrad"][()], f["axes/cbed_qy_mrad"][()]
        fig, ax = plt.subplots(figsize=(6, 5), constrained_layout=True)
        im = ax.imshow(np.log10(np.maximum(pattern, 1e-12)), extent=extent(qx, qy), origin="upper",
                       interpolation="nearest", cmap="inferno")
        ax.set_xlabel("qx (mrad)")
        ax.set_ylabel("qy (mrad)")
        ax.set_title(f"4D pattern, {where}" + (f"\n{point}" if point else ""))
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
    ap.add_argument("--point", nargs="+", type=int, metavar="I", default=None,
                    help="one series point, by its index along each series axis (default: every point as a panel)")
    ap.add_argument("--max-panels", type=int, default=12, help="most panels per figure (default 12)")
    ap.add_argument("--summary", action="store_true", help="print one line per drawn panel (for checks)")
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
            render(f, dset, x, y, f"{name} ({range_text(dset.attrs)})", text(dset.attrs.get("units", "")),
                   os.path.join(args.outdir, f"{stem}_{name}.png"), args)
            n += 1
        for name in ("dpc_com_x", "dpc_com_y"):
            if name in f:
                render(f, f[name], x, y, f"DPC centre of mass, {name[-1]}", text(f[name].attrs.get("units", "mrad")),
                       os.path.join(args.outdir, f"{stem}_{name}.png"), args, diverging=True)
                n += 1
        n += render_probe_data(f, args, stem, x, y)
        if n == 0:
            print(f"{PROG}: {args.file} holds no 2D images to render", file=sys.stderr)


if __name__ == "__main__":
    main()
