#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine, builds stemsim and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps --interop --slurm
bash .ci/build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# the tests in parallel, one per core (9 min on the 2-core CI machine, 15.5 serially); a test
# that owns a shared resource declares it (RESOURCE_LOCK) in its CMake file
cd build && ctest --output-on-failure --timeout 900 -j "$(nproc 2>/dev/null || echo 2)" "$@"
