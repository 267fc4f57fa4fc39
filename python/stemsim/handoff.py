"""Hand stemsim's results to py4DSTEM and hyperspy, calibrated and the right way round.

    dc = stemsim.to_py4dstem("si.h5")          # py4DSTEM DataCube [R_x][R_y][Q_x][Q_y]
    dc.calibration.get_Q_pixel_size()          # mrad, equal along x and y (square_q)
    s = stemsim.to_hyperspy("si.h5")           # Signal2D: navigation (x, y) in Angstrom, signal (q_x, q_y) in mrad
    images = stemsim.to_hyperspy("si.h5", "images")   # {name: Signal2D}, each image range its own signal

A non-square cell samples its patterns with unequal q steps (1 / cell length per axis): py4DSTEM
has one Q pixel size, so to_py4dstem resamples the patterns onto equal steps (half the finer of
the two) by default (square_q_pixels=True: bilinear, values scaled by the ratio of pixel areas
so that a sum over a detector region keeps its value); hyperspy keeps both scales.
A series (defocus, tilt, depth...) picks one point with keyword arguments naming its axes
(e.g. defocus=1: its index); without them the first point is taken and said.
"""
import warnings

import numpy as np

from .io import Results, read


class _opened:
    """The Results of source: given, or read from a path (then closed on leaving)."""

    def __init__(self, source):
        self.mine = not isinstance(source, Results)
        self.r = read(source) if self.mine else source

    def __enter__(self):
        return self.r

    def __exit__(self, *exc):
        if self.mine:
            self.r.close()


def _one_point(da, sel):
    """The series axes in front of a dataset's own: one point of each (sel, else the first)."""
    lead = [d for d in da.dims if d not in ("scan_y", "scan_x", "qy", "qx", "probe")]
    pick = {d: sel.get(d, 0) for d in lead}
    missing = [d for d in lead if d not in sel and da.sizes[d] > 1]
    if missing:
        warnings.warn("stemsim: %s has series axes %s: their first point taken (name one, e.g. %s=1)"
                      % (da.name, ", ".join(missing), missing[0]))
    return da.isel(pick) if pick else da


def _step(coord):
    c = np.asarray(coord, dtype=float)
    return float(c[1] - c[0]) if c.size > 1 else 1.0


def _linear_weights(src, dst):
    """Indices and weights of dst's points between src's (src ascending, evenly spaced)."""
    x = (dst - src[0]) / (src[1] - src[0])
    i0 = np.clip(np.floor(x).astype(int), 0, src.size - 2)
    return i0, x - i0


def square_q(patterns, qx, qy, oversample=2):
    """Patterns on unequal q steps resampled onto equal (square) ones.

    The new step is the finer of the two divided by oversample (q = 0 kept on a pixel); the
    values are interpolated bilinearly and scaled by the ratio of pixel areas, so that a sum
    over a detector region keeps its value (up to the pattern's edge pixels, which the new
    grid covers by up to half an old pixel less). A detector drawn on the result by pixel
    centres (py4DSTEM's virtual detectors) follows a circle the finer, the larger oversample:
    on a Si cell of 21.7 x 32.6 A (q steps 2.31 x 1.54 mrad) BF 0-15 and ADF 40-80 mrad agree
    with stemsim's own images to -1.8 / +1.0% at 1, +0.6 / +0.3% at 2, -0.2 / +0.3% at 4
    (tests/integration/python_pkg.py checks 2 to 1%); the data grow as oversample^2.

    Args:
        patterns: array `[..., qy, qx]`.
        qx: the patterns' qx coordinates (mrad), evenly spaced and ascending.
        qy: their qy coordinates, likewise.
        oversample: a whole number >= 1.

    Returns:
        tuple: (patterns, qx, qy, step) on the square grid.
    """
    if not (isinstance(oversample, (int, np.integer)) and oversample >= 1):
        raise ValueError("square_q: oversample = %r: a whole number >= 1" % (oversample,))
    qx, qy = np.asarray(qx, float), np.asarray(qy, float)
    dx, dy = _step(qx), _step(qy)
    d = min(dx, dy) / oversample
    nx = np.arange(np.ceil(qx[0] / d - 1e-9), np.floor(qx[-1] / d + 1e-9) + 1) * d
    ny = np.arange(np.ceil(qy[0] / d - 1e-9), np.floor(qy[-1] / d + 1e-9) + 1) * d
    a = np.asarray(patterns, dtype=np.float64)
    if abs(dx - dy) <= 1e-9 * d and oversample == 1:
        return a, qx, qy, d
    ix, wx = _linear_weights(qx, nx)
    a = a[..., ix] * (1 - wx) + a[..., ix + 1] * wx
    iy, wy = _linear_weights(qy, ny)
    a = a[..., iy, :] * (1 - wy)[:, None] + a[..., iy + 1, :] * wy[:, None]
    return a * (d / dx) * (d / dy), nx, ny, d


