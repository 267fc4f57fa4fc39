"""Read stemsim result files (its own layout) as xarray DataArrays.

    r = stemsim.read("result.h5")
    r["images/HAADF"]                 # DataArray (scan_y, scan_x), coords in Angstrom
    r.error("images/HAADF")           # its standard error over frozen-phonon configurations
    r.images                          # every /images/<NAME> in one xarray.Dataset
    r["cbed"][0, 1]                   # lazy: reads one pattern from the file
    r.attrs["n_configs"], r.config    # root attributes, the effective config text

Laziness: datasets of more than `lazy_bytes` (256 MiB by default) and /cbed always stay in
the file; they are wrapped in xarray's own lazily indexed array (the mechanism its netCDF
backends use), so indexing or .isel reads only that hyperslab and .values/.load() reads it
all. With `chunks=` they become dask arrays instead (needs dask). The file stays open while
the Results object (or a lazy array taken from it) lives; `close()` or `with` closes it.
"""
import os

import h5py
import numpy as np
import xarray as xr

SCAN = ("scan_y", "scan_x")
# The axes of each dataset after the series axes (docs/output.md).
CORE = {
    "images/": SCAN, "total_intensity": SCAN, "dpc_com_x": SCAN, "dpc_com_y": SCAN, "dpc_segments_x": SCAN,
    "dpc_segments_y": SCAN, "rings": SCAN + ("ring",), "segments": SCAN + ("segment_ring", "segment"),
    "cbed": SCAN + ("qy", "qx"), "pacbed": ("qy", "qx"), "hrtem": ("probe", "y", "x"),
    "exit_wave": ("probe", "y", "x", "part"), "cbed_pattern": ("probe", "qy", "qx"),
    "potential": ("configuration", "slice", "y", "x"), "smatrix": ("configuration", "beam", "y", "x", "part"),
    "smatrix_beams": ("beam", "k"),
}
FIXED = ("pacbed", "potential", "smatrix", "smatrix_beams")  # no series axes in front
ALWAYS_LAZY = ("cbed", "smatrix", "potential")
OPEN_ENDED_MRAD = 1e8  # an [images] range "inner max" is stored with a huge outer angle


class IncompleteFileError(ValueError):
    """The file lacks the root attribute complete == 1 (an unfinished or failed run)."""


def _text(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray) and v.dtype.kind in "SO":
        return [_text(x) for x in v]
    return v


def _core_dims(name):
    base = name[len("standard_error/"):] if name.startswith("standard_error/") else name
    for key, dims in CORE.items():
        if base == key or (key.endswith("/") and base.startswith(key)):
            return base, dims
    return base, None


class _H5Array(xr.backends.BackendArray):
    """An h5py dataset behind xarray's lazy indexing (basic indexing reads a hyperslab)."""

    def __init__(self, dataset):
        self.dataset, self.shape, self.dtype = dataset, dataset.shape, dataset.dtype

    def __getitem__(self, key):
        from xarray.core import indexing
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR,
                                                  self._raw)

    def _raw(self, key):
        key = tuple(key)
        # h5py wants increasing index lists; xarray's outer indexing hands them over sorted
        return np.asarray(self.dataset[key])


def _lazy(dataset, chunks):
    if chunks is not None:
        import dask.array as da
        return da.from_array(dataset, chunks=chunks)
    from xarray.core import indexing
    return indexing.LazilyIndexedArray(_H5Array(dataset))


