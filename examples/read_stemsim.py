#!/usr/bin/env python3
"""Load a stemsim output file into numpy arrays with named axes, coordinates and units
(and into xarray DataArrays when xarray is installed).

As a module:
    from read_stemsim import load
    r = load("result.h5")                  # {name: Result}
    haadf = r["images/HAADF"]              # .data (numpy), .dims, .coords, .units, .attrs
    haadf.dims                             # ('scan_y', 'scan_x'), or ('defocus', 'scan_y', 'scan_x') in a series
    haadf.coords["scan_x"]                 # probe positions in Angstrom
    r["rings"].coords["ring"]              # ring centres in mrad
    haadf.to_xarray()                      # an xarray.DataArray (needs xarray)

From the shell, a summary of every dataset:
    python3 examples/read_stemsim.py result.h5

stemsim's own layout only ([output] layout = stemsim); for layout = emd use py4DSTEM.read.
Files without the root attribute complete == 1 are refused (an unfinished run).
"""
import sys

import h5py
import numpy as np

# The axes of each dataset after the series axes (see docs/output.md).
SCAN = ("scan_y", "scan_x")
CORE = {
    "images/": SCAN, "total_intensity": SCAN, "dpc_com_x": SCAN, "dpc_com_y": SCAN, "dpc_segments_x": SCAN,
    "dpc_segments_y": SCAN, "rings": SCAN + ("ring",), "segments": SCAN + ("ring", "segment"),
    "cbed": SCAN + ("qy", "qx"), "pacbed": ("qy", "qx"), "hrtem": ("probe", "y", "x"),
    "exit_wave": ("probe", "y", "x", "part"), "cbed_pattern": ("probe", "qy", "qx"),
    "potential": ("configuration", "slice", "y", "x"), "smatrix": ("configuration", "beam", "y", "x", "part"),
    "smatrix_beams": ("beam", "k"),
}
FIXED = ("pacbed", "potential", "smatrix", "smatrix_beams")  # no series axes in front


class Result:
    """One dataset: data (numpy), dims, coords {dim: values}, units, attrs."""

    def __init__(self, name, data, dims, coords, units, attrs):
        self.name, self.data, self.dims, self.coords, self.units, self.attrs = name, data, dims, coords, units, attrs

    def __repr__(self):
        shape = ", ".join("%s=%d" % (d, n) for d, n in zip(self.dims, self.data.shape))
        return "%s(%s) [%s]" % (self.name, shape, self.units)

    def to_xarray(self):
        import xarray as xr
        return xr.DataArray(self.data, dims=self.dims, coords={d: v for d, v in self.coords.items() if d in self.dims},
                            name=self.name, attrs=dict(self.attrs, units=self.units))


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _core(name):
    for key, dims in CORE.items():
        if name == key or (key.endswith("/") and name.startswith(key)):
            return dims
    return None


def _coords(f, dims):
    """Coordinates of the axes stemsim writes under /axes."""
    c = {}
    for d in dims:
        if "axes/" + d in f:
            c[d] = f["axes/" + d][()]
    if "ring" in dims and "axes/ring_inner_mrad" in f and "rings" in f:
        c["ring"] = f["axes/ring_inner_mrad"][()] + float(f["rings"].attrs.get("ring_width_mrad", 0)) / 2
    for q in ("qx", "qy"):
        if q in dims and "axes/cbed_%s_mrad" % q in f:
            c[q] = f["axes/cbed_%s_mrad" % q][()]
    if "probe" in dims and "axes/probe_x" in f:
        c["probe_x"], c["probe_y"] = f["axes/probe_x"][()], f["axes/probe_y"][()]
    if "part" in dims:
        c["part"] = np.array(["real", "imaginary"])
    return c


def load(path):
    """Every dataset of a complete stemsim file, as {name: Result} (axes under /axes are coordinates)."""
    out = {}
    with h5py.File(path, "r") as f:
        if int(f.attrs.get("complete", 0)) != 1:
            raise ValueError("%s is incomplete (no root attribute complete = 1): its run did not finish" % path)
        if "4DSTEM_simulation" in f:
            raise ValueError("%s is in Prismatic's EMD layout: read it with py4DSTEM.read" % path)
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("axes/") else None)
        for name in names:
            d = f[name]
            core = _core(name)
            lead = tuple(s.strip() for s in _text(d.attrs.get("series_axes", "")).split(",") if s.strip())
            if name in FIXED:
                lead = ()
            if core is None:
                core = tuple("dim%d" % i for i in range(d.ndim - len(lead)))
            if positions_layout(f) and core[:2] == SCAN:  # [scan] positions: one probe axis
                core = ("probe",) + core[2:]
            dims = lead + core
            if len(dims) != d.ndim:
                dims = tuple("dim%d" % i for i in range(d.ndim))
            attrs = {k: (_text(v) if isinstance(v, (bytes, str)) else v) for k, v in d.attrs.items()}
            out[name] = Result(name, d[()], dims, _coords(f, dims), _text(d.attrs.get("units", "")), attrs)
    return out


def positions_layout(f):
    """Probes from a [scan] positions file: the scan is one probe axis."""
    return "axes/probe_x" in f and "axes/scan_x" not in f


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: read_stemsim.py result.h5")
    try:
        results = load(sys.argv[1])
    except (OSError, ValueError) as err:
        sys.exit("read_stemsim.py: error: %s" % err)
    for r in results.values():
        print(r)


if __name__ == "__main__":
    main()
