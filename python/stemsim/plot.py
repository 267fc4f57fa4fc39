"""Matplotlib views of stemsim results (each returns its Figure).

    r = stemsim.read("result.h5")
    stemsim.plot.images(r)                         # every /images/<NAME>; a series: a panel per point
    stemsim.plot.images(r, "HAADF", point={"tilt_x": 0})
    stemsim.plot.rings(r, probe=(1, 1))            # radial profile at a probe and over the scan
    stemsim.plot.pattern(r, probe=(1, 1))          # the 4D pattern at a probe (log scale)
    stemsim.plot.series(r, "HAADF")                # scan mean of an image along the series axis, +- its error
    stemsim.plot.render("result.h5", "png/")       # all of them to PNG files (the command stemsim-render)
"""
import numpy as np

from .io import OPEN_ENDED_MRAD


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _extent(a, xdim, ydim):
    x = np.asarray(a[xdim].values if xdim in a.coords else np.arange(a.sizes[xdim]), float)
    y = np.asarray(a[ydim].values if ydim in a.coords else np.arange(a.sizes[ydim]), float)
    sx = x[1] - x[0] if len(x) > 1 else 1.0
    sy = y[1] - y[0] if len(y) > 1 else 1.0
    return (x[0] - sx / 2, x[-1] + sx / 2, y[-1] + sy / 2, y[0] - sy / 2)


def _select(a, point):
    if point:
        a = a.isel({k: v for k, v in point.items() if isinstance(v, (int, np.integer))})
        a = a.sel({k: v for k, v in point.items() if not isinstance(v, (int, np.integer))}, method="nearest")
    return a


def _point_title(a):
    return ", ".join("%s %g" % (d, float(a[d])) for d in a.coords if a[d].ndim == 0 and d in (
        "tilt_x", "tilt_y", "beam_tilt_x", "beam_tilt_y", "defocus", "depth"))


def images(results, names=None, point=None, max_panels=12, cmap="gray", ncols=None, size=3.2, symmetric=False):
    """Every /images/<NAME> (or the NAMEs given) in one figure, a panel each, drawn with xarray's
    faceting (DataArray.plot(col=..., col_wrap=...)).

    A series gives one panel per point (up to max_panels per image) unless `point` picks one.
    The panels of one image share a colour scale (so a series' points compare), each image its
    own; each panel has its colour bar and is titled by the image's name, its angular range
    and the series point.

    Args:
        results: a Results from stemsim.read().
        names: an image name or a list of them (default every /images/<NAME>); any other
            dataset over the scan by its path ("dpc_com_x", "total_intensity") as well.
        point: {series axis: index (an int) or value (nearest)}, e.g. {"defocus": 0}.
        max_panels: the most panels drawn of each image's series points.
        cmap: matplotlib colour map.
        ncols: panels per row (default up to 4).
        size: the height of a panel in inches.
        symmetric: colour scales symmetric about 0 (for signed maps such as the DPC centre of
            mass, with a diverging cmap such as "RdBu_r").

    Returns:
        matplotlib.figure.Figure
    """
    import xarray as xr
    if names is None:
        names = [n.split("/", 1)[1] for n in results.names if n.startswith("images/")]
    elif isinstance(names, str):
        names = [names]
    panels, titles, groups = [], [], []
    for name in names:
        key = "images/" + name if "images/" + name in results else name
        a = _select(results[key], point)
        lead = [d for d in a.dims if d not in ("scan_y", "scan_x")]
        points = [a]
        if lead:
            stacked = a.stack(_point=lead)
            points = [stacked.isel(_point=i) for i in range(min(stacked.sizes["_point"], max_panels))]
        for p in points:
            pt = _point_title(p)
            titles.append(" ".join(filter(None, (name, a.attrs.get("range", "")))) + ("\n" + pt if pt else ""))
            groups.append(name)
            panels.append(p.drop_vars([c for c in p.coords if c not in ("scan_y", "scan_x")]).astype(float))
    stack = xr.concat(panels, dim="panel").transpose("panel", "scan_y", "scan_x")
    stack["panel"] = np.arange(len(panels))
    stack.scan_x.attrs.update(long_name="x", units="angstrom")
    stack.scan_y.attrs.update(long_name="y", units="angstrom")
    grid = stack.plot.imshow(x="scan_x", y="scan_y", col="panel", col_wrap=ncols or min(len(panels), 4),
                             cmap=cmap, add_colorbar=False, yincrease=False, size=size, aspect=1.0)
    fig = grid.fig
    scale = {}
    for i, name in enumerate(groups):  # one colour scale per image, over its panels
        lo, hi = float(stack[i].min()), float(stack[i].max())
        was = scale.get(name, (lo, hi))
        scale[name] = (min(lo, was[0]), max(hi, was[1]))
    for ax, title, name in zip(grid.axs.flat, titles, groups):
        im = ax.images[0]
        lo, hi = scale[name]
        if symmetric:
            lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
        im.set_clim(lo, hi if hi > lo else lo + 1e-30)
        ax.set_title(title, fontsize=9)
        bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, format="%.3g")
        bar.ax.tick_params(labelsize=7)
    fig.subplots_adjust(wspace=0.55, hspace=0.4, right=0.95, top=1 - 0.35 / fig.get_size_inches()[1])  # colour bars, titles
    return fig


