#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine, builds stemsim and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps --interop --slurm
bash .ci/build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd build && ctest --output-on-failure --timeout 900 "$@"
