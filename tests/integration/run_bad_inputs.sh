#!/usr/bin/env bash
# Table-driven hostile-input test: runs stemsim on every case in
# tests/bad_inputs/ on 1 and on 2 ranks and asserts, for each run:
#   - a non-zero exit, equal to the expected code (unless it is '*'),
#   - the expected substring on stderr (it names the file:line or the [section] key),
#   - no hang (each run has a timeout), no crash (signal, sanitizer report),
#   - no output left: neither *.h5 nor *.incomplete appears (and a file that
#     existed before is unchanged).
#
# usage: run_bad_inputs.sh --stemsim BIN [--mpiexec BIN] [--mpi-flags "FLAGS"]
#                          [--ranks "1 2"] [--timeout S] [--work DIR] [CASE...]
# One rank runs stemsim directly (an MPI singleton); more ranks use mpiexec.
#
# Cases (tests/bad_inputs/):
#   NAME.ini  a config; first line "; expect: CODE SUBSTRING". Optional header
#             lines: "; args: ARGS" (extra command-line arguments), "; run-config:
#             PATH" (run this path instead of the case), "; keep-output" (the case
#             sets [output] file itself; otherwise --set output.file=<scratch>/out.h5
#             is added), "; setup: existing-output | readonly-dir", "; skip-if-gpu"
#             (the case expects that no GPU is visible), "; env: NAME=VALUE" (set
#             for the run, e.g. another scattering table).
#   NAME.xyz  a model; first (comment) line "expect: CODE SUBSTRING"; the runner
#             writes a small config that reads it.
#   NAME.expect  the expectation for a case whose first line cannot hold it
#             (empty or binary files).
# Parse-only cases, refused while the config and the model are read (a second line
# "; parse-only: DESCRIPTION" in an .ini, "parse-only" on the second line of its
# NAME.expect; every .xyz case unless its NAME.expect says "whole-program"), are
# checked in-process by ctest (tests/integration/bad_input_parse.c, no MPI); ctest
# runs the others through this script, one case and rank count per test. Given
# cases by name, or none (all of them), this script runs any case whole.
# Placeholders in .ini cases: @DATA@ (repo data/), @TMP@ (the run's scratch
# directory), @RODIR@ (a directory this user cannot write), @DIR@ (bad_inputs/).
# CODE '*' accepts any non-zero exit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cases_dir=$root/tests/bad_inputs
data_dir=$root/data
stemsim="" mpiexec="" mpi_flags="" ranks="1 2" timeout_s=60 work=${TMPDIR:-/tmp}/stemsim_bad_inputs
while [ $# -gt 0 ]; do
    case $1 in
    --stemsim) stemsim=$2; shift 2 ;;
    --mpiexec) mpiexec=$2; shift 2 ;;
    --mpi-flags) mpi_flags=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    --*) echo "run_bad_inputs.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ -x "$stemsim" ] || { echo "run_bad_inputs.sh: --stemsim BIN is required" >&2; exit 2; }
stemsim=$(cd "$(dirname "$stemsim")" && pwd)/$(basename "$stemsim")
export LC_ALL=C
if [ $# -gt 0 ]; then
    selected=("$@")
else
    selected=()
    for f in "$cases_dir"/*.ini "$cases_dir"/*.xyz; do selected+=("$(basename "$f")"); done
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)

# A directory this user cannot write into. root bypasses permission bits, so
# root gets a pseudo file system that refuses new files.
readonly_dir() {
    if [ "$(id -u)" != 0 ]; then
        mkdir -p "$1/ro" && chmod 555 "$1/ro" && echo "$1/ro"
    elif ! touch /sys/.stemsim_probe 2>/dev/null; then
        echo /sys
    fi
}

# expectation of a case: "CODE SUBSTRING"
expectation() {
    local f=$cases_dir/$1 side=$cases_dir/${1%.*}.expect line
    if [ -f "$side" ]; then
        head -n 1 "$side"
        return
    fi
    line=$(head -n 1 "$f" | tr -d '\r')
    line=${line#;}
    line=${line#\#}
    line=${line# }
    case $line in
    expect:*) line=${line#expect:}; echo "${line# }" ;;
    *) return 1 ;;
    esac
}

# header directive "; NAME: value" of an .ini case
directive() {
    grep -a -m 1 "^; $2:" "$cases_dir/$1" 2>/dev/null | sed "s/^; $2: *//"
}

