#!/usr/bin/env bash
# Several GPUs of one node (issue: multi-GPU runs; results in benchmarks/results/MULTI_GPU.md).
# Builds nothing: carry build/, .device/ and .whl/ to a machine with 2 (or more) GPUs:
#   bash benchmarks/gpu/device_multi_gpu.sh correct|ac|paper|all|quick|four|costs
# correct: the silicon check case (aberrated probe, rings, images, DPC, 4D), multislice
#   and PRISM f = 2, 1 and 4 configurations: every way of using 2 GPUs (one rank per GPU
#   in one rank group, one rank per GPU in two groups, one rank driving both GPUs with
#   gpus_per_rank = 2, four ranks sharing two GPUs) against one rank on one GPU, relative
#   RMS <= 1e-6 on every output.
# ac: strong scaling on the amorphous-carbon case (100 A cube, 80 keV, 0.1 A pixels):
#   multislice (19 600 probes, one configuration) and PRISM f = 8 and f = 4 (whole cell,
#   250 000 probes, 16 configurations), 1 GPU against the same 2-GPU variants.
# paper: the SrTiO3 slab of benchmarks/cases/paper_srtio3.ini (162 000 atoms, 1024^2, 720^2
#   probes), PRISM f = 16 and 8 with the paper's 32 configurations, f = 4 with 8,
#   1 GPU against 2 GPUs, and f = 4
#   with one configuration (beams split over the GPUs, the S-matrix gathered).
# four: a node of 4 GPUs in one call (about 6 minutes): the silicon case's variants on 4 GPUs
#   (4 ranks in one group, in 4 groups, one rank driving 4, 2 ranks driving 2 each) against
#   1 GPU (1e-6; 4 groups of whole configurations bit for bit); strong scaling 1 -> 2 ->
#   4 GPUs for aC multislice, aC PRISM f = 8 (16 configurations), the paper slab f = 16 and 8
#   (32 configurations; f = 4 on 4 GPUs only, and on 1 with PAPER_F4_ONE=1); the 65-tilt x 16-configuration campaign of
#   device_tomography.sh (PRISM f = 8, 62 500 probes, HAADF) on 4 GPUs (its 1-GPU time is the
#   tomography benchmark's).
# costs: where the fixed time of 1 and 4 GPUs goes (the launch, each set-up phase, the end of
#   the run: waiting, collecting the groups' sums, finishing), from the -v logs' lines, for the
#   silicon case, the paper slab f = 16 and 8 (32 configurations) and aC PRISM f = 8.
# Whole-process wall time (mpirun included), speed-up and efficiency go to
# $OUT/multi_gpu.csv and are printed as a markdown table; every run's -v log is kept.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" device_multi_gpu
what=${1:-all}
exe=$STEMSIM
w=/tmp/dmg
mkdir -p "$w" "$out/logs"
mpi=(mpirun --oversubscribe --bind-to none)
ngpu=$(nvidia-smi -L | wc -l)
status=0
csv=$out/multi_gpu.csv
[ -f "$csv" ] || echo "case,variant,gpus,ranks,wall_s,rc" > "$csv"

# variant NAME -> the command prefix and the extra settings of that way of running
launch() {
  case $1 in
    1gpu)        cmd=(env CUDA_VISIBLE_DEVICES=0 "$exe"); set_=(); ng=1; nr=1 ;;
    2rank_1grp)  cmd=("${mpi[@]}" -np 2 "$exe"); set_=(--set compute.fp_groups=1); ng=2; nr=2 ;;
    2rank_2grp)  cmd=("${mpi[@]}" -np 2 "$exe"); set_=(--set compute.fp_groups=2); ng=2; nr=2 ;;
    1rank_2gpu)  cmd=("$exe"); set_=(--set compute.gpus_per_rank=2); ng=2; nr=1 ;;
    4rank_2gpu)  cmd=("${mpi[@]}" -np 4 "$exe"); set_=(--set compute.fp_groups=1); ng=2; nr=4 ;;
    2rank_1gpu)  cmd=(env CUDA_VISIBLE_DEVICES=0 "${mpi[@]}" -np 2 -x CUDA_VISIBLE_DEVICES "$exe"); set_=(); ng=1; nr=2 ;;
    2of4_1grp)   cmd=(env CUDA_VISIBLE_DEVICES=0,1 "${mpi[@]}" -np 2 -x CUDA_VISIBLE_DEVICES "$exe"); set_=(--set compute.fp_groups=1); ng=2; nr=2 ;;
    2of4_2grp)   cmd=(env CUDA_VISIBLE_DEVICES=0,1 "${mpi[@]}" -np 2 -x CUDA_VISIBLE_DEVICES "$exe"); set_=(--set compute.fp_groups=2); ng=2; nr=2 ;;
    4rank_1grp)  cmd=("${mpi[@]}" -np 4 "$exe"); set_=(--set compute.fp_groups=1); ng=4; nr=4 ;;
    4rank_4grp)  cmd=("${mpi[@]}" -np 4 "$exe"); set_=(--set compute.fp_groups=4); ng=4; nr=4 ;;
    1rank_4gpu)  cmd=("$exe"); set_=(--set compute.gpus_per_rank=4); ng=4; nr=1 ;;
    2rank_2gpus) cmd=("${mpi[@]}" -np 2 "$exe"); set_=(--set compute.gpus_per_rank=2 --set compute.fp_groups=1); ng=4; nr=2 ;;
    cpu)         cmd=("$exe"); set_=(--set compute.device=cpu); ng=0; nr=1 ;;
  esac
}

