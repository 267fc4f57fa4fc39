#!/usr/bin/env bash
# The one driver's guard (issue 29.1): beyond bit_identical.sh's cases, every kind of run that
# goes through mpi/campaign.c, through a reference build and a new build, must give the same
# datasets bit for bit and the same attributes (CPU engine; the root texts without the file names
# and the MPI runtime's measured memory):
#   bash benchmarks/cpu/bit_identical_driver.sh REF_STEMSIM NEW_STEMSIM [WORKDIR] [CASE ...]
# Cases (tests/integration/small.ini; 2 ranks where named): a tilt x defocus series (multislice,
# prism; 2 groups), a checkpointed plain run, 2 groups x 3 configurations (multislice, prism),
# hrtem plain and on the distributed FFT (and a tilt series on it), cbed, PRISM save_smatrix then
# smatrix_file, save_potential then potential_file, a focal spread, source_size, depths
# (multislice, prism), layout = emd, a positions file, 3 ranks in 3 groups, and --convergence's report.
# Both builds plan their FFTs with FFT_PLANNING (default estimate), as bit_identical.sh does.
set -euo pipefail
ref=$(realpath "$1") new=$(realpath "$2") work=${3:-/tmp/stemsim_bit_identical_driver}
shift $(( $# < 3 ? $# : 3 ))
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
plans=(--set compute.fft_planning=${FFT_PLANNING:-estimate})
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STEMSIM_KIRKLAND=${STEMSIM_KIRKLAND:-$root/data/kirkland_params.txt}
sed "s|^xyz = .*|xyz = $root/data/Si100_unitcell.xyz|" "$root/tests/integration/small.ini" > "$work/small.ini"
{ cat "$work/small.ini"; printf '\n[series]\ntilt_x = 0 3\ndefocus = -30 30\n'; } | sed 's/^defocus = 0$//' > "$work/series.ini"
{ cat "$work/small.ini"; printf '\n[series]\ntilt_x = 0 3\n'; } > "$work/tilts.ini"
{ grep -vE "^(units|x_start|x_end|y_start|y_end|step) =" "$work/small.ini" | sed "s|^\[scan\]|[scan]\npositions = probes.txt|"; } > "$work/positions.ini"
printf '2.0 2.0\n2.4 2.8\n3.1 2.2\n2.0 2.0\n' > "$work/probes.txt"
phon=(--set simulation.thermal=true --set simulation.frozen_phonons=3)
two=(--set compute.fp_groups=2)
whole=(--set scan.units=fractional --set scan.x_start=0 --set scan.x_end=1 --set scan.y_start=0 --set scan.y_end=1
       --set scan.step=2.715)
declare -A CASES=(
  [series_multislice]="2|series.ini|${phon[*]} ${two[*]} --set simulation.frozen_phonons=2"
  [series_prism]="2|series.ini|${phon[*]} ${two[*]} --set simulation.frozen_phonons=2 --set simulation.algorithm=prism"
  [checkpoint_plain]="2|small.ini|${phon[*]} ${two[*]} --set output.checkpoint=true"
  [groups_multislice]="2|small.ini|${phon[*]} ${two[*]}"
  [groups_prism]="2|small.ini|${phon[*]} ${two[*]} --set simulation.algorithm=prism"
  [hrtem]="2|small.ini|${phon[*]} ${two[*]} --set simulation.algorithm=hrtem --set probe.cs=0.01 --set probe.defocus=-20"
  [hrtem_dist]="2|small.ini|${phon[*]} --set simulation.algorithm=hrtem --set compute.distributed_fft=on --set probe.defocus=-20"
  [hrtem_dist_tilts]="2|tilts.ini|${phon[*]} --set simulation.algorithm=hrtem --set compute.distributed_fft=on"
  [cbed]="1|small.ini|${phon[*]} --set simulation.algorithm=cbed"
  [save_smatrix]="2|small.ini|${phon[*]} ${two[*]} --set simulation.algorithm=prism --set output.save_smatrix=true"
  [save_potential]="2|small.ini|${phon[*]} --set output.save_potential=true"
  [focal_multislice]="2|small.ini|${phon[*]} ${two[*]} --set probe.defocus=-20 --set probe.focal_spread=40 --set probe.focal_points=3"
  [focal_prism]="1|small.ini|--set simulation.algorithm=prism --set probe.focal_spread=40 --set probe.focal_points=3"
  [source_size]="2|small.ini|${phon[*]} ${two[*]} ${whole[*]} --set probe.source_size=1.2"
  [depths_multislice]="2|small.ini|${phon[*]} ${two[*]} --set 'output.depths=5.43 10.86'"
  [emd]="2|small.ini|${phon[*]} ${two[*]} --set output.layout=emd"
  [positions]="2|positions.ini|${phon[*]} ${two[*]}"
  [ranks3_prism]="3|small.ini|${phon[*]} --set compute.fp_groups=3 --set simulation.algorithm=prism"
  [depths_prism]="2|small.ini|--set simulation.algorithm=prism --set 'output.depths=5.43 10.86'"
)
# each after the case whose output it reads
declare -A LOADS=([smatrix_file]="save_smatrix|2|small.ini|${phon[*]} ${two[*]} --set simulation.algorithm=prism"
                  [potential_file]="save_potential|2|small.ini|${phon[*]}")
names=("$@"); [ ${#names[@]} -gt 0 ] || names=(${!CASES[@]} smatrix_file potential_file convergence)
run() { # which case ranks ini sets (one string, shell-quoted)
  local which=$1 case=$2 np=$3 ini=$4 sets
  local exe=$ref; [ "$which" = new ] && exe=$new
  eval "sets=($5)"
  (cd "$work" && mpirun --oversubscribe -np "$np" "$exe" -q "$ini" "${sets[@]}" "${plans[@]}" --set output.overwrite=true \
     --set "output.file=${case}_$which.h5" > "${case}_$which.log" 2>&1) ||
    { echo "$case ($which) failed:"; tail -5 "$work/${case}_$which.log"; }
}
for name in "${names[@]}"; do
  for which in ref new; do
    if [ "$name" = convergence ]; then
      exe=$ref; [ $which = new ] && exe=$new
      (cd "$work" && "$exe" --convergence small.ini "${plans[@]}" --set simulation.thermal=true --set simulation.frozen_phonons=2 \
         2>&1 | grep -v "^stemsim: .* s\b" | grep -E "convergence|mrad|pixel" > convergence_$which.txt) || true
    elif [ -n "${LOADS[$name]:-}" ]; then
      IFS='|' read -r from np ini sets <<< "${LOADS[$name]}"
      run $which $name $np $ini "$sets --set simulation.$name=${from}_$which.h5"
    else
      IFS='|' read -r np ini sets <<< "${CASES[$name]}"
      run $which $name $np $ini "$sets"
    fi
  done
done
/usr/bin/python3 - "$work" "${names[@]}" <<'PY'
import re, sys, h5py, numpy as np
work, names, bad = sys.argv[1], sys.argv[2:], 0
def text(v, case, which):
    """The root texts without what differs by design: the output's own name (and the stored input's,
    <case>_new/_ref), the MPI runtime's measured memory in the plan's memory line, and the config lines
    of keys the reference build may not know yet."""
    v = v.decode() if isinstance(v, bytes) else str(v)
    v = v.replace("_" + which + ".h5", "_WHICH.h5")
    v = re.sub(r"(?m)^(fft_cache|gpu_slices) = .*\n", "", v)  # keys newer than 46417eb (their defaults change nothing here)
    return re.sub(r"[0-9.]+ GiB \(runtime [0-9.]+", "X GiB (runtime X", v)
def attrs(f):
    out = {}
    def visit(n, o):
        for k, v in o.attrs.items(): out[n + "@" + k] = v
    for k, v in f.attrs.items(): out["/@" + k] = v
    f.visititems(visit)
    return out
def same(x, y):
    try: return np.array_equal(np.asarray(x), np.asarray(y))
    except Exception: return str(x) == str(y)
for case in names:
    if case == "convergence":
        a, b = (open(f"{work}/convergence_{w}.txt").read() for w in ("new", "ref"))
        ok = a == b and a.strip() != ""
        print(f"convergence: report {'identical' if ok else 'DIFFERS'}")
        bad += not ok
        continue
    try:
        a, b = h5py.File(f"{work}/{case}_new.h5", "r"), h5py.File(f"{work}/{case}_ref.h5", "r")
    except OSError as e:
        print(f"{case}: MISSING output ({e})"); bad += 1; continue
    na, nb = [], []
    a.visititems(lambda n, o: na.append(n) if isinstance(o, h5py.Dataset) else None)
    b.visititems(lambda n, o: nb.append(n) if isinstance(o, h5py.Dataset) else None)
    diff = [n for n in na if n in b and not np.array_equal(a[n][()], b[n][()])]
    only = sorted(set(na) ^ set(nb))
    aa, ab = attrs(a), attrs(b)
    for d, which in ((aa, "new"), (ab, "ref")):
        for k, v in d.items():
            if isinstance(v, (str, bytes)): d[k] = text(v, case, which)
    # the build's own description differs between two builds by design
    skip = ("version", "build", "git", "created", "date", "time", "host")
    adiff = [k for k in sorted(set(aa) | set(ab))
             if not any(s in k.split("@")[-1].lower() for s in skip) and (k not in aa or k not in ab or not same(aa[k], ab[k]))]
    ok = not diff and not only and not adiff
    print(f"{case}: {len(na)} datasets, {len(aa)} attributes: " + ("bit-identical" if ok else
          f"DIFFER datasets {diff} only-in-one {only} attributes {adiff}"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
