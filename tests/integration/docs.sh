#!/usr/bin/env bash
# The documentation (ctest label `docs`):
#   docs.sh config STEMSIM    docs/config.md's key table is what `stemsim --help-config` prints
#                             (docs/gen_config.py --check; fails when an option changed and the
#                             page was not regenerated)
#   docs.sh site MKDOCS OUT [STEMSIM PYTHON]
#                             the MkDocs site builds with warnings as errors (broken links and
#                             anchors, pages missing from the nav), and the README stays a front
#                             door (under 200 lines); exit 77 when MkDocs is not installed. With
#                             STEMSIM and PYTHON the figures are drawn first from the runs that
#                             docs/figures/make_figures.py makes (a page showing a figure that no
#                             script makes fails); the API page (docs/api.md, mkdocstrings from
#                             the package's docstrings) documents the package's public names; the
#                             notebooks are rendered on the site (mkdocs-jupyter), with STEMSIM and
#                             PYTHON executed first (tests/integration/notebooks.py), each page
#                             showing its figures
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
case ${1:-} in
  config)
    exec python3 "$root/docs/gen_config.py" "$2" --check ;;
  site)
    mkdocs=$2 out=$3
    lines=$(wc -l < "$root/README.md")
    [ "$lines" -lt 200 ] || { echo "FAIL README.md has $lines lines: the manual belongs in docs/"; exit 1; }
    [ -x "$mkdocs" ] || { echo "SKIP MkDocs is not installed at $mkdocs (.ci/deps --interop installs it)"; exit 77; }
    "$(dirname "$mkdocs")/python" -c "import mkdocstrings_handlers.python, mkdocs_jupyter" 2>/dev/null ||
      { echo "SKIP mkdocstrings-python (the API page) or mkdocs-jupyter (the notebooks) is not installed beside $mkdocs" \
             "(.ci/deps --interop installs them)"; exit 77; }
    python3 "$root/docs/figures/make_figures.py" --check-pages || { echo "FAIL a page shows a figure no script makes"; exit 1; }
    if [ -n "${4:-}" ]; then
      "$5" "$root/docs/figures/make_figures.py" --stemsim "$4" --out "$root/docs/figures" --work "$out.figures" ||
        { echo "FAIL drawing the figures"; exit 1; }
    fi
    # the notebooks, rendered by mkdocs-jupyter from docs/notebooks/ (not in git): with STEMSIM and
    # PYTHON the copies that tests/integration/notebooks.py executes (with their outputs), else
    # the committed ones (no outputs)
    rm -rf "$root/docs/notebooks" && mkdir -p "$root/docs/notebooks"
    executed=""
    if [ -n "${4:-}" ]; then
      python3 "$root/tests/integration/notebooks.py" --python "$5" --stemsim "$4" --source "$root" \
        --workdir "$out.notebooks"; rc=$?
      case $rc in
        0) executed=1
           for nb in "$root"/notebooks/*.ipynb; do cp "$out.notebooks/$(basename "$nb")" "$root/docs/notebooks/"; done ;;
        77) echo "note: the notebooks are rendered without outputs (they could not be executed)" ;;
        *) echo "FAIL executing the notebooks"; exit 1 ;;
      esac
    fi
    [ -n "$executed" ] || cp "$root"/notebooks/*.ipynb "$root/docs/notebooks/"
    "$mkdocs" build --strict --config-file "$root/mkdocs.yml" --site-dir "$out" 2>&1 || { echo "FAIL the docs site"; exit 1; }
    if [ -n "$executed" ]; then  # each notebook's page shows its figures
      for nb in "$root"/notebooks/*.ipynb; do
        page="$out/notebooks/$(basename "$nb" .ipynb)/index.html"
        grep -q "jp-RenderedImage" "$page" 2>/dev/null || { echo "FAIL $page shows no figure of the executed notebook"; exit 1; }
      done
    fi
    # the API page documents every public name of the package, from its docstrings
    for name in io.read io.Results runner.Config runner.run runner.StemsimError handoff.to_py4dstem \
                handoff.to_hyperspy noise.poisson_noise structure.from_file structure.orient plot.images plot.render; do
      grep -q "id=\"stemsim\.$name\"" "$out/api/index.html" ||
        { echo "FAIL the API page (docs/api.md) does not document stemsim.$name"; exit 1; }
    done
    echo "PASS: README.md $lines lines; site in $out" ;;
  *) echo "usage: docs.sh config STEMSIM | site MKDOCS OUT" >&2; exit 2 ;;
esac
