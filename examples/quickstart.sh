#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine, builds stemsim, simulates the bundled
# silicon example on 2 MPI ranks and renders the images to PNG with the Python package
# (python/, run in place with Debian's numpy, h5py, xarray and matplotlib: stemsim-render).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps
bash .ci/build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p results
ranks=$(( $(nproc) < 2 ? 1 : 2 ))
mpirun --oversubscribe --bind-to none -np "$ranks" build/stemsim --set output.file=results/quickstart.h5 examples/quickstart.ini
PYTHONPATH=python MPLBACKEND=Agg /usr/bin/python3 -m stemsim.plot results/quickstart.h5 results
echo "images written to results/*.png"
