"""Prismatic XYZ models for stemsim from any structure ASE reads (CIF, POSCAR, extended XYZ).

    from stemsim.structure import zone_axis_cell, write_xyz, from_file
    model = from_file("Si.cif", zone=(1, 1, 0), tile=(10, 10, 5), sigma={"Si": 0.076})
    model.write("Si110.xyz")

or from the shell:  stemsim-structure Si.cif --zone 1 1 0 --tile 10 10 5 -o Si110.xyz

Orientation: the zone axis [u v w] (indices of the structure's cell vectors as given, e.g. a
CIF's conventional cell; four hexagonal indices [u v t w] are accepted too) becomes the beam
direction +z. A primitive cell of a centred lattice (ase.build.bulk("Si") gives one) is taken
in its conventional cell first (conventional()), so that bulk("Si") [110] is cubic [110]. stemsim needs an orthorhombic cell that is periodic, so the model is the
supercell this search finds: the crystal's full translation lattice is found first
(centring translations included, so fcc Si [110] gives a/sqrt2 x a x a/sqrt2 with 4 atoms,
not 8 or 16); the beam repeat t3 is the shortest lattice vector along [u v w]; the two
directions across the beam are the perpendicular lattice direction of lowest index in the
given cell (sum of |indices|, then the largest index, then the shortest repeat: Si [100] keeps
the cube's axes, a x a x a, not the smaller 45-degree cell) and the lowest-index one
perpendicular to both; x is the shorter of them, y the other, right-handed (Si [110]:
x = [1-10]/2, y = [001], z = [110]/2). Every cubic, tetragonal and orthorhombic zone axis and the low-index
hexagonal ones ([0001], [11-20], [10-10] ...) have one; a zone axis whose perpendicular
plane holds no two orthogonal lattice vectors within the search (most zones of monoclinic
and triclinic cells) is refused with a message saying so.
"""
import argparse
import itertools
import math
import os
import sys

import numpy as np

from ._files import write_beside

DEFAULT_SIGMA = 0.08  # Angstrom: a typical room-temperature rms displacement; give your own


class ZoneAxisError(ValueError):
    """No periodic orthorhombic cell exists (within the search) for this zone axis."""


