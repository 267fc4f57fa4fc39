#!/usr/bin/env bash
# Every check and benchmark of the GPU engine in one call on the GPU machine. Builds nothing.
#
#   benchmarks/gpu/gpu_run_all.sh [all | a comma list of quick,check,oom,sanitizer,bench
#                                                         with bench options noms (PRISM rows only), novar (no variants)]
#
# Runs from any directory; build-gpu/ built (or STEMSIM= the binary) (CUDA on) and the benchmark models in
# build-gpu/bench/ (aC.xyz from benchmarks/cases/gpu_make_amorphous_carbon.py, generated here when
# missing; Pt_nanoparticle.xyz copied from shared/data/structures). The device runs the CPU
# reference too (compute.device=cpu, all cores).
#   check: GPU vs CPU relative RMS (tests/check_h5.py, tol 1e-4) for multislice and PRISM,
#          single-transfer and streaming, 1 and 2 ranks, frozen phonons; the memory-mode
#          decisions and GPU out-of-memory messages; compute-sanitizer memcheck on a small case.
#   bench: time per probe, multislice and PRISM f = 4/8/16, amorphous carbon and the Pt
#          nanoparticle, single-transfer and streaming, and the PRISM output step's fraction of
#          the measured device-to-device copy bandwidth.
# Logs and the summary go to $OUT (or /tmp/stemsim_gpu_out); the last lines printed are the tables.
set -u
MODE=${1:-all}
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" stemsim_gpu_out build-gpu  # root, STEMSIM, OUT
ROOT=$root
EXE=${STEMSIM_EXE:-$STEMSIM}
OUTD=$out
W=${STEMSIM_WORK:-/tmp/stemsim_gpu_work}
DATA=$ROOT/build-gpu/bench
mkdir -p "$OUTD" "$W"
SUM=$OUTD/summary.txt
TAB=$W/bench_table.txt
: >"$SUM"
: >"$TAB"
LOGS=$OUTD/all_logs.txt
: >"$LOGS"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
SI=$ROOT/benchmarks/cases/gpu_check_si.ini
BENCH=$ROOT/benchmarks/cases/gpu_bench.ini
PY=python3
FAILS=0

say() { echo "$*" | tee -a "$SUM"; }

# run NAME NP [ENV=VALUE ...] -- stemsim arguments...   (rc in $RC, log in $W/NAME.log)
run() {
    local name=$1 np=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("-x" "$1"); export "${1?}"; shift; done
    shift
    local t0 t1
    t0=$(date +%s.%N)
    timeout 420 mpirun -np "$np" "${envs[@]}" "$EXE" "$@" --set output.file="$W/$name.h5" >"$W/$name.log" 2>&1
    RC=$?
    t1=$(date +%s.%N)
    for e in "${envs[@]}"; do [ "$e" != "-x" ] && unset "${e%%=*}"; done
    local dt
    dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
    { echo "===== $name (np $np, rc $RC, $dt s): $*"; cat "$W/$name.log"; } >>"$LOGS"
    echo "  ran $name: rc $RC in $dt s"
}

# compare NAME REF: GPU result vs CPU reference, relative RMS of every dataset
compare() {
    local name=$1 ref=$2
    if [ ! -f "$W/$name.h5" ] || [ ! -f "$W/$ref.h5" ]; then
        say "FAIL  $name vs $ref: output missing"
        FAILS=$((FAILS + 1))
        return
    fi
    $PY "$ROOT/tests/check_h5.py" compare "$W/$name.h5" "$W/$ref.h5" --tol 1e-4 >"$W/$name.cmp" 2>&1
    local rc=$?
    cat "$W/$name.cmp" >>"$LOGS"
    local worst
    worst=$(awk '/relative rms/ {for (i = 1; i <= NF; i++) if ($i == "rms") {v = $(i + 1); n = $2}; if (v + 0 > m + 0 || m == "") {m = v; d = n}} END {printf "%s (%s)", m, d}' "$W/$name.cmp")
    local all
    all=$(awk '/relative rms/ {for (i = 1; i <= NF; i++) if ($i == "rms") printf "%s %s  ", $2, $(i + 1)}' "$W/$name.cmp")
    if [ $rc -eq 0 ]; then say "PASS  $name vs $ref: worst relative RMS $worst | $all"
    elif [ $rc -eq 77 ]; then say "SKIP  $name vs $ref: no h5py/numpy on this machine"
    else say "FAIL  $name vs $ref: worst relative RMS $worst | $all"; FAILS=$((FAILS + 1)); fi
}