# run CASE VARIANT settings...: one timed whole-process run, output $w/CASE_VARIANT.h5
run() {
  local c=$1 v=$2
  shift 2
  launch "$v"
  local log=$out/logs/${c}_$v.log t0 t1 rc
  t0=$(date +%s.%N)
  timeout ${RUN_LIMIT:-300} "${cmd[@]}" -v "$@" --set compute.device=gpu "${set_[@]}" --set output.overwrite=true \
      --set output.file="$w/${c}_$v.h5" > "$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  local t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  echo "$c,$v,$ng,$nr,$t,$rc" >> "$csv"
  printf "| %-22s | %-11s | %d | %d | %8s s | rc %d |\n" "$c" "$v" "$ng" "$nr" "$t" "$rc"
  if [ $rc -ne 0 ]; then status=1; tail -4 "$log"; fi
}

# same CASE VARIANT TOL [DATASETS]: the variant's output against the 1-GPU run's
same() {
  local r
  r=$(python3 tests/check_h5.py compare "$w/${1}_$2.h5" "$w/${1}_1gpu.h5" --tol "$3" \
      --datasets "${4:-images,rings,cbed,dpc_com_x,dpc_com_y,total_intensity}" 2>&1)
  local worst=$(echo "$r" | grep -oE "relative rms [0-9.e+-]+" | awk '{ if ($3 > m) m = $3 } END { printf "%.1e", m }')
  echo "   $1 $2 = 1gpu: $(echo "$r" | tail -1) worst relative rms $worst"
  echo "$r" | grep -q "PASS" || { status=1; echo "$r" | grep FAIL; }
}

echo "== $(nvidia-smi -L | tr '\n' ' ')"
nvidia-smi topo -m 2>/dev/null | head -6
[ "$ngpu" -ge 2 ] || echo "only $ngpu GPU visible: the 2-GPU variants share it"

if [ "$what" = correct ] || [ "$what" = all ]; then
  echo "== correctness: silicon check case, every 2-GPU variant against 1 GPU (tol 1e-6)"
  si=(benchmarks/cases/gpu_check_si.ini -q --set scan.step=0.4)
  for alg in multislice prism; do
    for fp in 1 4; do
      c=si_${alg}_fp$fp
      th=(--set simulation.algorithm=$alg --set simulation.thermal=true --set simulation.frozen_phonons=$fp)
      vs=(1gpu 2rank_1grp 1rank_2gpu 4rank_2gpu)
      [ $fp = 4 ] && vs+=(2rank_2grp)
      for v in "${vs[@]}"; do run $c $v "${si[@]}" "${th[@]}"; done
      for v in "${vs[@]:1}"; do same $c $v 1e-6; done
    done
  done
  grep -h "GPU engine:" "$out"/logs/si_prism_fp4_*.log | sort | uniq -c | head -8
  echo "== 4 configurations (the GPU runs build each next configuration while the GPU works): GPU = CPU engine (tol 1e-4)"
  for alg in multislice prism; do
    run si_${alg}_fp4 cpu "${si[@]}" --set simulation.algorithm=$alg --set simulation.thermal=true --set simulation.frozen_phonons=4
    for v in 1gpu 2rank_2grp; do
      python3 tests/check_h5.py compare "$w/si_${alg}_fp4_$v.h5" "$w/si_${alg}_fp4_cpu.h5" --tol 1e-4 | tail -1 | sed "s/^/   si_${alg}_fp4 $v = cpu: /"
    done
  done
fi

