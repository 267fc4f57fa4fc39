"""stemsim: read results as xarray, build models from ASE structures, write configs, run and plot.

    import stemsim
    r = stemsim.read("result.h5")                 # Results: {dataset: xarray.DataArray}
    model = stemsim.structure.from_file("Si.cif", zone=(1, 1, 0), tile=(4, 4, 2))
    cfg = stemsim.Config({"sample": {"xyz": model.write("si.xyz")}, "output": {"file": "si.h5"}})
    out = stemsim.run(cfg, ranks=2)
    stemsim.plot.images(stemsim.read(out))
    noisy = stemsim.poisson_noise(stemsim.read(out)["images/HAADF"], dose=1e5)  # e/A^2
    dc = stemsim.to_py4dstem(out)                 # calibrated py4DSTEM DataCube (square q pixels)
    s = stemsim.to_hyperspy(out)                  # hyperspy Signal2D, navigation = scan

stemsim.structure needs ase, stemsim.plot matplotlib (imported when used).
"""
from . import structure
from .handoff import square_q, to_hyperspy, to_py4dstem
from .io import IncompleteFileError, Results, read
from .noise import poisson_noise
from .potential import write_potential
from .runner import EXIT_CODES, Config, StemsimError, find_stemsim, run

__version__ = "0.1.0"


def __getattr__(name):
    if name == "plot":
        import importlib
        return importlib.import_module(".plot", __name__)
    raise AttributeError("module 'stemsim' has no attribute %r" % name)


__all__ = ["read", "Results", "IncompleteFileError", "Config", "run", "StemsimError", "EXIT_CODES",
           "find_stemsim", "structure", "plot", "poisson_noise", "to_py4dstem", "to_hyperspy", "square_q", "write_potential"]