# expect NAME RC PATTERN: the run ended with RC and printed PATTERN
expect() {
    local name=$1 want=$2 pat=$3
    local line
    line=$(grep -m1 -E "$pat" "$W/$name.log" | cut -c1-400)
    if [ "$RC" -eq "$want" ] && [ -n "$line" ]; then say "PASS  $name: exit $RC, \"$line\""
    else say "FAIL  $name: exit $RC (want $want), pattern '$pat' $( [ -n "$line" ] && echo found || echo missing)"; FAILS=$((FAILS + 1)); fi
}

gpu_line() { grep -m1 "$2" "$W/$1.log" | cut -c1-600; }

if [ ! -f "$DATA/aC.xyz" ]; then
    mkdir -p "$DATA"
    $PY "$ROOT/benchmarks/cases/gpu_make_amorphous_carbon.py" "$DATA/aC.xyz"
fi
md5sum "$DATA/aC.xyz" "$DATA/Pt_nanoparticle.xyz" | tee -a "$SUM"
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.mem,driver_version --format=csv | tee -a "$SUM"

has() { [ "$MODE" = all ] || case ",$MODE," in *",$1,"*) true ;; *) false ;; esac; }
S8="--set scan.x_end=41.6 --set scan.y_end=41.6"
P2="--set simulation.algorithm=prism"

if has quick; then # a short subset: one PRISM comparison (S-matrix download, both output modes)
    say "== quick correctness: GPU vs CPU engine (relative RMS, tol 1e-4)"
    run si_p2_cpu 1 -- "$SI" $P2 --set compute.device=cpu
    run si_p2_gpu_stream 1 -- "$SI" $P2 --set compute.device=gpu --set compute.memory_mode=streaming
    run si_p2_gpu_single 1 -- "$SI" $P2 --set compute.device=gpu --set compute.memory_mode=single
    compare si_p2_gpu_stream si_p2_cpu
    compare si_p2_gpu_single si_p2_cpu
fi

