"""xarray's backend for stemsim's files (its public plugin interface, xarray.backends.BackendEntrypoint,
registered as the entry point "stemsim" in pyproject.toml):

    ds = xr.open_dataset("si.h5", engine="stemsim")      # every dataset, lazily where read() is lazy
    ds["images/HAADF"], ds.attrs["n_configs"]

The variables are stemsim.read()'s DataArrays, named by their paths; the file stays open while
the Dataset lives (ds.close() closes it). Files that read() refuses (incomplete, Prismatic's EMD
layout) are refused here too.
"""
import os

import xarray as xr

from .io import read


class StemsimBackend(xr.backends.BackendEntrypoint):
    description = "stemsim result files (its own HDF5 layout)"
    open_dataset_parameters = ("filename_or_obj", "drop_variables")

    def open_dataset(self, filename_or_obj, *, drop_variables=None):
        r = read(os.fspath(filename_or_obj))
        drop = set(drop_variables or ())
        ds = xr.Dataset({name: a for name, a in r.items() if name not in drop}, attrs=dict(r.attrs))
        ds.set_close(r.close)
        return ds

    def guess_can_open(self, filename_or_obj):
        try:
            import h5py
            path = os.fspath(filename_or_obj)
            if not os.path.isfile(path):
                return False
            with h5py.File(path, "r") as f:
                return "complete" in f.attrs and "4DSTEM_simulation" not in f and "algorithm" in f.attrs
        except Exception:  # not a path, not HDF5: another backend's
            return False