def to_py4dstem(source, name="cbed", square_q_pixels=True, oversample=2, **series):
    """The 4D patterns as a py4DSTEM DataCube, calibrated.

    The data are in py4DSTEM's order `[R_x][R_y][Q_x][Q_y]`; the R pixel size is the scan step
    (Angstrom), the Q pixel size in mrad, and the origin of q (qx0, qy0) at the patterns'
    centre.

    Args:
        source: a result file's path, or a Results.
        name: the 4D dataset ("cbed").
        square_q_pixels: resample onto equal q steps (square_q, with oversample) where the
            cell's q steps differ (py4DSTEM has one Q pixel size); False keeps the patterns as
            written and takes the x step (a warning when y's differs).
        oversample: see square_q.
        **series: one point of a series by its axes, e.g. `defocus=1` (an index); the first
            point otherwise, with a warning.

    Returns:
        py4DSTEM.DataCube
    """
    import py4DSTEM
    with _opened(source) as r:
        if name not in r:
            raise KeyError("%s has no /%s (run with [detector] save_4d = true)" % (r.path, name))
        da = _one_point(r[name], series)
        qx, qy, step = da["qx"].values, da["qy"].values, _step(da["scan_x"].values)
        data = np.asarray(da.transpose("scan_x", "scan_y", "qy", "qx").values)
    if square_q_pixels and abs(_step(qx) - _step(qy)) > 1e-9 * _step(qx):
        data, qx, qy, dq = square_q(data, qx, qy, oversample)
    else:
        dq = _step(qx)
        if abs(_step(qy) - dq) > 1e-9 * dq:
            warnings.warn("stemsim: q steps differ (x %.5g, y %.5g mrad); py4DSTEM takes x's" % (dq, _step(qy)))
    dc = py4DSTEM.DataCube(data=np.ascontiguousarray(np.swapaxes(data, 2, 3)).astype(np.float32))
    dc.calibration.set_R_pixel_size(step)
    dc.calibration.set_R_pixel_units("A")
    dc.calibration.set_Q_pixel_size(dq)
    dc.calibration.set_Q_pixel_units("mrad")
    dc.calibration.set_qx0_mean(float(-qx[0] / _step(qx)))  # the pattern's centre (q = 0), in pixels
    dc.calibration.set_qy0_mean(float(-qy[0] / _step(qy)))
    return dc


def _axes(da, dims, units):
    out = []
    for d in dims:
        c = np.asarray(da[d].values, dtype=float) if d in da.coords else np.arange(da.sizes[d], dtype=float)
        out.append({"name": d.replace("scan_", ""), "size": da.sizes[d], "scale": _step(c), "offset": float(c[0]),
                    "units": units.get(d, "")})
    return out


def to_hyperspy(source, name="cbed", **series):
    """hyperspy signals, calibrated and the right way round.

    Args:
        source: a result file's path, or a Results.
        name: "cbed" (the 4D patterns: a Signal2D with navigation (x, y) in Angstrom and signal
            (qx, qy) in mrad, each axis its own step); "images" (a dict of Signal2D, one per
            `[images]` range, its title and range in the metadata); any other 2D scan dataset
            ("total_intensity", "dpc_com_x" ...) as one Signal2D.
        **series: one point of a series by its axes, e.g. `defocus=1` (an index).

    Returns:
        hyperspy.signals.Signal2D, or a dict of them for "images".
    """
    import hyperspy.api as hs
    with _opened(source) as r:
        if name == "images":
            return {k.split("/", 1)[1]: to_hyperspy(r, k, **series) for k in r if k.startswith("images/")}
        if name not in r:
            raise KeyError("%s has no /%s" % (r.path, name))
        da = _one_point(r[name], series)
        core = ("scan_y", "scan_x", "qy", "qx") if da.dims[-2:] == ("qy", "qx") else ("scan_y", "scan_x")
        units = {"scan_x": "Å", "scan_y": "Å", "qx": "mrad", "qy": "mrad"}
        s = hs.signals.Signal2D(np.asarray(da.transpose(*core).values), axes=_axes(da, core, units))
        s.metadata.General.title = str(name)
        if "range" in da.attrs:
            s.metadata.set_item("Signal.quantity", "fraction of the beam (%s)" % da.attrs["range"])
        s.metadata.set_item("Acquisition_instrument.TEM.beam_energy", float(r.attrs.get("energy_kev", 0) or 0))
        return s