if [ "$what" = ac ] || [ "$what" = all ]; then
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
  ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz)
  echo "== amorphous carbon: multislice, 19 600 probes, 1 configuration"
  ms=("${ac[@]}" --set scan.x_start=20 --set scan.x_end=47.9 --set scan.y_start=20 --set scan.y_end=47.9)
  for v in 1gpu 2rank_1grp 1rank_2gpu 2rank_1gpu; do run aC_ms $v "${ms[@]}"; done
  for v in 2rank_1grp 1rank_2gpu 2rank_1gpu; do same aC_ms $v 1e-6 images,rings; done
  for f in 8 4; do
    echo "== amorphous carbon: PRISM f=$f, 250 000 probes, 16 configurations"
    pr=("${ac[@]}" --set simulation.algorithm=prism --set simulation.interpolation_x=$f
        --set simulation.interpolation_y=$f --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100
        --set scan.y_end=100 --set simulation.thermal=true --set simulation.frozen_phonons=16)
    for v in 1gpu 2rank_2grp 2rank_1grp 1rank_2gpu 2rank_1gpu; do run aC_prism_f$f $v "${pr[@]}"; done
    for v in 2rank_2grp 2rank_1grp 1rank_2gpu 2rank_1gpu; do same aC_prism_f$f $v 1e-6 images,rings; done
  done
fi

if [ "$what" = paper ] || [ "$what" = all ]; then
  for f in 16 8 4; do
    nc=32; [ $f = 4 ] && nc=8 # the paper's whole job at f = 16 and 8
    echo "== SrTiO3 slab (paper scale): PRISM f=$f, 518 400 probes, $nc configurations"
    p=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f
       --set simulation.frozen_phonons=$nc)
    for v in 1gpu 2rank_2grp 1rank_2gpu; do run paper_prism_f$f $v "${p[@]}"; done
    for v in 2rank_2grp 1rank_2gpu; do same paper_prism_f$f $v 1e-6 images,rings; done
  done
  echo "== SrTiO3 slab: PRISM f=4, one configuration (beams split over the GPUs, S-matrix gathered)"
  p=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=4 --set simulation.interpolation_y=4
     --set simulation.frozen_phonons=1)
  for v in 1gpu 2rank_1grp 1rank_2gpu; do run paper_1cfg_f4 $v "${p[@]}"; done
  for v in 2rank_1grp 1rank_2gpu; do same paper_1cfg_f4 $v 1e-6 images,rings; done
fi

if [ "$what" = four ]; then
  [ "$ngpu" -ge 4 ] || echo "only $ngpu GPUs visible: the 4-GPU variants share them"
  parts=" ${FOUR_PARTS:-correct ms prism paper tomo} " # a part of it: FOUR_PARTS="paper tomo"
fi
if [ "$what" = four ] && [[ $parts == *" correct "* ]]; then
  echo "== correctness: silicon check case, 4 configurations, every 4-GPU variant against 1 GPU (tol 1e-6)"
  si=(benchmarks/cases/gpu_check_si.ini -q --set scan.step=0.4 --set simulation.thermal=true
      --set simulation.frozen_phonons=4)
  for alg in multislice prism; do
    c=si4_$alg
    for v in 1gpu 4rank_1grp 4rank_4grp 1rank_4gpu 2rank_2gpus; do run $c $v "${si[@]}" --set simulation.algorithm=$alg; done
    for v in 4rank_1grp 4rank_4grp 1rank_4gpu 2rank_2gpus; do same $c $v 1e-6; done
    same $c 4rank_4grp 0 # gpu_deterministic = on (the default): groups of whole configurations, bit for bit
  done
fi
if [ "$what" = four ]; then
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
  ac=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz)
fi
if [ "$what" = four ] && [[ $parts == *" ms "* ]]; then
  echo "== amorphous carbon: multislice, 19 600 probes, 1 configuration: 1, 2, 4 GPUs"
  ms=("${ac[@]}" --set scan.x_start=20 --set scan.x_end=47.9 --set scan.y_start=20 --set scan.y_end=47.9)
  for v in 1gpu 2of4_1grp 4rank_1grp; do run aC_ms $v "${ms[@]}"; done
  for v in 2of4_1grp 4rank_1grp; do same aC_ms $v 1e-6 images,rings; done
fi
if [ "$what" = four ] && [[ $parts == *" prism "* ]]; then
  echo "== amorphous carbon: PRISM f=8, 250 000 probes, 16 configurations: 1, 2, 4 GPUs"
  pr=("${ac[@]}" --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
      --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100
      --set simulation.thermal=true --set simulation.frozen_phonons=16)
  for v in 1gpu 2of4_2grp 4rank_4grp; do run aC_prism_f8 $v "${pr[@]}"; done
  for v in 2of4_2grp 4rank_4grp; do same aC_prism_f8 $v 1e-6 images,rings; done
fi
if [ "$what" = four ] && [[ $parts == *" paper "* ]]; then
  for f in ${PAPER_F:-16 8 4}; do
    echo "== SrTiO3 slab (paper scale): PRISM f=$f, 518 400 probes, 32 configurations"
    p=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f
       --set simulation.frozen_phonons=32)
    vs=(1gpu 2of4_2grp 4rank_4grp)
    # f = 4: 4 GPUs only (1 GPU: 122.2 s, issue "Performance round 4"), unless PAPER_F4_ONE=1
    [ $f = 4 ] && vs=(${PAPER_F4_ONE:+1gpu} 4rank_4grp)
    for v in "${vs[@]}"; do run paper_prism_f$f $v "${p[@]}"; done
    for v in "${vs[@]:1}"; do same paper_prism_f$f $v 1e-6 images,rings; done
  done