if has check; then
    say "== correctness: GPU vs CPU engine (relative RMS, tol 1e-4)"
    $PY -c "import h5py, numpy" 2>/dev/null || say "note: h5py/numpy missing: comparisons will be skipped"
    # silicon, aberrated probe, 3D + 2D + DPC + 4D
    run si_ms_cpu 1 -- "$SI" --set compute.device=cpu
    run si_ms_gpu_single 1 -- "$SI" --set compute.device=gpu --set compute.memory_mode=single
    run si_ms_gpu_stream 1 -- "$SI" --set compute.device=gpu --set compute.memory_mode=streaming --set compute.batch_size=3
    run si_p2_cpu 1 -- "$SI" $P2 --set compute.device=cpu
    run si_p2_gpu_single 1 -- "$SI" $P2 --set compute.device=gpu --set compute.memory_mode=single
    run si_p2_gpu_stream 1 -- "$SI" $P2 --set compute.device=gpu --set compute.memory_mode=streaming
    run si_p2_gpu_direct 1 -- "$SI" $P2 --set compute.device=gpu --set debug.gpu_prism_output=direct
    run si_p2_gpu_2ranks 2 -- "$SI" $P2 --set compute.device=gpu --set compute.streams_per_gpu=3
    run si_p1_cpu 1 -- "$SI" $P2 --set simulation.interpolation_x=1 --set simulation.interpolation_y=1 --set compute.device=cpu
    run si_p1_gpu_stream 1 -- "$SI" $P2 --set simulation.interpolation_x=1 --set simulation.interpolation_y=1 --set compute.device=gpu --set compute.memory_mode=streaming
    run si_p4_cpu 1 -- "$SI" $P2 --set simulation.interpolation_x=4 --set simulation.interpolation_y=4 --set compute.device=cpu
    run si_p4_gpu_stream 1 -- "$SI" $P2 --set simulation.interpolation_x=4 --set simulation.interpolation_y=4 --set compute.device=gpu --set compute.memory_mode=streaming
    run si_fp_cpu 1 -- "$SI" --set simulation.frozen_phonons=2 --set simulation.thermal=true --set compute.device=cpu
    run si_fp_gpu_2ranks 2 -- "$SI" --set simulation.frozen_phonons=2 --set simulation.thermal=true --set compute.device=gpu
    compare si_ms_gpu_single si_ms_cpu
    compare si_ms_gpu_stream si_ms_cpu
    compare si_p2_gpu_single si_p2_cpu
    compare si_p2_gpu_stream si_p2_cpu
    compare si_p2_gpu_direct si_p2_cpu
    compare si_p2_gpu_2ranks si_p2_cpu
    compare si_p1_gpu_stream si_p1_cpu
    compare si_p4_gpu_stream si_p4_cpu
    compare si_fp_gpu_2ranks si_fp_cpu
    # the benchmark models, 8 x 8 probes
    for m in aC Pt; do
        X="--set sample.xyz=$DATA/$([ $m = aC ] && echo aC.xyz || echo Pt_nanoparticle.xyz)"
        run ${m}_ms_cpu 1 -- "$BENCH" $X $S8 --set compute.device=cpu
        run ${m}_ms_gpu_single 1 -- "$BENCH" $X $S8 --set compute.device=gpu --set compute.memory_mode=single
        run ${m}_ms_gpu_stream 1 -- "$BENCH" $X $S8 --set compute.device=gpu --set compute.memory_mode=streaming
        run ${m}_p8_cpu 1 -- "$BENCH" $X $S8 $P2 --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set compute.device=cpu
        run ${m}_p8_gpu_single 1 -- "$BENCH" $X $S8 $P2 --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set compute.device=gpu --set compute.memory_mode=single
        run ${m}_p8_gpu_stream 1 -- "$BENCH" $X $S8 $P2 --set simulation.interpolation_x=8 --set simulation.interpolation_y=8 --set compute.device=gpu --set compute.memory_mode=streaming
        compare ${m}_ms_gpu_single ${m}_ms_cpu
        compare ${m}_ms_gpu_stream ${m}_ms_cpu
        compare ${m}_p8_gpu_single ${m}_p8_cpu
        compare ${m}_p8_gpu_stream ${m}_p8_cpu
    done
fi

if has oom; then
    say "== memory modes and out-of-memory"
    # memory modes and out-of-memory: the test hook pretends the GPU has this much free memory
    run aC_ms_gpu_auto_small 1 STEMSIM_TEST_GPU_FREE_GIB=0.7 -- "$BENCH" --set sample.xyz=$DATA/aC.xyz $S8 --set compute.device=gpu
    expect aC_ms_gpu_auto_small 0 "streaming slice by slice \(auto\)"
    [ -f "$W/aC_ms_cpu.h5" ] && compare aC_ms_gpu_auto_small aC_ms_cpu
    run oom_refused 1 STEMSIM_TEST_GPU_FREE_GIB=0.5 -- "$BENCH" --set sample.xyz=$DATA/aC.xyz $S8 --set compute.device=gpu
    expect oom_refused 5 "does not fit on the GPU even when streaming"
    run oom_single_refused 1 STEMSIM_TEST_GPU_FREE_GIB=0.7 -- "$BENCH" --set sample.xyz=$DATA/aC.xyz $S8 --set compute.device=gpu --set compute.memory_mode=single
    expect oom_single_refused 5 "does not fit on the GPU in single-transfer mode"
    # 8 streams x 4096 probes x 8 MB: 256 GB of batches, far beyond the card: cudaMalloc fails
    run oom_real 1 STEMSIM_TEST_GPU_FREE_GIB=100000 -- "$BENCH" --set sample.xyz=$DATA/aC.xyz --set scan.x_start=0 \
        --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100 --set compute.device=gpu --set compute.memory_mode=single \
        --set compute.batch_size=4096 --set compute.streams_per_gpu=8 --set compute.threads=1
    expect oom_real 5 "GPU out of memory"
fi