class Results:
    """A complete stemsim file: a mapping {dataset path: xarray.DataArray} (paths without the
    leading '/', datasets under /axes are coordinates), plus attrs (root attributes)."""

    def __init__(self, path, file, arrays, attrs, lazy_names):
        self.path, self._file, self._arrays, self.attrs = path, file, arrays, attrs
        self.lazy_names = lazy_names

    # mapping
    def __getitem__(self, name):
        return self._arrays[name.lstrip("/")]

    def __contains__(self, name):
        return name.lstrip("/") in self._arrays

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self):
        return len(self._arrays)

    def keys(self):
        return self._arrays.keys()

    def items(self):
        return self._arrays.items()

    def values(self):
        return self._arrays.values()

    @property
    def names(self):
        """The result datasets (standard errors left out)."""
        return [n for n in self._arrays if not n.startswith("standard_error/")]

    def error(self, name):
        """The standard error over frozen-phonon configurations of a dataset, or None (one
        configuration, or a dataset that has none: /cbed, /pacbed, /hrtem ...)."""
        return self._arrays.get("standard_error/" + name.lstrip("/"))

    @property
    def images(self):
        """Every /images/<NAME> as one xarray.Dataset (variables named by NAME)."""
        return xr.Dataset({n.split("/", 1)[1]: a for n, a in self._arrays.items() if n.startswith("images/")})

    @property
    def image_errors(self):
        return xr.Dataset({n.split("/")[-1]: a for n, a in self._arrays.items()
                           if n.startswith("standard_error/images/")})

    @property
    def series_axes(self):
        """The series axes in front of each dataset (tilt_x, defocus, depth ...), () for a plain run."""
        for n, a in self._arrays.items():
            s = a.attrs.get("series_axes", "")
            if s:
                return tuple(x.strip() for x in s.split(",") if x.strip())
        return ()

    @property
    def config(self):
        """The effective configuration, as INI text."""
        return self.attrs.get("config", "")

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        lines = ["<stemsim.Results %s: %s, %s configuration(s)>" % (
            self.path, self.attrs.get("algorithm", "?"), self.attrs.get("n_configs", "?"))]
        for n, a in self._arrays.items():
            if n.startswith("standard_error/"):
                continue
            shape = ", ".join("%s: %d" % (d, s) for d, s in zip(a.dims, a.shape))
            extra = " (lazy)" if n in self.lazy_names else ""
            err = " +- standard error" if ("standard_error/" + n) in self._arrays else ""
            lines.append("  %-22s (%s) [%s]%s%s" % (n, shape, a.attrs.get("units", ""), err, extra))
        return "\n".join(lines)


# The files' unit texts as pint (and so pint-xarray) spells them; what a unit text also says
# (a quantity, not a unit) stays in the attribute "quantity".
PINT_UNITS = {"Angstrom": "angstrom", "1/Angstrom": "1/angstrom", "V Angstrom": "V * angstrom",
              "fraction of incident intensity": "dimensionless"}


def pint_units(text):
    """A unit text of a stemsim file as pint parses it ("Angstrom" -> "angstrom", a fraction of the
    beam -> "dimensionless"); others unchanged."""
    return PINT_UNITS.get(text, text)


def _units_attrs(a):
    """Attributes with units pint parses, the file's text kept as "quantity" where it said more."""
    text = a.get("units", "")
    a["units"] = pint_units(text)
    if text in PINT_UNITS and PINT_UNITS[text] == "dimensionless":
        a.setdefault("quantity", text)
    return a


def _coords(f, name, dims, attrs):
    c = {}
    for d in dims:
        if "axes/" + d in f and f["axes/" + d].ndim == 1:
            ds = f["axes/" + d]
            c[d] = (d, ds[()], {"units": pint_units(_text(ds.attrs.get("units", "")))})
    if "ring" in dims and "axes/ring_inner_mrad" in f:
        inner = f["axes/ring_inner_mrad"][()]
        w = float(attrs.get("ring_width_mrad", 0))
        c["ring"] = ("ring", inner + w / 2, {"units": "mrad", "long_name": "ring centre"})
        c["ring_inner"] = ("ring", inner, {"units": "mrad"})
        c["ring_outer"] = ("ring", inner + w, {"units": "mrad"})
    for q in ("qx", "qy"):
        if q in dims and "axes/cbed_%s_mrad" % q in f:
            c[q] = (q, f["axes/cbed_%s_mrad" % q][()], {"units": "mrad"})
    if "probe" in dims and "axes/probe_x" in f:
        n = f["axes/probe_x"].shape[0]
        c["probe_x"] = ("probe", f["axes/probe_x"][()], {"units": "angstrom"})
        c["probe_y"] = ("probe", f["axes/probe_y"][()], {"units": "angstrom"})
        if n != len(c["probe_x"][1]):
            del c["probe_x"], c["probe_y"]
    if "part" in dims:
        c["part"] = ("part", np.array(["real", "imaginary"]))
    return c


