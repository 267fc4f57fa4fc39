# Sourced by the benchmarks/device_*.sh scripts on the GPU machine, from the
# project's root: the carried h5py/numpy wheels (.whl/, for tests/check_h5.py)
# and the environment every run needs. Sets root and out (OUT, else /tmp/$1).
root=$(pwd)
out=${OUT:-/tmp/$1}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null &&
    export PYTHONPATH=/tmp/site
fi
export STEMSIM_KIRKLAND=$root/data/kirkland_params.txt STEMSIM_LOBATO=$root/data/lobato_params.txt OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
