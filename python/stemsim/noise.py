"""Counting noise of a finite electron dose on simulated results (as abTEM's poisson_noise).

    noisy = stemsim.poisson_noise(r["images/HAADF"], dose=1e5)      # electrons per Angstrom^2
    noisy = stemsim.poisson_noise(r["cbed"], dose=1e4, seed=1)       # 4D patterns alike

stemsim's values are fractions of the incident beam per probe; a probe at dose D (e/A^2) over
a scan step of area A (A^2) sends N = D A electrons, so a detector value v counts Poisson(v N)
electrons. The result is that count divided by N again: the same units, with the noise.
"""
import numpy as np

SCAN = ("scan_y", "scan_x")


def scan_probe_area(data):
    """Angstrom^2 per probe from a DataArray's scan_x and scan_y coordinates (their steps)."""
    steps = []
    for dim in SCAN:
        c = getattr(data, "coords", {}).get(dim) if hasattr(data, "coords") else None
        if c is None or c.size < 2:
            raise ValueError("probe_area: the data has no %s coordinate of two or more probes; pass probe_area "
                             "(Angstrom^2 per probe) yourself" % dim)
        steps.append(abs(float(c[1] - c[0])))
    return steps[0] * steps[1]


def poisson_noise(data, dose, probe_area=None, seed=None):
    """The counting noise of a finite electron dose, added to images or 4D patterns.

    stemsim's values are fractions of the incident beam per probe: a probe of `dose` x
    `probe_area` electrons counts Poisson(value x electrons) of them, divided by the electrons
    again, so the result is in the data's units.

    Args:
        data: an xarray.DataArray from stemsim.read, or an array of such fractions.
        dose: electrons per Angstrom^2 (finite, > 0).
        probe_area: Angstrom^2 per probe (default: the scan steps of data's coordinates).
        seed: for numpy's random generator.

    Returns:
        the same type as data (a DataArray keeps its dims and coordinates, the dose and the
        electrons per probe in its attrs).
    """
    if not (np.isfinite(dose) and dose > 0):
        raise ValueError("poisson_noise: dose = %r electrons per Angstrom^2: a finite number > 0" % (dose,))
    area = probe_area if probe_area is not None else scan_probe_area(data)
    electrons = float(dose) * float(area)
    values = np.asarray(getattr(data, "values", data), float)
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("poisson_noise: the data holds negative or non-finite values: not intensities")
    counts = np.random.default_rng(seed).poisson(values * electrons)
    noisy = (counts / electrons).astype(values.dtype if values.dtype.kind == "f" else float)
    if hasattr(data, "copy") and hasattr(data, "values") and hasattr(data, "attrs"):
        out = data.copy(data=noisy.astype(data.dtype) if data.dtype.kind == "f" else noisy)
        out.attrs = dict(data.attrs, dose_e_per_A2=float(dose), electrons_per_probe=electrons)
        return out
    return noisy
