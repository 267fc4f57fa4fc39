"""Potentials from elsewhere: projected potentials that stemsim reads with [simulation] potential_file.

A DFT potential (abTEM's GPAW or VASP potentials), another code's, or any numpy array of
projected-potential slices is written in the layout stemsim's own save_potential writes
(docs/physics.md, "Potentials from elsewhere"), marked as imported:

    keys = stemsim.write_potential("gpaw.h5", potential)            # an abTEM potential
    keys = stemsim.write_potential("mine.h5", V, cell=(10.9, 10.9), slice_thickness=2.0,
                                   atoms=model)                      # V [slices][ny][nx], V A
    cfg = stemsim.Config({**keys, "output": {"file": "out.h5"}})

The returned keys point [simulation] potential_file at the file, fix the grid, the slices and
transmission_oversampling = 1 to the array's, and [sample] file at the model written beside it
(stemsim still reads the atoms for the cell, the thickness and the plan's advice).
"""
import os

import numpy as np

from ._files import write_beside

DATASET = "potential"
# |V| beyond this (V Angstrom) is no atom's (io/potential_file.c refuses it as damaged).
POTENTIAL_MAX = 1e6


def _from_abtem(potential):
    """(V [configurations][slices][ny][nx], cell (x, y), slice thickness, ASE atoms, source) of an abTEM potential."""
    built = potential.build()
    if hasattr(built, "compute"):
        built = built.compute()
    a = np.asarray(built.array)
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4:
        raise ValueError("abTEM potential of shape %s: expected [slices][x][y] or [configurations][slices][x][y]"
                         % (a.shape,))
    thick = np.asarray(potential.slice_thickness, dtype=float)
    atoms = getattr(potential, "atoms", None)
    if atoms is None and hasattr(potential, "frozen_phonons"):
        atoms = potential.frozen_phonons.atoms
    import abtem
    source = "abTEM %s %s" % (getattr(abtem, "__version__", "?"), type(potential).__name__)
    extent = tuple(float(e) for e in potential.extent)
    return np.swapaxes(a, 2, 3), extent, thick, atoms, source  # abTEM is [x][y], stemsim [y][x]


def good_size(n):
    """The smallest 7-smooth size >= n: stemsim's grids have no prime factor above 7."""
    m = max(int(n), 1)
    while True:
        r = m
        for f in (2, 3, 5, 7):
            while r % f == 0:
                r //= f
        if r == 1:
            return m
        m += 1


def _check_grid(ny, nx):
    """stemsim rounds a grid up to a 7-smooth size; an imported potential must already be on one."""
    bad = [(axis, n) for axis, n in (("x", nx), ("y", ny)) if good_size(n) != n]
    if bad:
        raise ValueError("grid %s: stemsim's grids have no prime factor above 7 (nearest: %s); build the potential "
                         "on such a grid (abTEM: Potential(..., gpts=(nx, ny)))"
                         % (", ".join("%s %d" % b for b in bad),
                            ", ".join("%s %d" % (axis, good_size(n)) for axis, n in bad)))


def _slice_thickness(thick):
    """The one slice thickness of a stack (the last slice may be thinner, as stemsim cuts it)."""
    thick = np.atleast_1d(np.asarray(thick, dtype=float))
    dz = float(thick[0])
    if not np.allclose(thick[:-1], dz, rtol=1e-9, atol=0) or thick[-1] > dz * (1 + 1e-9):
        raise ValueError("slices of thickness %s: stemsim slices evenly (the last may be thinner)"
                         % np.array2string(thick, precision=4))
    return dz


def _model(atoms, cell, thickness):
    """A stemsim Model of ASE atoms (or a Model) in the cell (x, y) and thickness z."""
    from .structure import DEFAULT_SIGMA, Model
    if isinstance(atoms, Model):
        return atoms
    pos = np.asarray(atoms.get_positions(), dtype=float)
    box = np.array([cell[0], cell[1], thickness])
    return Model(box, atoms.get_atomic_numbers(), np.mod(pos, box), np.ones(len(atoms)),
                 np.full(len(atoms), DEFAULT_SIGMA), comment="atoms of an imported potential")


