#!/bin/bash
# The levels of the source (docs/developers.md, "The levels"): src/ <- comm/ primitives
# <- io/ <- mpi/ drivers <- app/, cuda/ on src/ only; no include cycles between
# modules; src/ headers declare only src/ functions. The check itself: tests/levels.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/tests/levels.py" "$root"