if has sanitizer; then
    # compute-sanitizer memcheck: small silicon case, both algorithms, both modes
    SMALL="--set sample.tile_x=2 --set sample.tile_y=2 --set sample.tile_z=2 --set scan.step=1.5"
    for v in "ms_single:--set compute.memory_mode=single" "ms_stream:--set compute.memory_mode=streaming" \
             "p2_single:$P2 --set compute.memory_mode=single" "p2_stream:$P2 --set compute.memory_mode=streaming"; do
        n=${v%%:*}
        a=${v#*:}
        t0=$(date +%s)
        timeout 300 mpirun -np 1 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
            "$EXE" "$SI" $SMALL $a --set compute.device=gpu --set output.file="$W/san_$n.h5" >"$W/san_$n.log" 2>&1
        RC=$?
        { echo "===== sanitizer $n rc $RC"; cat "$W/san_$n.log"; } >>"$LOGS"
        summary=$(grep -m1 "ERROR SUMMARY" "$W/san_$n.log")
        if [ $RC -eq 0 ] && echo "$summary" | grep -q "ERROR SUMMARY: 0 errors"; then say "PASS  memcheck $n: $summary ($(($(date +%s) - t0)) s)"
        else say "FAIL  memcheck $n: rc $RC, ${summary:-no summary}"; FAILS=$((FAILS + 1)); fi
    done
fi
if has quick || has check || has oom || has sanitizer; then say "== checks: $FAILS failure(s)"; fi

if has bench; then
    say "== benchmarks"
    BW=$($PY - <<'EOF' 2>/dev/null
import torch
x = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts = []
for _ in range(10):
    s.record(); y.copy_(x); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
ts.sort()
print(f"{2 * x.numel() / ts[len(ts) // 2] / 1e9:.0f}")
EOF
)
    BW=${BW:-0}
    say "device-to-device copy bandwidth (read + write, median of 10 x 2 GiB): $BW GB/s"
    printf "%-4s %-10s %-9s %8s %9s %10s %11s %9s %8s %8s %7s %8s\n" model algorithm mode probes "build s" "compute s" "us/probe" "total ms/p" "TFLOP/s" "GB/s" "%BW" "setup s" >"$TAB"
    FULL="--set scan.x_start=0 --set scan.y_start=0 --set scan.x_end=100 --set scan.y_end=100"
    MS16="--set scan.x_end=43.2 --set scan.y_end=43.2"
    for m in aC Pt; do
        X="--set sample.xyz=$DATA/$([ $m = aC ] && echo aC.xyz || echo Pt_nanoparticle.xyz)"
        for mode in single streaming; do
            [ "$MODE" != all ] && has noms && continue # option noms: PRISM rows only
            n=b_${m}_ms_$mode
            run $n 1 -- "$BENCH" $X $MS16 --set compute.device=gpu --set compute.memory_mode=$mode
            l=$(gpu_line $n "gpu multislice:")
            probes=$(echo "$l" | sed -n 's/.*multislice: \([0-9]*\) probes.*/\1/p')
            comp=$(echo "$l" | sed -n 's/.*: \([0-9.]*\) s compute.*/\1/p')
            per=$(echo "$l" | sed -n 's/.*(\([0-9.]*\) ms per probe).*/\1/p')
            printf "%-4s %-10s %-9s %8s %9s %10s %11s %9s %8s %8s %7s\n" $m multislice $mode "${probes:-?}" - "${comp:-?}" \
                "$(awk -v p="${per:-0}" 'BEGIN {printf "%.1f", p * 1000}')" "${per:-?}" - - - >>"$TAB"
        done
        for f in 4 8 16; do
            for mode in single streaming; do
                n=b_${m}_p${f}_$mode
                run $n 1 -- "$BENCH" $X $FULL --set simulation.algorithm=prism --set simulation.interpolation_x=$f \
                    --set simulation.interpolation_y=$f --set compute.device=gpu --set compute.memory_mode=$mode
                ls=$(gpu_line $n "gpu S-matrix:")
                lo=$(gpu_line $n "gpu PRISM output:")
                build=$(echo "$ls" | sed -n 's/.*: \([0-9.]*\) s compute.*/\1/p')
                probes=$(echo "$lo" | sed -n 's/.*output: \([0-9]*\) probes.*/\1/p')
                comp=$(echo "$lo" | sed -n 's/.*: \([0-9.]*\) s compute.*/\1/p')
                us=$(echo "$lo" | sed -n 's/.*(\([0-9.]*\) us per probe).*/\1/p')
                tf=$(echo "$lo" | sed -n 's/.*GFLOP (\([0-9.]*\) TFLOP\/s).*/\1/p')
                gbs=$(echo "$lo" | sed -n 's/.*traffic (lower bound) [0-9.]* GB = \([0-9.]*\) GB\/s.*/\1/p')
                su1=$(echo "$ls" | sed -n 's/.*, \([0-9.]*\) s setup and upload.*/\1/p')
                su2=$(echo "$lo" | sed -n 's/.*, \([0-9.]*\) s setup and upload.*/\1/p')
                setup=$(awk -v a="${su1:-0}" -v b="${su2:-0}" 'BEGIN {printf "%.3f", a + b}')
                tot=$(awk -v b="${build:-0}" -v c="${comp:-0}" -v s="$setup" -v n="${probes:-1}" 'BEGIN {printf "%.4f", (b + c + s) / n * 1000}')
                pct=$(awk -v g="${gbs:-0}" -v bw="$BW" 'BEGIN {if (bw > 0) printf "%.1f", 100 * g / bw; else print "?"}')
                printf "%-4s %-10s %-9s %8s %9s %10s %11s %9s %8s %8s %7s %8s\n" $m "prism f=$f" $mode "${probes:-?}" "${build:-?}" \
                    "${comp:-?}" "${us:-?}" "$tot" "${tf:-?}" "${gbs:-?}" "$pct" "$setup" >>"$TAB"
            done
        done
    done
    # variants on the carbon case: the output step's method (direct reduction per probe, CGEMM3M),
    # the tile edge T, the number of streams; multislice batch and streams
    X="--set sample.xyz=$DATA/aC.xyz"
    VARIANTS=1
    [ "$MODE" != all ] && has novar && VARIANTS=0 # option novar: no variants
    PF4="$FULL --set simulation.algorithm=prism --set simulation.interpolation_x=4 --set simulation.interpolation_y=4"
    for v in "p4_direct:STEMSIM_NOTHING=1:--set debug.gpu_prism_output=direct" \
             "p4_gemm3m:STEMSIM_NOTHING=1:--set debug.gpu_gemm=3m" \
             "p4_tile12:STEMSIM_NOTHING=1:--set debug.gpu_tile=12" "p4_tile16:STEMSIM_NOTHING=1:--set debug.gpu_tile=16" \
             "p4_tile6:STEMSIM_NOTHING=1:--set debug.gpu_tile=6" \
             "p4_streams4:STEMSIM_NOTHING=1:--set compute.streams_per_gpu=4" \
             "ms_batch16:STEMSIM_NOTHING=1:--set compute.batch_size=16" \
             "ms_streams4:STEMSIM_NOTHING=1:--set compute.streams_per_gpu=4 --set compute.batch_size=4"; do
        [ $VARIANTS = 1 ] || break
        IFS=: read -r tag env extra <<<"$v"
        n=b_aC_$tag
        case $tag in p4*) args=$PF4 ;; *) args=$MS16 ;; esac
        run $n 1 "$env" -- "$BENCH" $X $args $extra --set compute.device=gpu
        l=$(grep -m1 -E "gpu (PRISM output|multislice):" "$W/$n.log" | sed 's/^gpu //')
        say "variant aC $tag: $l"
    done
    say "== table (GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); copy bandwidth $BW GB/s)"
    say "   build s = S-matrix step; compute s = multislice or PRISM output step; us/probe = that step per probe;"
    say "   total ms/p = (S-matrix + output, both with their setup) / probes; GB/s = output step's device-memory traffic (lower bound);"
    say "   %BW = of the copy bandwidth; setup s = page-locking the host S-matrix, S-matrix upload, plans, buffers"
    cat "$TAB" | tee -a "$SUM"
fi
cp "$TAB" "$OUTD/" 2>/dev/null
echo "== summary"
grep -E "^(PASS|FAIL|SKIP|==)" "$SUM"
exit $((FAILS > 0))
