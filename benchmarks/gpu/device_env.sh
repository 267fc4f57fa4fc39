# The one wrapper for the device set-up, sourced by every benchmarks/gpu/*.sh script:
#   source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" NAME [DEFAULT_BUILD_DIR]
# so that each script runs from any directory and on any machine with a GPU:
# - goes to the repository root (the scripts name files relative to it);
# - sources .device/env.sh where the checkout carries one (the development project's GPU
#   machine: its carried Debian runtime libraries), once; elsewhere nothing is needed;
# - installs the carried h5py/numpy wheels (.whl/, for tests/check_h5.py) where present;
# - STEMSIM: the binary (default $root/${STEMSIM_BUILD:-DEFAULT_BUILD_DIR or build}/stemsim);
#   OUT: where logs and tables go (default /tmp/NAME).
# Sets root, out, build (the binary's directory: build/tests/..., build/ref/stemsim,
# build/stemsim_before are looked up there), exe (= $STEMSIM) and the run-time environment.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
if [ -f .device/env.sh ] && [ -z "${STEMSIM_DEVICE_ENV:-}" ]; then
  # shellcheck disable=SC1091
  source .device/env.sh && export STEMSIM_DEVICE_ENV=1
fi
out=${OUT:-/tmp/$1}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null &&
    export PYTHONPATH=/tmp/site
fi
STEMSIM=${STEMSIM:-$root/${STEMSIM_BUILD:-${2:-build}}/stemsim}
export STEMSIM
exe=$STEMSIM
build=$(dirname "$STEMSIM")
export STEMSIM_KIRKLAND=$root/data/kirkland_params.txt STEMSIM_LOBATO=$root/data/lobato_params.txt OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