fi
if [ "$what" = four ] && [[ $parts == *" tomo "* ]]; then
  echo "== the tomography campaign: 65 tilts x 16 configurations, PRISM f = 8, 62 500 probes, HAADF: 4 GPUs"
  tomo=("${ac[@]}" --set simulation.algorithm=prism --set simulation.interpolation_x=8 --set simulation.interpolation_y=8
        --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set scan.step=0.4
        --set detector.save_3d=false --set simulation.thermal=true --set simulation.frozen_phonons=16
        --set series.tilt_x=-64:2:64)
  RUN_LIMIT=400 run tomo_65x16 4rank_4grp "${tomo[@]}"
  rm -f $w/*.h5
fi

if [ "$what" = costs ]; then # where a 4-GPU job's fixed time goes: the launch, the set-up, the end
  echo "== the launch alone: mpirun of 1 and 4 processes that do nothing"
  for n in 1 4; do
    t0=$(date +%s.%N); "${mpi[@]}" -np $n true; t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v n=$n 'BEGIN { printf "   mpirun -np %d true: %.2f s\n", n, b - a }'
  done
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
  si=(benchmarks/cases/gpu_check_si.ini --set scan.step=0.4 --set simulation.thermal=true --set simulation.frozen_phonons=4)
  for v in 1gpu 4rank_4grp 4rank_1grp; do run si4_prism $v "${si[@]}" --set simulation.algorithm=prism; done
  p=(benchmarks/cases/paper_srtio3.ini --set simulation.frozen_phonons=32)
  for f in 16 8; do
    for v in 1gpu 4rank_4grp; do
      run paper_prism_f$f $v "${p[@]}" --set simulation.interpolation_x=$f --set simulation.interpolation_y=$f
    done
  done
  pr=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set simulation.algorithm=prism
      --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set scan.x_start=0 --set scan.y_start=0
      --set scan.x_end=100 --set scan.y_end=100 --set simulation.thermal=true --set simulation.frozen_phonons=16)
  for v in 1gpu 4rank_4grp; do run aC_prism_f8 $v "${pr[@]}"; done
  for l in "$out"/logs/*.log; do
    echo "-- $(basename "$l" .log)"
    grep -hE "set-up on rank 0|campaign's sums|finished from the sums|wall [0-9.]+\)|rank 0: |slowest rank:|mean rank:|wrote " "$l" | cut -c1-300
  done
fi

if [ "$what" = quick ]; then # the lightest per-configuration cases, where fixed costs show
  python3 benchmarks/cases/gpu_make_amorphous_carbon.py $w/aC.xyz > /dev/null
  pr=(benchmarks/cases/gpu_bench.ini --set sample.xyz=$w/aC.xyz --set simulation.algorithm=prism --set simulation.interpolation_x=8
      --set simulation.interpolation_y=8 --set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100
      --set scan.y_end=100 --set simulation.thermal=true --set simulation.frozen_phonons=16)
  for v in 1gpu 2rank_2grp; do run aC_prism_f8 $v "${pr[@]}"; done
  same aC_prism_f8 2rank_2grp 1e-6 images,rings
  p=(benchmarks/cases/paper_srtio3.ini --set simulation.interpolation_x=16 --set simulation.interpolation_y=16)
  for v in 1gpu 2rank_2grp; do run paper_prism_f16 $v "${p[@]}"; done
  same paper_prism_f16 2rank_2grp 1e-6 images,rings
fi

echo "== speed-up against 1 GPU (whole process)"
awk -F, 'NR > 1 && $6 == 0 && $2 != "cpu" { t[$1","$2] = $5; g[$1","$2] = $3; if ($2 == "1gpu") base[$1] = $5 }
  END { printf "| case | variant | GPUs | wall s | speed-up | efficiency |\n|---|---|---|---|---|---|\n";
        for (k in t) { split(k, a, ","); if (a[2] == "1gpu" || !(a[1] in base)) continue;
          s = base[a[1]] / t[k]; printf "| %s | %s | %d | %.2f (1 GPU %.2f) | %.2f | %.0f%% |\n", a[1], a[2], g[k], t[k], base[a[1]], s, 100 * s / g[k] } }' "$csv" | sort
for l in "$out"/logs/*.log; do
  echo "-- $(basename "$l"): $(grep -hE "GPU engine:|rank 0: |slowest rank:" "$l" | cut -c1-260 | tr '\n' ' ')"
done > "$out/phases.txt"
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
exit $status