class Model:
    """An orthorhombic periodic model in stemsim's frame (the beam along +z).

    Attributes:
        cell: (a, b, c) in Angstrom.
        numbers: the atoms' Z.
        positions: (N, 3) Cartesian positions in Angstrom, inside the cell.
        occupancy: per atom, 0 to 1.
        sigma: rms thermal displacement per atom, Angstrom.
        comment: the XYZ file's first line.
    """

    def __init__(self, cell, numbers, positions, occupancy, sigma, comment="stemsim model"):
        self.cell = np.asarray(cell, float)
        self.numbers = np.asarray(numbers, int)
        self.positions = np.asarray(positions, float)
        self.occupancy = np.asarray(occupancy, float)
        self.sigma = np.asarray(sigma, float)
        self.comment = comment

    def __len__(self):
        return len(self.numbers)

    def __repr__(self):
        return "<stemsim Model: %d atoms, cell %.4f x %.4f x %.4f Angstrom>" % ((len(self),) + tuple(self.cell))

    def tile(self, nx=1, ny=1, nz=1):
        """The model repeated nx x ny x nz times."""
        shifts = np.array([(i, j, k) for k in range(nz) for j in range(ny) for i in range(nx)], float) * self.cell
        pos = (self.positions[None, :, :] + shifts[:, None, :]).reshape(-1, 3)
        rep = len(shifts)
        return Model(self.cell * (nx, ny, nz), np.tile(self.numbers, rep), pos, np.tile(self.occupancy, rep),
                     np.tile(self.sigma, rep), self.comment)

    def text(self):
        """The model in Prismatic's XYZ format (docs/config.md, "Input model (XYZ)").

        Written here, not by ase.io.write(..., format="prismatic"): ASE's writer prints every
        column with 6 significant digits, so positions in a 160 Angstrom model move by up to
        5e-4 Angstrom, and an atom within that of the cell's far face is written past the cell
        length, which stemsim's reader (io/xyz.c) refuses ("outside the cell"); it also appends
        to the comment and wants Debye-Waller factors for every element. What ASE reads of this
        file (ase.io.read(path, format="prismatic")) is the model (python_pkg checks it).
        """
        comment = " ".join(self.comment.split()) or "stemsim model"
        out = [comment, "    %.8f %.8f %.8f" % tuple(self.cell)]
        for z, p, o, s in zip(self.numbers, self.positions, self.occupancy, self.sigma):
            out.append("%d %.8f %.8f %.8f %.6g %.6g" % (z, p[0], p[1], p[2], o, s))
        out.append("-1")
        return "\n".join(out) + "\n"

    def write(self, path, overwrite=False):
        """Write the model to path through a temporary beside it, renamed into place: an existing
        file is replaced only with overwrite (FileExistsError otherwise), never through a link."""
        text = self.text()

        def fill(tmp):
            with open(tmp, "w") as fh:
                fh.write(text)
        return write_beside(path, fill, overwrite)

    def to_ase(self):
        """The model as an ase.Atoms, its occupancies and rms displacements in the arrays ASE's
        Prismatic format uses ("occupancies", and "debye_waller_factors" B = 8 pi^2 rms^2 in
        Angstrom^2), so that ase.io.write(path, model.to_ase(), format="prismatic") and
        orient() of the Atoms keep them."""
        from ase import Atoms
        atoms = Atoms(numbers=self.numbers, positions=self.positions, cell=np.diag(self.cell), pbc=True)
        atoms.set_array("occupancies", self.occupancy.copy())
        atoms.set_array("debye_waller_factors", 8 * np.pi ** 2 * self.sigma ** 2)
        return atoms


def read_xyz(path):
    """A Prismatic XYZ file as a Model, read as stemsim reads it (io/xyz.c): a comment line, the
    cell a b c, then 'Z x y z [occupancy [sigma]]' lines (occupancy 1 and sigma 0 when left
    out) until a line "-1" or the end of the file, blank lines skipped.

    Read here, not by ase.io.read(path, format="prismatic"), because ASE's reader takes the
    last line for the "-1" without looking (a file that ends without it, which stemsim reads,
    loses its last atom) and refuses lines of 4 or 5 numbers."""
    with open(path) as fh:
        lines = fh.read().splitlines()
    if len(lines) < 2:
        raise ValueError("%s: too short: expected a comment line and the cell size" % path)
    cell = [float(x) for x in lines[1].split()[:3]]
    rows = []
    for k, ln in enumerate(lines[2:], 3):
        p = ln.split()
        if not p:
            continue
        if len(p) == 1 and float(p[0]) == -1:
            break
        if not 4 <= len(p) <= 6:
            raise ValueError("%s:%d: expected 'Z x y z [occupancy sigma]', got %r" % (path, k, ln))
        rows.append([float(x) for x in p] + [1.0, 0.0][len(p) - 4:])
    r = np.array(rows, float).reshape(-1, 6)
    return Model(cell, r[:, 0].astype(int), r[:, 1:4], r[:, 4], r[:, 5], lines[0])


def hexagonal_to_three(u, v, t, w):
    """Four-index direction [u v t w] (Miller-Bravais) to three-index [U V W], reduced."""
    if u + v + t != 0:
        raise ZoneAxisError("a four-index direction [u v t w] needs u + v + t = 0 (got %d %d %d %d)" % (u, v, t, w))
    return _reduce((u - t, v - t, w))