def write_potential(path, potential, cell=None, slice_thickness=None, atoms=None, source=None, model_path=None,
                    overwrite=False):
    """Write projected-potential slices for stemsim's [simulation] potential_file.

    potential: an abTEM potential (its cell, slices and atoms are taken from it), or a numpy array
      V [slices][ny][nx] or [configurations][slices][ny][nx] in V Angstrom: each slice's projected
      potential sampled at x = i cell_x / nx, y = j cell_y / ny (configuration c is used by stemsim's
      frozen-phonon configuration c).
    cell: (cell_x, cell_y) in Angstrom; slice_thickness: Angstrom (a number, or one per slice with
      only the last thinner); atoms: ASE Atoms or a stemsim Model of the sample (for the cell's
      thickness and the model file stemsim reads); all three required for an array.
    source: what made the potential (recorded as the file's potential_source; required for an array).
    model_path: where the model is written (default: path with .xyz); overwrite: replace existing files.

    Returns the config keys that run it: {"sample": {...}, "simulation": {...}}.
    """
    if hasattr(potential, "build") and hasattr(potential, "slice_thickness"):
        V, cell, thick, atoms_of, src = _from_abtem(potential)
        atoms = atoms if atoms is not None else atoms_of
        source = source or src
    else:
        V = np.asarray(potential)
        V = V[None] if V.ndim == 3 else V
        thick = slice_thickness
        if cell is None or thick is None or atoms is None or not source:
            raise ValueError("an array needs cell=(x, y), slice_thickness=, atoms= and source= (what made it)")
    if V.ndim != 4 or min(V.shape) < 1:
        raise ValueError("potential of shape %s: expected [slices][ny][nx] or [configurations][slices][ny][nx]"
                         % (V.shape,))
    if not np.all(np.isfinite(V)) or np.abs(V).max() > POTENTIAL_MAX:
        raise ValueError("potential holds values that are not finite or beyond %g V Angstrom" % POTENTIAL_MAX)
    if np.iscomplexobj(V):
        raise ValueError("potential is complex: stemsim takes the real projected potential (V Angstrom)")
    _check_grid(*V.shape[2:])
    n_slices = V.shape[1]
    thick = np.full(n_slices, float(thick)) if np.ndim(thick) == 0 else np.asarray(thick, dtype=float)
    if len(thick) != n_slices:
        raise ValueError("%d slice thicknesses for %d slices" % (len(thick), n_slices))
    dz = _slice_thickness(thick)
    model = _model(atoms, cell, float(thick.sum()))
    model_path = model_path or os.path.splitext(path)[0] + ".xyz"
    for p in (path, model_path):  # both refused before either is written
        if os.path.islink(p):
            raise FileExistsError("%s is a symbolic link: not written through it" % p)
        if os.path.lexists(p) and not overwrite:
            raise FileExistsError("%s exists (overwrite=True replaces it)" % p)
    model.write(model_path, overwrite=overwrite)
    write_beside(path, lambda tmp: _write_h5(tmp, V, cell, dz, source), overwrite)
    ny, nx = V.shape[2:]
    return {"sample": {"xyz": os.path.abspath(model_path)},
            "simulation": {"potential_file": os.path.abspath(path), "grid_x": nx, "grid_y": ny, "slice_thickness": dz,
                           "transmission_oversampling": 1}}


def _write_h5(path, V, cell, dz, source):
    """/potential with its attributes into path, the complete mark last."""
    import h5py
    with h5py.File(path, "w") as f:
        d = f.create_dataset(DATASET, data=np.ascontiguousarray(V, dtype=np.float32))
        d.attrs["slice_thickness_angstrom"] = dz
        d.attrs["cell_x_angstrom"] = float(cell[0])
        d.attrs["cell_y_angstrom"] = float(cell[1])
        d.attrs["units"] = "V Angstrom"
        f.attrs["potential_source"] = str(source)
        f.attrs["complete"] = np.int32(1)  # last, as stemsim marks its own files