passed=0 failed=0 skipped=0
failures=()
for case_file in "${selected[@]}"; do
    name=${case_file%.*}
    if [ ! -f "$cases_dir/$case_file" ]; then
        echo "FAIL $case_file: no such case"; failed=$((failed + 1)); continue
    fi
    if ! exp=$(expectation "$case_file") || [ -z "$exp" ]; then
        echo "FAIL $case_file: no '; expect: CODE SUBSTRING' line and no $name.expect"
        failed=$((failed + 1)); continue
    fi
    want_code=${exp%% *}
    want_text=${exp#* }
    [ "$want_text" = "$exp" ] && want_text=""
    for np in $ranks; do
        t=$work/$name/np$np
        chmod -R u+w "$work/$name" 2>/dev/null
        rm -rf "$t"
        mkdir -p "$t"
        args=()
        rodir=""
        run_env=""
        cfg=$t/$name.ini
        if [ "${case_file##*.}" = xyz ]; then
            cp "$cases_dir/$case_file" "$t/$case_file"
            cat >"$cfg" <<EOT
[sample]
xyz = $t/$case_file
[simulation]
pixel_size = 0.1
slice_thickness = 2.715
potential_radius = 2
[scan]
x_end = 0.1
y_end = 0.05
[compute]
threads = 1
EOT
            args+=(--set "output.file=$t/out.h5")
        else
            if grep -q '^; skip-if-gpu' "$cases_dir/$case_file" && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
                echo "SKIP $name (np $np): a GPU is visible"
                skipped=$((skipped + 1)); continue
            fi
            setup=$(directive "$case_file" setup)
            if [ "$setup" = readonly-dir ]; then
                rodir=$(readonly_dir "$t")
                if [ -z "$rodir" ]; then
                    echo "SKIP $name (np $np): no directory that refuses writes for this user"
                    skipped=$((skipped + 1)); continue
                fi
            fi
            subst() { sed -e "s|@DATA@|$data_dir|g" -e "s|@TMP@|$t|g" -e "s|@RODIR@|$rodir|g" -e "s|@DIR@|$cases_dir|g"; }
            if grep -q '@[A-Z]*@' "$cases_dir/$case_file"; then
                subst <"$cases_dir/$case_file" >"$cfg"
            else
                cp "$cases_dir/$case_file" "$cfg"
            fi
            extra=$(directive "$case_file" args | subst)
            # shellcheck disable=SC2206
            [ -n "$extra" ] && args+=($extra)
            run_cfg=$(directive "$case_file" run-config | subst)
            run_env=$(directive "$case_file" env | subst)
            [ -n "$run_cfg" ] && cfg=$run_cfg
            [ -z "$(directive "$case_file" keep-output)" ] && ! grep -q '^; keep-output' "$cases_dir/$case_file" &&
                args+=(--set "output.file=$t/out.h5")
            if [ "$setup" = existing-output ]; then
                echo "not an HDF5 file: must survive" >"$t/out.h5"
            fi
        fi
        listing() { (cd "$t" && find . -mindepth 1 ! -name .stdout ! -name .stderr | sort); }
        before=$(listing)
        sum_before=$( [ -f "$t/out.h5" ] && cksum <"$t/out.h5")
        if [ "$np" = 1 ] || [ -z "$mpiexec" ]; then
            cmd=("$stemsim" "$cfg" "${args[@]}")
        else
            # shellcheck disable=SC2206
            cmd=("$mpiexec" $mpi_flags -np "$np" "$stemsim" "$cfg" "${args[@]}")
        fi
        start=$(date +%s.%N)
        # shellcheck disable=SC2086
        (cd "$t" && env $run_env timeout -k 5 "$timeout_s" "${cmd[@]}" >"$t/.stdout" 2>"$t/.stderr" </dev/null)
        rc=$?
        secs=$(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo "?")
        problems=()
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            problems+=("hung: killed after ${timeout_s} s")
        elif [ $rc -eq 0 ]; then
            problems+=("exit 0, expected failure")
        elif [ $rc -gt 128 ]; then
            problems+=("crashed with signal $((rc - 128))")
        elif [ "$want_code" != "*" ] && [ "$rc" != "$want_code" ]; then
            problems+=("exit $rc, expected $want_code")
        fi
        if [ -n "$want_text" ] && ! grep -aqF -- "$want_text" "$t/.stderr"; then
            problems+=("stderr lacks '$want_text'")
        fi
        if grep -aqE 'AddressSanitizer|LeakSanitizer|runtime error:|Segmentation fault|core dumped|signal [0-9]+ \(' "$t/.stderr"; then
            problems+=("crash or sanitizer report on stderr")
        fi
        after=$(listing)
        if [ "$before" != "$after" ]; then
            problems+=("files appeared: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')")
        fi
        for left in "$t"/*.incomplete "$t"/no/such/dir/*; do
            [ -e "$left" ] && problems+=("left $left")
        done
        if [ -n "$sum_before" ] && [ "$(cksum <"$t/out.h5" 2>/dev/null)" != "$sum_before" ]; then
            problems+=("the existing output was changed or removed")
        fi
        if [ ${#problems[@]} -eq 0 ]; then
            passed=$((passed + 1))
            printf 'ok   %-28s np %s  exit %s  %.1fs\n' "$name" "$np" "$rc" "$secs" 2>/dev/null || echo "ok   $name np $np exit $rc"
        else
            failed=$((failed + 1))
            failures+=("$name (np $np)")
            echo "FAIL $name (np $np): ${problems[*]}"
            echo "     command: ${cmd[*]}"
            sed 's/^/     | /' "$t/.stderr" | grep -v '^     | *$' | head -n 12
        fi
        [ -n "$rodir" ] && [ "$rodir" = "$t/ro" ] && chmod 755 "$rodir"
    done
done
echo
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "bad inputs: ${#selected[@]} cases x ranks {$ranks}"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