def _reduce(idx):
    idx = [int(round(i)) for i in idx]
    g = 0
    for i in idx:
        g = math.gcd(g, abs(i))
    if g == 0:
        raise ZoneAxisError("the zone axis [0 0 0] has no direction")
    return tuple(i // g for i in idx)


def _centrings(frac, numbers, tol):
    """Fractional translations (in [0,1)^3, the zero vector first) that map the structure onto
    itself: the lattice's centring vectors relative to the given cell."""
    frac = np.mod(frac, 1.0)
    species = np.unique(numbers)
    rare = min(species, key=lambda s: np.count_nonzero(numbers == s))
    ref = frac[np.argmax(numbers == rare)]
    out = [np.zeros(3)]
    for cand in frac[numbers == rare]:
        t = np.mod(cand - ref, 1.0)
        t[np.abs(t - 1.0) < tol] = 0.0
        if np.all(np.abs(t) < tol):
            continue
        moved = np.mod(frac + t, 1.0)
        ok = True
        for s in species:
            a, b = moved[numbers == s], frac[numbers == s]
            d = a[:, None, :] - b[None, :, :]
            d -= np.round(d)
            if not np.all(np.min(np.max(np.abs(d), axis=2), axis=1) < tol):
                ok = False
                break
        if ok:
            out.append(t)
    return np.array(out)


def zone_axis_cell(atoms, zone, max_index=6, tol=1e-5):
    """The orthorhombic periodic cell of an ASE Atoms looking down zone axis [u v w].

    Args:
        atoms: an ase.Atoms.
        zone: indices of atoms.cell's vectors (three, or four [u v t w] for hexagonal cells).
        max_index: lattice vectors up to this index are searched.
        tol: the tolerance of the angles (cosines).

    Returns:
        tuple: (T, count): T (3, 3), rows t1, t2, t3 in Cartesian Angstrom of the original
        frame (t3 along the zone axis); count, the number of atoms in that cell.

    Raises:
        ZoneAxisError: the search finds no such cell.
    """
    A = np.array(atoms.cell, float)
    if abs(np.linalg.det(A)) < 1e-9:
        raise ZoneAxisError("the structure has no 3D cell (periodic in all three directions is needed)")
    zone = tuple(zone)
    if len(zone) == 4:
        zone = hexagonal_to_three(*zone)
    elif len(zone) == 3:
        zone = _reduce(zone)
    else:
        raise ZoneAxisError("a zone axis has 3 indices [u v w] (or 4 for hexagonal cells [u v t w])")
    frac = atoms.get_scaled_positions(wrap=True)
    cent = _centrings(frac, atoms.numbers, 1e-4)
    rng = np.arange(-max_index, max_index + 1)
    n = np.array(list(itertools.product(rng, rng, rng)), float)
    latt = (n[None, :, :] + cent[:, None, :]).reshape(-1, 3) @ A  # Cartesian lattice vectors
    length = np.linalg.norm(latt, axis=1)
    keep = length > 1e-6
    latt, length = latt[keep], length[keep]
    zdir = np.array(zone, float) @ A
    zdir /= np.linalg.norm(zdir)
    cosz = latt @ zdir / length
    along = np.where(np.abs(cosz - 1) < tol)[0]
    t3 = latt[along[np.argmin(length[along])]]
    perp = np.where(np.abs(cosz) < tol)[0]
    if len(perp) == 0:
        raise ZoneAxisError("zone axis [%s]: no lattice vector perpendicular to it within %d cells: stemsim needs "
                            "an orthorhombic periodic cell, which this lattice does not have for this zone axis"
                            % (" ".join(map(str, zone)), max_index))
    # t1: the shortest perpendicular vector, ties broken towards the cell's a, then b, then c
    A_unit = A / np.linalg.norm(A, axis=1)[:, None]

    # Directions of low index in the given cell come first (so a cubic [100] keeps the cube's axes,
    # as one expects, rather than the smaller 45-degree cell of the fcc lattice), then shorter
    # vectors (the shortest repeat along a direction, centrings included), then a, b, c's sense.
    frac_l = latt @ np.linalg.inv(A)
    direction = np.rint(frac_l * 12).astype(np.int64)
    g = np.gcd.reduce(np.abs(direction), axis=1)
    direction //= np.maximum(g, 1)[:, None]
    idx_sum, idx_max = np.abs(direction).sum(1), np.abs(direction).max(1)

    def order(idx):
        return sorted(idx, key=lambda i: (idx_sum[i], idx_max[i], round(length[i], 6)) + tuple(
            -round(p, 6) for p in (latt[i] @ A_unit.T) / length[i]))

    t1 = latt[order(perp)[0]]
    u1 = t1 / np.linalg.norm(t1)
    cos1 = latt[perp] @ u1 / length[perp]
    second = perp[np.abs(cos1) < tol]
    if len(second) == 0:
        raise ZoneAxisError("zone axis [%s]: the lattice plane perpendicular to it has no two orthogonal lattice "
                            "vectors within %d cells (stemsim needs an orthorhombic periodic cell; this works for "
                            "cubic, tetragonal, orthorhombic and low-index hexagonal zone axes, rarely for monoclinic "
                            "or triclinic cells: reorient the structure to such a zone yourself, or raise max_index)"
                            % (" ".join(map(str, zone)), max_index))
    t2 = latt[order(second)[0]]
    if np.linalg.norm(t2) < np.linalg.norm(t1) * (1 - 1e-6):  # x: the shorter of the two
        t1, t2 = t2, t1
    if np.dot(np.cross(t1, t2), t3) < 0:
        t2 = -t2
    T = np.array([t1, t2, t3])
    ratio = abs(np.linalg.det(T) / np.linalg.det(A)) * len(atoms)
    count = int(round(ratio))
    if abs(ratio - count) > 1e-3:
        raise ZoneAxisError("internal: the supercell holds %.4f atoms" % ratio)
    return T, count


# Centred lattices whose conventional cell is orthogonal: a zone [u v w] means that cell's axes
CENTRED = {"FCC": "face-centred cubic", "BCC": "body-centred cubic", "BCT": "body-centred tetragonal",
           "ORCF": "face-centred orthorhombic", "ORCI": "body-centred orthorhombic",
           "ORCC": "base-centred orthorhombic"}


def conventional(atoms, eps=2e-4):
    """The structure in the conventional cell of its lattice when `atoms` holds a primitive cell of
    a centred lattice (face-, body- or base-centred cubic, tetragonal or orthorhombic, as
    ase.build.bulk gives by default), so that a zone [u v w] means the conventional axes, as
    in the literature (Si [110] is cubic [110], not [112] of the skewed primitive axes).

    ASE's lattice identification (ase.lattice.identify_lattice) gives the lattice and the integer
    operation onto its standard primitive cell; the lattice's own map from primitive to
    conventional vectors (conventional_cellmap) follows, and ase.build.make_supercell fills the
    new cell. Any other structure (an orthogonal cell, a hexagonal or a monoclinic one, a cell
    ASE cannot identify) is returned as it is.

    Returns:
        (atoms, name): the conventional structure and the lattice's name ("FCC", "BCC" ...), or
        the input and None when nothing was changed.

    Raises:
        ZoneAxisError: when the conventional cell that ASE's operation gives is not orthogonal.
    """
    if atoms.cell.orthorhombic:
        return atoms, None
    try:
        from ase.lattice import identify_lattice
        lattice, op = identify_lattice(atoms.cell, eps=eps)
    except Exception:  # not a recognised lattice (a slab, a molecule in a box): the given cell is meant
        return atoms, None
    if lattice.name not in CENTRED:
        return atoms, None
    from ase.build import make_supercell
    M = np.rint(np.asarray(lattice.conventional_cellmap) @ np.asarray(op)).astype(int)
    if np.linalg.det(M) < 0:
        M = -M
    conv = make_supercell(atoms, M)
    want = lattice.conventional().cellpar()
    if not (np.allclose(conv.cell.angles(), 90.0, atol=1e-3) and
            np.allclose(np.sort(conv.cell.lengths()), np.sort(want[:3]), rtol=1e-4)):
        raise ZoneAxisError("the structure's cell is a primitive cell of a %s lattice, and its conventional cell "
                            "could not be made (%s): give the conventional cell, e.g. ase.build.bulk(..., "
                            "cubic=True), or a CIF in its conventional setting" % (CENTRED[lattice.name],
                                                                                 conv.cell.cellpar().round(4)))
    return conv, lattice.name


def orient(atoms, zone=(0, 0, 1), sigma=None, default_sigma=DEFAULT_SIGMA, occupancy=None, max_index=6,
           tol=1e-5, comment=None, standardise=True):
    """An ASE Atoms as a stemsim Model looking down `zone` (beam along +z): the orthorhombic periodic
    cell of zone_axis_cell, its atoms inside it (origin at the structure's origin).

    Args:
        atoms: an ase.Atoms, periodic in 3D.
        zone: the zone axis [u v w] in the axes of the structure's cell ([u v t w] for a hexagonal
            cell); with standardise, a primitive cell of a centred lattice is taken in its
            conventional cell first (see conventional()).
        sigma: {symbol or Z: rms displacement in Angstrom}; the others default_sigma, unless the
            atoms carry ASE's "debye_waller_factors" (B in Angstrom^2, as ase.io.read(...,
            format="prismatic") gives them: rms = sqrt(B / 8 pi^2)).
        occupancy: {symbol or Z: value}, else atoms.arrays["occupancies"] (ASE's name) or
            ["occupancy"] when present, else 1.
        max_index: the search range of zone_axis_cell (lattice vectors up to this index).
        tol: the angular tolerance of zone_axis_cell.
        comment: the XYZ file's comment line (default: formula, zone and cell).
        standardise: False takes the zone in the given cell's axes even for a primitive cell of a
            centred lattice (bulk("Si") [110] is then cubic [112]).

    Returns:
        Model: the oriented cell, its atoms sorted by z, y, x.

    Raises:
        ZoneAxisError: when no orthorhombic periodic cell exists within the search.
    """
    from ase.data import atomic_numbers
    centred = None
    if standardise:
        atoms, centred = conventional(atoms)
    T, count = zone_axis_cell(atoms, zone, max_index, tol)
    A = np.array(atoms.cell, float)
    frac = np.mod(atoms.get_scaled_positions(wrap=True), 1.0)
    # the supercell's corners in the given cell's fractional coordinates bound the translations
    corners = np.array(list(itertools.product((0, 1), repeat=3)), float) @ T @ np.linalg.inv(A)
    lo, hi = np.floor(corners.min(0)) - 1, np.ceil(corners.max(0)) + 1
    shifts = np.array(list(itertools.product(*[np.arange(l, h + 1) for l, h in zip(lo, hi)])), float)
    cart = ((frac[None, :, :] + shifts[:, None, :]).reshape(-1, 3)) @ A
    s = cart @ np.linalg.inv(T)
    snap = np.abs(s - np.round(s)) < 1e-7
    s = np.where(snap, np.round(s), s)
    inside = np.all((s >= 0) & (s < 1), axis=1)
    idx = np.where(inside)[0] % len(atoms)
    s = s[inside]
    if len(s) != count:
        raise ZoneAxisError("internal: %d atoms found in a supercell that holds %d (overlapping atoms in the "
                            "input?)" % (len(s), count))
    L = np.linalg.norm(T, axis=1)
    pos = s * L
    numbers = atoms.numbers[idx]

    def per_element(table, default):
        out = np.full(len(numbers), float(default))
        for key, val in (table or {}).items():
            z = int(key) if isinstance(key, (int, np.integer)) else atomic_numbers[str(key)]
            out[numbers == z] = float(val)
        return out

    sig = per_element(sigma, default_sigma)
    if "debye_waller_factors" in atoms.arrays:  # ASE's prismatic reader: B = 8 pi^2 rms^2
        given = np.sqrt(np.asarray(atoms.arrays["debye_waller_factors"], float)[idx] / (8 * np.pi ** 2))
        keep = per_element(sigma, np.nan)
        sig = np.where(np.isnan(keep), given, keep)
    if occupancy is not None:
        occ = per_element(occupancy, 1.0)
    elif "occupancies" in atoms.arrays or "occupancy" in atoms.arrays:
        occ = np.asarray(atoms.arrays.get("occupancies", atoms.arrays.get("occupancy")), float)[idx]
    else:
        occ = np.ones(len(numbers))
    order = np.lexsort((np.round(pos[:, 0], 6), np.round(pos[:, 1], 6), np.round(pos[:, 2], 6)))
    if comment is None:
        zone_s = " ".join(str(int(z)) for z in zone)
        comment = "%s [%s] zone axis%s, %.6f x %.6f x %.6f Angstrom, from ASE" % (
            atoms.get_chemical_formula(), zone_s, " of the conventional %s cell" % centred if centred else "",
            L[0], L[1], L[2])
    return Model(L, numbers[order], pos[order], occ[order], sig[order], comment)


MAX_ATOMS = 10 ** 8  # beyond any model stemsim runs (a 10^8-atom XYZ is about 6 GB of text)


def _check_atoms(atoms, kw):
    """What no model may hold: a coordinate that is not a number, a dummy element (Z = 0, 'X'),
    a displacement that is not a finite non-negative number."""
    pos = np.asarray(atoms.get_positions(), float)
    bad = np.flatnonzero(~np.isfinite(pos).all(axis=1))
    if bad.size:
        raise ValueError("atom %d has a coordinate that is not a finite number (%s)" % (bad[0] + 1, pos[bad[0]]))
    zero = np.flatnonzero(np.asarray(atoms.numbers) <= 0)
    if zero.size:
        raise ValueError("atom %d is '%s' (Z = 0: a dummy or unknown element): give it an element"
                         % (zero[0] + 1, atoms.get_chemical_symbols()[zero[0]]))
    sigmas = list((kw.get("sigma") or {}).items()) + [("--default-sigma", kw.get("default_sigma", DEFAULT_SIGMA))]
    for name, value in sigmas:
        if not (np.isfinite(value) and value >= 0):
            raise ValueError("the displacement of %s is %r: an rms displacement is a finite number >= 0 (Angstrom)"
                             % (name, value))


def from_atoms(atoms, zone=(0, 0, 1), tile=(1, 1, 1), **kw):
    """An ASE Atoms as a tiled stemsim Model: orient() then Model.tile().

    Args:
        atoms: an ase.Atoms, periodic in 3D.
        zone: the zone axis (see orient).
        tile: repeats (nx, ny, nz) of the oriented cell.
        **kw: orient's other arguments (sigma, default_sigma, occupancy, standardise ...).

    Returns:
        Model

    Raises:
        ValueError: a coordinate that is not a finite number, a dummy element (Z = 0), a
            displacement that is not finite and >= 0, or a tiling beyond any run.
        ZoneAxisError: no orthorhombic periodic cell for this zone.
    """
    _check_atoms(atoms, kw)
    model = orient(atoms, zone, **kw)
    n = len(model) * int(np.prod(tile))
    if n > MAX_ATOMS:
        raise ValueError("tiled %s, the %d-atom cell makes %.3g atoms, more than any run can hold (%g): tile less"
                         % (" x ".join(map(str, tile)), len(model), n, MAX_ATOMS))
    return model.tile(*tile)


def from_file(path, zone=(0, 0, 1), tile=(1, 1, 1), format=None, index=0, **kw):
    """A structure file read with ase.io.read (CIF, POSCAR, extended XYZ ...) as a tiled Model.

    Args:
        path: the structure file.
        zone: the zone axis [u v w] of its cell ([u v t w] for hexagonal cells), see orient.
        tile: repeats (nx, ny, nz) of the oriented cell.
        format: ASE's format name, when the file name does not tell.
        index: which structure of a file that holds several.
        **kw: orient's other arguments (sigma={"Si": 0.076}, default_sigma, occupancy ...).

    Returns:
        Model: `model.write("model.xyz")` writes it for [sample] xyz.
    """
    import ase.io
    atoms = ase.io.read(path, index=index, format=format)
    return from_atoms(atoms, zone, tile, **kw)


def _pair(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError("expected ELEMENT=VALUE, e.g. Si=0.076")
    k, v = text.split("=", 1)
    return k.strip(), float(v)


def main(argv=None):
    p = argparse.ArgumentParser(prog="stemsim-structure",
                                description="Write a Prismatic/stemsim XYZ model from a structure file ASE reads "
                                            "(CIF, POSCAR, extended XYZ ...), oriented along a zone axis (the beam "
                                            "direction z) in an orthorhombic periodic cell, and tiled.")
    p.add_argument("input", help="structure file (any format ase.io.read reads)")
    p.add_argument("-o", "--output", required=True, help="XYZ file to write ('-' for standard output)")
    p.add_argument("--zone", nargs="+", type=int, default=[0, 0, 1], metavar="I",
                   help="zone axis [u v w] of the input cell (or [u v t w] for hexagonal cells); default 0 0 1")
    p.add_argument("--tile", nargs=3, type=int, default=[1, 1, 1], metavar=("NX", "NY", "NZ"),
                   help="repeat the oriented cell (default 1 1 1)")
    p.add_argument("--sigma", action="append", type=_pair, default=[], metavar="EL=RMS",
                   help="rms thermal displacement of an element in Angstrom (repeatable), e.g. --sigma Si=0.076")
    p.add_argument("--default-sigma", type=float, default=DEFAULT_SIGMA,
                   help="rms displacement of the other elements (default %g Angstrom)" % DEFAULT_SIGMA)
    p.add_argument("--format", default=None, help="ASE format name, when the file name does not tell")
    p.add_argument("--max-index", type=int, default=6, help="search range of the supercell search (default 6)")
    p.add_argument("--comment", default=None, help="the comment line of the XYZ file")
    p.add_argument("--given-axes", action="store_true",
                   help="take the zone in the given cell's axes even when it is a primitive cell of a centred "
                        "lattice (by default such a cell is taken in its conventional cell first)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file (never the input)")
    a = p.parse_args(argv)
    if a.output != "-" and os.path.lexists(a.output):
        if os.path.exists(a.input) and os.path.exists(a.output) and os.path.samefile(a.input, a.output):
            p.error("the output %s is the input: choose another name" % a.output)
        if not a.overwrite:
            p.error("%s exists: --overwrite replaces it" % a.output)
        if os.path.islink(a.output) or not os.path.isfile(a.output):
            p.error("%s is not a regular file: not replaced" % a.output)
    if len(a.zone) not in (3, 4):
        p.error("--zone takes 3 indices (or 4 for hexagonal cells)")
    if min(a.tile) < 1:
        p.error("--tile takes three positive integers")
    try:
        model = from_file(a.input, zone=a.zone, tile=a.tile, format=a.format, sigma=dict(a.sigma),
                          default_sigma=a.default_sigma, max_index=a.max_index, comment=a.comment,
                          standardise=not a.given_axes)
    except ImportError as err:
        sys.exit("stemsim-structure: error: %s (pip install ase)" % err)
    except ZoneAxisError as err:
        sys.exit("stemsim-structure: error: %s" % err)
    except (OSError, ValueError, KeyError) as err:
        sys.exit("stemsim-structure: error: %s: %s" % (a.input, err))
    if a.output == "-":
        sys.stdout.write(model.text())
    else:
        model.write(a.output, overwrite=a.overwrite)
        print("stemsim-structure: %s: %d atoms, cell %.6f x %.6f x %.6f Angstrom" % ((a.output, len(model)) +
                                                                                    tuple(model.cell)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
