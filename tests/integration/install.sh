#!/usr/bin/env bash
# cmake --install (ctest label `install`): the binary, tables, examples and job scripts
# under a prefix; the installed tree moved elsewhere still finds its tables (relative to
# the binary, no build-tree path) and runs the installed example; STEMSIM_KIRKLAND still
# overrides; --version names the build.
#   install.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/stemsim share/stemsim/data/kirkland_params.txt share/stemsim/data/lobato_params.txt \
         share/stemsim/examples/quickstart.ini share/stemsim/jobscripts/stemsim.lua; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL $f not installed"; exit 1; }
done
# the library search path the build linked with survives the install (cmake strips it by default)
runpath() { readelf -d "$1" 2>/dev/null | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p'; }
if command -v readelf > /dev/null; then
  built=$(runpath "$build/stemsim") installed=$(runpath "$work/prefix/bin/stemsim")
  for d in ${built//:/ }; do
    case ":$installed:" in *":$d:"*) ;; *) echo "FAIL the installed binary lost RUNPATH $d (it has '$installed')"; exit 1 ;; esac
  done
fi
mv "$work/prefix" "$work/moved"
cd "$work/moved/share/stemsim/examples"
unset STEMSIM_KIRKLAND STEMSIM_LOBATO
bin=$work/moved/bin/stemsim
"$bin" quickstart.ini --dry-run > "$work/dry.log" 2>&1 || { cat "$work/dry.log"; echo "FAIL the moved install's dry run"; exit 1; }
"$bin" quickstart.ini --set output.file="$work/q.h5" --set compute.threads=1 --set scan.step=1.0 \
  > "$work/run.log" 2>&1 || { cat "$work/run.log"; echo "FAIL the moved install's run"; exit 1; }
[ -s "$work/q.h5" ] || { echo "FAIL no output"; exit 1; }
# the override still wins: a missing table named by it is refused (exit 4)
if STEMSIM_KIRKLAND=$work/none.txt "$bin" quickstart.ini --dry-run > "$work/override.log" 2>&1; then
  echo "FAIL STEMSIM_KIRKLAND pointing nowhere was not used"; exit 1
fi
grep -q "none.txt" "$work/override.log" || { cat "$work/override.log"; echo "FAIL the message does not name the override"; exit 1; }
# messages name the source relative to the repository, never the build machine's checkout
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if grep -F "[$source_dir/" "$work/override.log"; then echo "FAIL a message names the build machine's source path"; exit 1; fi
# captured, not piped into grep -q: a reader that leaves early would fail the pipeline (pipefail)
version=$("$bin" --version) || { echo "FAIL --version exited non-zero"; exit 1; }
case $version in *$'\nHDF5: '*'(parallel)'*) ;; *) echo "$version"; echo "FAIL --version lacks HDF5"; exit 1 ;; esac
case $version in *$'\nGPU engine: '*) ;; *) echo "FAIL --version lacks the GPU engine"; exit 1 ;; esac
echo "installed, moved, found its tables: $(grep -c . "$work/install.log") files; ${version%%$'\n'*}"
echo PASS
