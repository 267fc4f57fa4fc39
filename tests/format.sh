#!/bin/bash
# The tree's style (.clang-format, applied to every C, CUDA and header file): fails when a
# tracked source file is not formatted. The check needs clang-format 14 (Debian 12's, which
# .ci/deps installs): other versions format some constructs differently, so the test is
# skipped (77) with them or without one.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cf=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$cf" ] || { echo "format: no clang-format: skipped"; exit 77; }
major=$("$cf" --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
[ "$major" = 14 ] || { echo "format: clang-format $major, not 14: skipped"; exit 77; }
cd "$root" || exit 1
files=$(git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null) || { echo "format: not a git checkout: skipped"; exit 77; }
[ -n "$files" ] || { echo "format: no sources listed: skipped"; exit 77; }
bad=0
for f in $files; do
  "$cf" --dry-run -Werror "$f" > /dev/null 2>&1 || { echo "not formatted: $f (clang-format -i $f)"; bad=$((bad + 1)); }
done
[ $bad = 0 ] && echo "format: $(echo "$files" | wc -l) files formatted as .clang-format says"
exit $((bad > 0))