def read(path, lazy="auto", chunks=None, lazy_bytes=256 << 20):
    """Read a complete stemsim output file (its own layout) as xarray DataArrays.

    Each dataset becomes a DataArray named by its path ("images/HAADF", "cbed" ...): series
    axes first, then its own (scan_y, scan_x, qy, qx, ring ...), coordinates from /axes with
    their units.

    Args:
        path: the result file.
        lazy: "auto" (/cbed, /smatrix, /potential and datasets over lazy_bytes stay in the file
            until indexed), True (every dataset) or False (all loaded now).
        chunks: dask chunks for the lazy datasets (e.g. "auto"), instead of xarray's lazy arrays.
        lazy_bytes: the size above which "auto" leaves a dataset in the file.

    Returns:
        Results: a mapping {path: DataArray}; close it (or use `with`) when lazy arrays are done.

    Raises:
        IncompleteFileError: the file lacks the root attribute complete == 1.
        ValueError: a file in Prismatic's EMD layout ([output] layout = emd).
    """
    path = os.fspath(path)
    f = h5py.File(path, "r")
    try:
        mark = f.attrs.get("complete", 0)
        if isinstance(mark, np.ndarray) and mark.shape in ((), (1,)):
            mark = mark.reshape(-1)[0]
        # the integer 1 stemsim writes last, and only that: not "1", 1.9 or True
        if not (isinstance(mark, (int, np.integer)) and not isinstance(mark, (bool, np.bool_)) and mark == 1):
            raise IncompleteFileError("%s is incomplete (its root attribute complete is %r, not the integer 1 stemsim "
                                      "writes last): its run did not finish, or it is not a stemsim result"
                                      % (path, mark))
        if "4DSTEM_simulation" in f:
            raise ValueError("%s is in Prismatic's EMD layout ([output] layout = emd): read it with py4DSTEM.read "
                             "or hyperspy (hs.load)" % path)
        attrs = {k: _text(v) for k, v in f.attrs.items()}
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and not n.startswith("axes/")
                     else None)
        positions = "axes/probe_x" in f and "axes/scan_x" not in f
        arrays, lazy_names = {}, []
        for name in names:
            d = f[name]
            base, core = _core_dims(name)
            lead = tuple(s.strip() for s in str(_text(d.attrs.get("series_axes", ""))).split(",") if s.strip())
            if base in FIXED:
                lead = ()
            if core is None:
                core = tuple("dim_%d" % i for i in range(d.ndim - len(lead)))
            if positions and core[:2] == SCAN:  # [scan] positions: one probe axis
                core = ("probe",) + core[2:]
            dims = lead + core
            if len(dims) != d.ndim:
                dims = tuple("dim_%d" % i for i in range(d.ndim))
            a = {k: _text(v) for k, v in d.attrs.items()}
            a = _units_attrs(a)
            if "outer_mrad" in a and float(a["outer_mrad"]) >= OPEN_ENDED_MRAD:
                a["range"] = "%g mrad and beyond" % float(a["inner_mrad"])
            elif "outer_mrad" in a:
                a["range"] = "%g-%g mrad" % (float(a["inner_mrad"]), float(a["outer_mrad"]))
            is_lazy = lazy is True or chunks is not None and lazy is not False or (
                lazy == "auto" and (base in ALWAYS_LAZY or d.size * d.dtype.itemsize > lazy_bytes))
            if lazy is False:
                is_lazy = False
            if is_lazy:
                data = _lazy(d, chunks)
                lazy_names.append(name)
            else:
                data = d[()]
            var = xr.Variable(dims, data, attrs=a)
            arrays[name] = xr.DataArray(var, coords=_coords(f, name, dims, a), name=name.split("/")[-1])
        if not lazy_names:
            f.close()
            f = None
        return Results(path, f, arrays, attrs, lazy_names)
    except BaseException:
        if f is not None:
            f.close()
        raise


def main(argv=None):
    """stemsim-read: a summary of a stemsim result file (every dataset, its axes and units)."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="stemsim-read", description="List every dataset of a stemsim result file "
                                 "with its named axes, sizes and units (as stemsim.read gives them).")
    ap.add_argument("file", nargs="+", help="stemsim result files (their own layout)")
    a = ap.parse_args(argv)
    for path in a.file:
        try:
            with read(path) as r:
                print(repr(r))
        except (OSError, ValueError) as err:
            sys.exit("stemsim-read: error: %s" % err)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
