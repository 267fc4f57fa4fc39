#!/bin/sh
# Builds the libFuzzer harnesses against the parser sources directly:
#   fuzz/build.sh [OUTDIR]      (default: build-fuzz)
# needs clang with compiler-rt (Debian: clang libclang-rt-14-dev) and libinih-dev.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/build-fuzz}
CC=${CC:-clang}
mkdir -p "$out"
flags="-g -O1 -std=c17 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -fsanitize-coverage-ignorelist=$here/coverage_ignore.txt -I$root/src"
common="$root/io/config.c $root/io/config_keys.c $root/src/log.c"
$CC $flags -o "$out/fuzz_config" "$here/fuzz_config.c" $common -linih -lm
$CC $flags -o "$out/fuzz_xyz" "$here/fuzz_xyz.c" $root/io/xyz.c $root/src/atoms.c $common -linih -lm
echo "built $out/fuzz_config $out/fuzz_xyz"