def rings(results, probe=None, point=None, log=True, ax=None):
    """The rings' radial profile: intensity per ring against its centre angle (mrad), at a probe
    and averaged over the scan, with standard errors when the file has them.

    Args:
        results: a Results.
        probe: (ix, iy) scan indices (a probe index with [scan] positions); default the centre.
        point: one series point, {axis: index or value} (default the first).
        log: a logarithmic intensity axis.
        ax: a matplotlib Axes to draw into (default a new figure).

    Returns:
        matplotlib.figure.Figure
    """
    plt = _plt()
    a = _select(results["rings"], point)
    err = results.error("rings")
    err = _select(err, point) if err is not None else None
    lead = [d for d in a.dims if d not in ("scan_y", "scan_x", "ring", "probe")]
    if lead:
        a = a.isel({d: 0 for d in lead})
        err = err.isel({d: 0 for d in lead}) if err is not None else None
    if "probe" in a.dims:
        sel = {"probe": probe if probe is not None else a.sizes["probe"] // 2}
        scan = ("probe",)
    else:
        ix, iy = probe if probe is not None else (a.sizes["scan_x"] // 2, a.sizes["scan_y"] // 2)
        sel = {"scan_x": ix, "scan_y": iy}
        scan = ("scan_y", "scan_x")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    q = a["ring"].values
    at = a.isel(sel).values
    mean = a.mean(scan).values
    if err is not None:
        ax.errorbar(q, at, yerr=err.isel(sel).values, fmt=".-", capsize=2, label="probe %s" % (tuple(sel.values()),))
    else:
        ax.plot(q, at, ".-", label="probe %s" % (tuple(sel.values()),))
    ax.plot(q, mean, "-", label="scan mean")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("scattering angle (mrad, ring centre)")
    ax.set_ylabel("intensity per ring (%s)" % a.attrs.get("units", ""))
    pt = _point_title(a)
    ax.set_title("rings" + (" (" + pt + ")" if pt else ""))
    ax.legend()
    return fig


def pattern(results, probe=None, point=None, log=True, ax=None, cmap="magma", name="cbed"):
    """The 4D pattern (/cbed) at a probe, on a log scale; reads only that pattern from the file.

    Args:
        results: a Results.
        probe: (ix, iy) scan indices (a probe index with [scan] positions); default the centre.
        point: one series point, {axis: index or value} (default the first).
        log: log10 of the intensity (floored at 1e-7 of the maximum).
        ax: a matplotlib Axes to draw into (default a new figure).
        cmap: matplotlib colour map.
        name: "cbed", or "pacbed" for the position-averaged pattern.

    Returns:
        matplotlib.figure.Figure
    """
    plt = _plt()
    a = results[name]
    if name == "cbed":
        a = _select(a, point)
        lead = [d for d in a.dims if d not in ("scan_y", "scan_x", "qy", "qx", "probe")]
        a = a.isel({d: 0 for d in lead})
        if "probe" in a.dims:
            a = a.isel(probe=probe if probe is not None else a.sizes["probe"] // 2)
        else:
            ix, iy = probe if probe is not None else (a.sizes["scan_x"] // 2, a.sizes["scan_y"] // 2)
            a = a.isel(scan_x=ix, scan_y=iy)
    img = np.asarray(a.values, float)
    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 4.5))
    else:
        fig = ax.figure
    if log:
        pos = img[img > 0]
        floor = pos.max() * 1e-7 if pos.size else 1e-12
        img = np.log10(np.maximum(img, floor))
    im = ax.imshow(img, cmap=cmap, extent=_extent(a, "qx", "qy"))
    ax.set_xlabel("qx (mrad)")
    ax.set_ylabel("qy (mrad)")
    ax.set_title("%s%s" % (name, " (log10)" if log else ""))
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return fig


def series(results, name="HAADF", axis=None, reduce="mean", ax=None):
    """An image's scan mean (or max, min, or one probe's value) along a series axis.

    Error bars, when the file has standard errors: a probe's own, or for the scan mean the mean
    of the pixels' standard errors (an upper bound: the standard deviation of a sum is at most
    the sum of the standard deviations, whatever the pixels' correlation).

    Args:
        results: a Results.
        name: an image name ("HAADF") or a dataset path.
        axis: the series axis (default the first).
        reduce: "mean", "max", "min", or a probe (ix, iy).
        ax: a matplotlib Axes to draw into (default a new figure).

    Returns:
        matplotlib.figure.Figure
    """
    plt = _plt()
    key = name if "/" in name else "images/" + name
    a = results[key]
    e = results.error(key)
    lead = [d for d in a.dims if d not in ("scan_y", "scan_x", "probe")]
    if not lead:
        raise ValueError("%s has no series axis" % key)
    axis = axis or lead[0]
    other = [d for d in lead if d != axis]
    a = a.isel({d: 0 for d in other})
    e = e.isel({d: 0 for d in other}) if e is not None else None
    scan = [d for d in a.dims if d != axis]
    if isinstance(reduce, tuple):
        y = a.isel(scan_x=reduce[0], scan_y=reduce[1])
        ye = e.isel(scan_x=reduce[0], scan_y=reduce[1]) if e is not None else None
        label = "probe %s" % (reduce,)
    else:
        y = getattr(a, reduce)(scan)
        ye = e.mean(scan) if (e is not None and reduce == "mean") else None
        label = "scan %s" % reduce
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    x = a[axis].values if axis in a.coords else np.arange(a.sizes[axis])
    ax.errorbar(x, y.values, yerr=None if ye is None else ye.values, fmt="o-", capsize=3, label=label)
    units = a[axis].attrs.get("units", "") if axis in a.coords else ""
    ax.set_xlabel("%s (%s)" % (axis, units) if units else axis)
    ax.set_ylabel("%s %s (%s)" % (name, a.attrs.get("range", ""), a.attrs.get("units", "")))
    ax.legend()
    return fig


def render(source, outdir=".", probe=None, point=None, max_panels=12, summary=False):
    """Every 2D result of a stemsim file drawn to PNG files in outdir (what the command
    stemsim-render does): <stem>_<NAME>.png for each /images/<NAME>, _dpc_com_x/_y.png (the
    DPC centre of mass, a diverging scale), _rings.png (the radial profile at a probe and over
    the scan) and _cbed.png (the 4D pattern at a probe, log scale) when the file has them.

    Args:
        source: a result file's path, or a Results.
        outdir: where the PNGs go (made when missing).
        probe: (ix, iy) scan indices of the probe for the rings and the pattern (default the
            scan's centre).
        point: one series point: {axis: index or value}, or a tuple of indices along the
            file's series axes (default: every point a panel, up to max_panels).
        max_panels: the most panels of one image.
        summary: print one line per panel drawn ("DRAWN <dataset> <point> min .. max .. mean ..")
            and per figure ("FIGURE <file> <title>"), the values as drawn.

    Returns:
        list of the PNG paths written.

    Raises:
        ValueError: a probe outside the scan, a point that is not one of the series'.
    """
    import os
    from .io import Results, read
    plt = _plt()
    r = source if isinstance(source, Results) else read(source)
    try:
        if point is not None and not isinstance(point, dict):
            axes = r.series_axes
            point = tuple(point)
            if len(point) != len(axes):
                raise ValueError("point %s: the file's series has %d axes (%s)" % (point, len(axes), ", ".join(axes)))
            point = {ax: int(i) for ax, i in zip(axes, point)}
        for ax, i in (point or {}).items():
            some = next(a for a in r.values() if ax in a.dims)
            if isinstance(i, (int, np.integer)) and not 0 <= i < some.sizes[ax]:
                raise ValueError("point %s = %d: the series axis %s has %d points" % (ax, i, ax, some.sizes[ax]))
        scan = next((a for a in r.values() if "scan_x" in a.dims and "scan_y" in a.dims), None)
        if probe is not None and scan is not None:
            ix, iy = probe
            nx, ny = scan.sizes["scan_x"], scan.sizes["scan_y"]
            if not (0 <= ix < nx and 0 <= iy < ny):
                raise ValueError("probe (%d, %d) lies outside the %d x %d scan" % (ix, iy, nx, ny))
        os.makedirs(outdir, exist_ok=True)
        stem = os.path.splitext(os.path.basename(r.path))[0]
        figures = [(n.split("/", 1)[1], lambda n=n: images(r, n.split("/", 1)[1], point, max_panels))
                   for n in r.names if n.startswith("images/")]
        figures += [(n, lambda n=n: images(r, n, point, max_panels, cmap="RdBu_r", symmetric=True))
                    for n in ("dpc_com_x", "dpc_com_y") if n in r]
        if "rings" in r and "scan_x" in r["rings"].dims:
            figures.append(("rings", lambda: rings(r, probe, point)))
        if "cbed" in r and "scan_x" in r["cbed"].dims:
            figures.append(("cbed", lambda: pattern(r, probe, point)))
        written = []
        for name, draw in figures:
            fig = draw()
            path = os.path.join(outdir, "%s_%s.png" % (stem, name))
            if summary:
                for ax in fig.axes:
                    if ax.images and ax.get_title():
                        data = np.ma.asarray(ax.images[0].get_array(), dtype=float)
                        print("DRAWN %s %s min %.17g max %.17g mean %.17g" % (
                            name, ax.get_title().replace("\n", ", "), data.min(), data.max(), data.mean()))
                print("FIGURE %s %s" % (os.path.basename(path), " | ".join(
                    ax.get_title().replace("\n", ", ") for ax in fig.axes if ax.get_title())))
            fig.savefig(path, dpi=120)
            plt.close(fig)
            written.append(path)
        return written
    finally:
        if r is not source:
            r.close()


def main(argv=None):
    """stemsim-render: every 2D result of a stemsim file as PNG files."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="stemsim-render", description="Draw the images, DPC maps, rings' radial "
                                 "profile and 4D pattern of a stemsim result file as PNG files.")
    ap.add_argument("file", help="a stemsim result file (its own layout)")
    ap.add_argument("outdir", nargs="?", default=".", help="directory for the PNGs (default: .)")
    ap.add_argument("--probe", nargs=2, type=int, metavar=("IX", "IY"), default=None,
                    help="scan indices of the probe whose rings and 4D pattern are drawn (default: the centre)")
    ap.add_argument("--point", nargs="+", type=int, metavar="I", default=None,
                    help="one series point, by its index along each series axis (default: every point a panel)")
    ap.add_argument("--max-panels", type=int, default=12, help="most panels per image (default 12)")
    ap.add_argument("--summary", action="store_true", help="print one line per drawn panel (for checks)")
    a = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    from .io import IncompleteFileError
    try:
        for path in render(a.file, a.outdir, a.probe, a.point, a.max_panels, a.summary):
            print(path)
    except (OSError, ValueError, IncompleteFileError) as err:
        sys.exit("stemsim-render: error: %s" % err)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
