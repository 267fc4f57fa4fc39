# Whole-program tests: MPI rank/thread invariance (LABELS mpi), hostile
# inputs (LABELS bad_inputs) and fuzz-regression replays (LABELS fuzz).
# Included from tests/CMakeLists.txt, which defines STEMSIM_PYTHON,
# STEMSIM_MPIEXEC, STEMSIM_MPI_FLAGS and STEMSIM_TEST_ENV.

set(_it_dir ${CMAKE_CURRENT_SOURCE_DIR}/integration)
set(_it_work ${CMAKE_CURRENT_BINARY_DIR}/integration)
file(MAKE_DIRECTORY ${_it_work})
set(_it_mpi_flags "")
foreach(_f IN LISTS STEMSIM_MPI_FLAGS)
  list(APPEND _it_mpi_flags "--mpi-flag=${_f}")
endforeach()

# stemsim_test(NAME LABELS TIMEOUT [SKIP] [SERIAL] [PROCESSORS n] COMMAND ...): one ctest with the
# suite's environment (SKIP: exit 77 means skipped; SERIAL: runs alone).
function(stemsim_test name labels timeout)
  cmake_parse_arguments(_t "SKIP;SERIAL" "PROCESSORS" "COMMAND" ${ARGN})
  add_test(NAME ${name} COMMAND ${_t_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" ENVIRONMENT "${STEMSIM_TEST_ENV}" TIMEOUT ${timeout})
  if(_t_SKIP)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  if(_t_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
  if(_t_PROCESSORS)
    set_tests_properties(${name} PROPERTIES PROCESSORS ${_t_PROCESSORS})
  endif()
endfunction()

# stemsim_itest(NAME LABELS TIMEOUT [PROCESSORS] [SCRIPT name]): one ctest running the itest-style
# driver integration/<NAME or SCRIPT>.py on small.ini with stemsim and mpirun (exit 77: skipped).
function(stemsim_itest name labels timeout)
  cmake_parse_arguments(_t "" "SCRIPT" "" ${ARGN})
  set(_script ${name})
  if(_t_SCRIPT)
    set(_script ${_t_SCRIPT})
  endif()
  add_test(NAME ${name}
           COMMAND ${STEMSIM_PYTHON} ${_it_dir}/${_script}.py --stemsim $<TARGET_FILE:stemsim>
                   --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags} --config ${_it_dir}/small.ini --workdir ${_it_work})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT ${timeout})
  if(_t_UNPARSED_ARGUMENTS)
    set_tests_properties(${name} PROPERTIES PROCESSORS ${_t_UNPARSED_ARGUMENTS})
  endif()
endfunction()

# stemsim_mpi_case(NAME MODE [args...]): one ctest running mpi_case.py.
function(stemsim_mpi_case name mode)
  add_test(NAME ${name}
           COMMAND ${STEMSIM_PYTHON} ${_it_dir}/mpi_case.py ${mode} --name ${name}
                   --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                   --check ${CMAKE_CURRENT_SOURCE_DIR}/check_h5.py --workdir ${_it_work}
                   ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "mpi" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 240)
endfunction()

if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  set(_small --config ${_it_dir}/small.ini)
  set(_fp --set simulation.thermal=true --set simulation.frozen_phonons=3)
  # 1, 2 and 3 ranks agree (2D images, 3D rings, 4D cbed, DPC) to rel. RMS 1e-6.
  stemsim_mpi_case(mpi_ranks_multislice compare ${_small} --set simulation.algorithm=multislice
                   --run 1 --run 2 --run 3)
  stemsim_mpi_case(mpi_ranks_prism compare ${_small} --set simulation.algorithm=prism
                   --run 1 --run 2 --run 3)
  # Frozen phonons: automatic groups (2 ranks: 2 groups, 3 ranks: 3 groups)
  # against one group of all ranks (compute.fp_groups=1).
  stemsim_mpi_case(mpi_ranks_multislice_phonons compare ${_small} ${_fp} --set simulation.algorithm=multislice
                   --run 1 --run 2 --run 3 --run 2:compute.fp_groups=1 --run 3:compute.fp_groups=1)
  stemsim_mpi_case(mpi_ranks_prism_phonons compare ${_small} ${_fp} --set simulation.algorithm=prism
                   --run 1 --run 2 --run 3 --run 2:compute.fp_groups=1 --run 3:compute.fp_groups=1)
  # More ranks than work: a 1 x 2 scan (2 probes) and, for PRISM, a 2 mrad
  # aperture that holds a single plane wave (f = 1: a 15 Angstrom probe fits
  # no smaller window), on 3 ranks.
  stemsim_mpi_case(mpi_more_ranks_than_probes compare ${_small}
                   --set scan.x_start=2.0 --set scan.x_end=2.0 --set scan.y_start=2.0 --set scan.y_end=2.8
                   --run 1 --run 2 --run 3)
  stemsim_mpi_case(mpi_more_ranks_than_probes_phonons compare ${_small} ${_fp} --set simulation.algorithm=prism
                   --set scan.x_start=2.0 --set scan.x_end=2.0 --set scan.y_start=2.0 --set scan.y_end=2.8
                   --run 1 --run 3:compute.fp_groups=1 --run 3)
  stemsim_mpi_case(mpi_more_ranks_than_beams compare ${_small} --set simulation.algorithm=prism
                   --set probe.semiangle=2 --set simulation.interpolation_x=1 --set simulation.interpolation_y=1
                   --set scan.x_end=2.8 --set scan.y_end=2.0
                   --run 1 --run 2 --run 3)
  # Plane waves (hrtem: exit wave, image, frozen phonons over groups) and CBED: 1 rank = 2 = 3.
  # (hrtem has no default [images]: one named here, so the images are compared too)
  stemsim_mpi_case(mpi_ranks_hrtem compare ${_small} ${_fp} --set simulation.algorithm=hrtem
                   --set output.save_exit_wave=true --set probe.defocus=-50 --set hrtem.objective_aperture=30
                   --set "images.ADF=20 60"
                   --run 1 --run 2 --run 3 --run 3:compute.fp_groups=1)
  stemsim_mpi_case(mpi_ranks_cbed compare ${_small} ${_fp} --set simulation.algorithm=cbed
                   --run 1 --run 2 --run 3)
  # The source-size blur gathers each channel over the group: 1 rank = 3 ranks, one or three groups.
  stemsim_mpi_case(mpi_source_size compare ${_small} ${_fp} --set probe.source_size=1.2 --set detector.save_dpc=true
                   --set scan.x_start=1 --set scan.x_end=5 --set scan.y_start=1 --set scan.y_end=3.4
                   --run 1 --run 3:compute.fp_groups=1 --run 3)
  # Node-shared memory (one copy of the transmission functions and S-matrix per node,
  # exchanged between nodes only) gives the same bits as private copies and one rank:
  # real node, 2-rank "nodes" (debug.ranks_per_node: 2 + 2 and 2 + 1).
  foreach(_alg multislice prism)
    stemsim_mpi_case(mpi_node_shared_${_alg} compare ${_small} ${_fp} --set simulation.algorithm=${_alg}
                     --set compute.fp_groups=1 --tol 0
                     --run 1 --run 3 --run 3:compute.node_shared=false --run 4:debug.ranks_per_node=2
                     --run 3:debug.ranks_per_node=2)
    # two groups, each sharing its own windows (groups sum in another order than one rank: compared
    # with the same two groups on private copies)
    stemsim_mpi_case(mpi_node_shared_groups_${_alg} compare ${_small} ${_fp} --set simulation.algorithm=${_alg}
                     --set compute.fp_groups=2 --tol 0
                     --run 4:compute.node_shared=false --run 4 --run 4:debug.ranks_per_node=1)
  endforeach()
  # The frozen-phonon groups' sums added through the node's shared memory (node_reduce.c), in
  # pieces (a pipeline of many), over 2 emulated nodes (2 + 1: node sums, then MPI between the
  # nodes' first ranks), two cross communicators of 2, and the 4D patterns' blocks: the same
  # bits as MPI_Reduce (node_shared = false) and one rank.
  stemsim_mpi_case(mpi_node_sums compare ${_small} ${_fp} --set simulation.algorithm=prism --tol 0
                   --run 3:compute.node_shared=false --run 3 --run 3:debug.sum_piece_bytes=64
                   --run 3:debug.ranks_per_node=2,debug.sum_piece_bytes=32
                   --run 4:compute.fp_groups=2,debug.sum_piece_bytes=48
                   --run 3:detector.probe_block=2,debug.sum_piece_bytes=64 --run 1
                   --expect-log "1:the groups' through node-shared memory"
                   --expect-log "2:the groups' through node-shared memory"
                   --expect-log "3:the groups' through node-shared memory"
                   --expect-log "4:the groups' through node-shared memory")
  # CPU multislice probes from one queue shared by a node's ranks (compute.node_queue = auto,
  # the default): the same bits as one rank and as each rank its own probes; with detection
  # planes inside the sample (several results per unit), two groups of 2, and 2 + 1 emulated
  # nodes (the queue on the node of two, each rank its own on the node of one).
  stemsim_mpi_case(mpi_node_queue compare ${_small} ${_fp} --set simulation.algorithm=multislice
                   --set compute.fp_groups=1 --tol 0
                   --run 1 --run 3 --run 3:compute.node_queue=off --run 4:compute.fp_groups=2
                   --run 3:debug.ranks_per_node=2
                   --expect-log "1:probe queue: the 3 ranks of a node take its 6 probes"
                   --expect-log "3:probe queue: the 2 ranks of a node take its 6 probes"
                   --expect-log "4:probe queue: the 2 ranks of a node take its 4 probes")
  stemsim_mpi_case(mpi_node_queue_depths compare ${_small} ${_fp} --set simulation.algorithm=multislice
                   --set compute.fp_groups=1 --set output.depths=2.715 --tol 0 --run 1 --run 3
                   --expect-log "1:probe queue: the 3 ranks of a node take its 6 probes")
  # Measured FFTW plans shared through a wisdom file (created by the first run, read by
  # the others): 1 rank, 3 ranks and 2 threads give the same bits.
  foreach(_alg multislice prism)
    stemsim_mpi_case(mpi_fft_wisdom_${_alg} compare ${_small} ${_fp} --set simulation.algorithm=${_alg}
                     --set compute.fft_planning=measure --set compute.fft_wisdom=${_it_work}/mpi_fft_wisdom_${_alg}/fft.wisdom
                     --set compute.fp_groups=1 --tol 0 --run 1 --run 3 --run 1:compute.threads=2)
  endforeach()
  # Focal spread (temporal coherence): 1 rank = 3 ranks = 2 threads, and a vanishing
  # spread equals the coherent probe.
  foreach(_alg multislice prism)
    stemsim_mpi_case(mpi_focal_spread_${_alg} compare ${_small} --set simulation.algorithm=${_alg}
                     --set probe.defocus=-40 --set probe.cs=0.002 --set probe.focal_spread=50
                     --run 1 --run 3 --run 1:compute.threads=2)
    stemsim_mpi_case(focal_spread_coherent_limit_${_alg} compare ${_small} --set simulation.algorithm=${_alg}
                     --set probe.defocus=-40 --set probe.cs=0.002 --run 1 --run 1:probe.focal_spread=3e-4)
  endforeach()
  # A segmented detector (2 rings x 4 segments on ring edges, rotated): 1 rank = 3 ranks
  # = 2 threads, its segments sum to their rings (mpi_case.py), with DPC from segments.
  foreach(_alg multislice prism)
    stemsim_mpi_case(mpi_segments_${_alg} compare ${_small} --set simulation.algorithm=${_alg}
                     --set probe.defocus=-40 --set probe.astigmatism=20 --set detector.segments=4
                     --set detector.segment_inner=6 --set detector.segment_outer=40 --set detector.segment_rings=2
                     --set detector.segment_rotation=10 --run 1 --run 3 --run 1:compute.threads=2)
  endforeach()
  # 4D patterns cropped to 20 mrad and binned by 3, and PACBED: 1 rank = 3 ranks = 2 threads,
  # with frozen phonons in one and three groups; PACBED = the mean of the 4D patterns (mpi_case.py).
  foreach(_alg multislice prism)
    stemsim_mpi_case(mpi_pacbed_${_alg} compare ${_small} ${_fp} --set simulation.algorithm=${_alg}
                     --set detector.save_pacbed=true --set detector.cbed_max_angle=20 --set detector.cbed_bin=3
                     --run 1 --run 3 --run 3:compute.fp_groups=1 --run 1:compute.threads=2)
    # PACBED's sum is exact (src/detector.c): every dataset the same bits on 1 and 3 ranks and 2 threads
    stemsim_mpi_case(mpi_pacbed_bitwise_${_alg} compare ${_small} ${_fp} --set simulation.algorithm=${_alg}
                     --set detector.save_pacbed=true --set compute.fp_groups=1 --tol 0
                     --run 1 --run 3 --run 1:compute.threads=2)
  endforeach()
  # Threads: 1 and 2 worker threads per rank give the same result.
  stemsim_mpi_case(mpi_threads_multislice compare ${_small} ${_fp} --set simulation.algorithm=multislice
                   --run 1:compute.threads=1 --run 1:compute.threads=2 --run 2:compute.threads=2)
  stemsim_mpi_case(mpi_threads_prism compare ${_small} ${_fp} --set simulation.algorithm=prism
                   --run 1:compute.threads=1 --run 1:compute.threads=2 --run 2:compute.threads=2)
  # An injected failure on one rank ends the whole job within seconds and
  # leaves neither the output nor <file>.incomplete.
  stemsim_mpi_case(mpi_fail_rank1 fail ${_small} --ranks 2 --fail-rank 1 --max-seconds 60)
  stemsim_mpi_case(mpi_fail_rank0 fail ${_small} --ranks 2 --fail-rank 0 --max-seconds 60)
  stemsim_mpi_case(mpi_fail_rank1_prism_phonons fail ${_small} ${_fp} --set simulation.algorithm=prism
                   --ranks 3 --fail-rank 1 --max-seconds 60)
  # An allocation failure on rank 1 while the group broadcasts the
  # transmission functions: agreed before the broadcast, so the job ends at
  # once with rank 1's own message (it used to leave rank 0 waiting).
  stemsim_mpi_case(mpi_fail_rank1_transmission_broadcast fail ${_small} --ranks 2 --fault transmission:1
                   --expect "(rank 1)" --expect "injected failure at transmission" --max-seconds 10)
  stemsim_mpi_case(mpi_fail_rank2_transmission_broadcast_phonons fail ${_small} ${_fp} --set compute.fp_groups=1
                   --set simulation.algorithm=prism --ranks 3 --fault transmission:2 --expect "(rank 2)" --max-seconds 10)
endif()

# Hostile inputs (tests/bad_inputs/): one ctest per case. A case refused while the
# config and the model are read, before MPI matters, is marked parse-only ("; parse-only:"
# opening the second line of an .ini, "parse-only" on the second line of its NAME.expect;
# an .xyz case is, unless its NAME.expect says "whole-program") and is checked in-process
# by bad_input_parse (tests/integration/bad_input_parse.c); the others run stemsim whole
# on 1 and on 2 ranks (run_bad_inputs.sh). The glob and the cases' headers are read at
# configure time: a new or re-marked case re-runs cmake.
add_executable(bad_input_parse ${_it_dir}/bad_input_parse.c)
target_link_libraries(bad_input_parse PRIVATE stemsim_core)
file(MAKE_DIRECTORY ${_it_work}/bad_inputs)
file(GLOB _bad_cases CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/bad_inputs/*.ini
     ${CMAKE_CURRENT_SOURCE_DIR}/bad_inputs/*.xyz)
foreach(_case IN LISTS _bad_cases)
  get_filename_component(_file ${_case} NAME)
  get_filename_component(_dir ${_case} DIRECTORY)
  string(REGEX REPLACE "\\.[^.]*$" "" _name ${_file})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_case})
  set(_expect ${_dir}/${_name}.expect)
  if(EXISTS ${_expect})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_expect})
    file(STRINGS ${_expect} _marked LIMIT_COUNT 2 REGEX "^(parse-only|whole-program)")
  elseif(_file MATCHES "\\.ini$")
    file(STRINGS ${_case} _marked LIMIT_COUNT 1 REGEX "^; parse-only:")
  endif()
  if(_file MATCHES "\\.xyz$" AND NOT _marked STREQUAL "whole-program")
    set(_marked parse-only)
  endif()
  if(_marked MATCHES "parse-only")
    add_test(NAME bad_inputs_${_name}
             COMMAND bad_input_parse ${_case} ${CMAKE_SOURCE_DIR}/data ${_it_work}/bad_inputs/${_name})
    set_tests_properties(bad_inputs_${_name} PROPERTIES LABELS "bad_inputs;fast" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                         TIMEOUT 60)
    continue()
  endif()
  foreach(_np 1 2)
    add_test(NAME bad_inputs_${_name}_np${_np}
             COMMAND bash ${_it_dir}/run_bad_inputs.sh --stemsim $<TARGET_FILE:stemsim>
                     --mpiexec ${STEMSIM_MPIEXEC} --mpi-flags "${STEMSIM_MPI_FLAGS}" --ranks ${_np}
                     --timeout 60 --work ${_it_work}/bad_inputs ${_file})
    set_tests_properties(bad_inputs_${_name}_np${_np} PROPERTIES LABELS "bad_inputs" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                         TIMEOUT 120)
  endforeach()
endforeach()

# Fuzzing regressions: every input in fuzz/regressions/ and the seed corpora,
# replayed through the libFuzzer harnesses linked with a plain main
# (fuzz/replay_main.c), so a fixed crash stays fixed with any compiler.
set(_fuzz_dir ${CMAKE_SOURCE_DIR}/fuzz)
foreach(_h config xyz)
  add_executable(fuzz_${_h}_replay ${_fuzz_dir}/fuzz_${_h}.c ${_fuzz_dir}/replay_main.c)
  target_link_libraries(fuzz_${_h}_replay PRIVATE stemsim_core)
  add_test(NAME fuzz_replay_${_h}
           COMMAND fuzz_${_h}_replay ${_fuzz_dir}/regressions/${_h} ${_fuzz_dir}/corpus/${_h})
  set_tests_properties(fuzz_replay_${_h} PROPERTIES LABELS "fuzz;fast" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                       TIMEOUT 120)
endforeach()

# Fault tests (tests/integration/faults.py, LABELS faults): inputs never
# written, exclusive temporaries, no-replace publication, full disk, vanished
# directory, signals, memory limits, consistent ranks, dry-run verdicts.
set(STEMSIM_FAULT_SCENARIOS input_as_output stale_temporary publish_race special_output full_disk vanished_dir
    signals memory_rlimit memory_estimate one_message mpmd_mismatch dry_run odd_inputs accepted_inputs
    concurrent_singletons mpi_init_failure mpmd_modes dist_fft_few_rows bad_imports stored_keys result_check)
list(APPEND STEMSIM_FAULT_SCENARIOS full_disk_already full_disk_late emd_signals) # issue 27: full disks, EMD signals
list(APPEND STEMSIM_FAULT_SCENARIOS checkpoint_room reserve_estimate) # issue 37: the checkpoint's disk need, refused before computing
list(APPEND STEMSIM_FAULT_SCENARIOS long_output_path stored_types stale_reserve odd_files) # issue 38: MPI-IO's path limit; stored files' types, compression
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  foreach(_s IN LISTS STEMSIM_FAULT_SCENARIOS)
    foreach(_np 1 2)
      if(_s MATCHES "^(mpmd_mismatch|mpmd_modes|dist_fft_few_rows)$" AND _np EQUAL 1)
        continue() # needs two ranks
      endif()
      if(_s STREQUAL "mpi_init_failure" AND _np EQUAL 2)
        continue() # a one-process job's start-up
      endif()
      add_test(NAME faults_${_s}_np${_np}
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/faults.py ${_s} --ranks ${_np} --stemsim $<TARGET_FILE:stemsim>
                       --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags} --config ${_it_dir}/small.ini
                       --workdir ${_it_work}/faults)
      set_tests_properties(faults_${_s}_np${_np} PROPERTIES LABELS "faults" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                           SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
  endforeach()
endif()

# Campaign tests (tests/integration/campaign.py, LABELS campaign): [series] points equal
# single runs, kills and signals resume bit for bit, damaged or foreign checkpoints are
# refused, rank counts agree; multislice and PRISM. Checkpoint version 2 (the running sums
# in one state file): its size follows the points, not the units (state_size); random kill
# points resumed on random rank counts (random_kills), fp_groups (groups_bitwise) and
# checkpoint_interval (interval) keep every bit; a version 1 checkpoint is refused (old_version).
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  foreach(_alg multislice prism)
    foreach(_s equals_single kill_resume signals damaged owned usable changed_key fft_plans ranks build_ahead depths
               state_size random_kills groups_bitwise interval old_version foreign)
      add_test(NAME campaign_${_s}_${_alg}
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/campaign.py ${_s} --algorithm ${_alg}
                       --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                       --config ${_it_dir}/small.ini --workdir ${_it_work}/campaign)
      set_tests_properties(campaign_${_s}_${_alg} PROPERTIES LABELS "campaign" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                           SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
  endforeach()
  # hrtem's beam tilt series: every (tilt, beam tilt, defocus) point equals its single run
  stemsim_test(campaign_beam_tilts_hrtem "campaign;physics" 600 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/campaign.py beam_tilts --algorithm hrtem
                    --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                    --config ${_it_dir}/small.ini --workdir ${_it_work}/campaign)
endif()

# [scan] positions: shuffled grid positions from a file equal the grid run probe by probe;
# 1 rank = 3 ranks.
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  # Convergence advice: printed by --dry-run, stored as /advice (EMD: /stemsim/advice); --convergence.
  stemsim_test(mpi_advice "mpi" 240 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/advice.py
                    --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                    --config ${_it_dir}/small.ini --workdir ${_it_work})
  foreach(_alg multislice prism)
    add_test(NAME mpi_positions_${_alg}
             COMMAND ${STEMSIM_PYTHON} ${_it_dir}/positions.py --algorithm ${_alg}
                     --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                     --config ${_it_dir}/small.ini --workdir ${_it_work})
    set_tests_properties(mpi_positions_${_alg} PROPERTIES LABELS "mpi" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                         SKIP_RETURN_CODE 77 TIMEOUT 240)
  endforeach()
endif()

# 4D patterns streamed in blocks (tests/integration/stream4d.py): under a max_memory that
# leaves the patterns a quarter of their whole size, bitwise the whole run on 1 and 2 ranks,
# the peak within the limit and the estimate; a SIGTERM leaves nothing.
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  foreach(_alg multislice prism)
    add_test(NAME mpi_stream4d_${_alg}
             COMMAND ${STEMSIM_PYTHON} ${_it_dir}/stream4d.py --algorithm ${_alg}
                     --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                     --config ${_it_dir}/small.ini --workdir ${_it_work})
    set_tests_properties(mpi_stream4d_${_alg} PROPERTIES LABELS "mpi" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                         SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2)
  endforeach()
endif()

# [output] layout = emd for hrtem (a beam tilt x defocus series, the exit wave), cbed and
# [scan] positions on 2 ranks: every EMD dataset equals the native one (h5py); negative controls.
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  stemsim_test(mpi_emd_layouts "mpi" 240 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/emd_layouts.py
                    --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                    --config ${_it_dir}/small.ini --workdir ${_it_work})
endif()

# Standard errors over frozen-phonon configurations (tests/integration/errors.py): against
# the per-configuration values of runs with 1..4 configurations, 1 rank = 3 ranks bit for
# bit, unequal groups combined, the EMD layout, PRISM with a focal spread.
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  foreach(_s values ranks emd prism)
    add_test(NAME errors_${_s}
             COMMAND ${STEMSIM_PYTHON} ${_it_dir}/errors.py ${_s}
                     --stemsim $<TARGET_FILE:stemsim> --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags}
                     --config ${_it_dir}/small.ini --workdir ${_it_work})
    set_tests_properties(errors_${_s} PROPERTIES LABELS "mpi;physics" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                         SKIP_RETURN_CODE 77 TIMEOUT 240)
  endforeach()
endif()

# The microscope options against abTEM's stored numbers (tests/reference/abtem_options.json,
# made by benchmarks/validation/abtem_references.py): no abTEM at test time.
if(STEMSIM_PYTHON)
  stemsim_test(abtem_reference "physics" 600 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/abtem_reference.py --stemsim $<TARGET_FILE:stemsim>)
endif()

# Heavy atoms and thick crystals, reduced (benchmarks/validation/thick_au.py --small; the full
# case, with abTEM, makes benchmarks/results/thick_au.json): Au [001] HAADF at two grids agree
# to 3% and grow with depth.
if(STEMSIM_PYTHON)
  stemsim_test(thick_au_small "physics" 120
               COMMAND ${STEMSIM_PYTHON} ${CMAKE_SOURCE_DIR}/benchmarks/validation/thick_au.py --small --threads 1
                    --stemsim $<TARGET_FILE:stemsim>)
endif()

# The distributed FFT (hrtem, FFTW3-MPI slabs): 2, 3, 4 ranks and 2 groups of 2 equal one
# rank to 1e-5; the memory per rank falls, a limit one rank exceeds lets 4 ranks run.
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  stemsim_itest(mpi_distributed_fft "mpi" 300 SCRIPT dist_fft)
  # [series] and checkpointed campaigns on the distributed FFT: equal the serial campaign to
  # 1e-5 (2 ranks, 2 groups of 2, thinner last slices, a checkpointed plain run); kill and resume
  stemsim_itest(dist_campaign "campaign;mpi" 400)
endif()

# The FFTW wisdom cache: runs sharing it bit-identical (1, 2 runs, 3 ranks), off, damaged,
# foreign and linked files refused and kept, linked or open directories refused, concurrent
# first runs (tests/integration/fft_cache.py)
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  stemsim_itest(fft_cache "mpi" 300)
endif()

# Potentials: finite projection against a closed form, save_potential / potential_file
# (1 and 3 ranks, bit for bit, refusals), Lobato against Kirkland.
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  stemsim_itest(potentials "physics;mpi" 400)
  # The potential's grid independence: one U atom over sub-pixel offsets and against its
  # converged value, an Au layer on grids with atoms on and off pixels
  stemsim_itest(grid_independence "physics" 400)
  # PRISM's S-matrix stored and read back: beams = tilted plane waves, ranks agree, refusals
  stemsim_itest(stored_smatrix "physics;mpi" 400)
  # PRISM's S-matrix distributed by space: 1-4 ranks and emulated nodes bitwise, memory per rank as 1/ranks
  stemsim_itest(smatrix_tiles "mpi" 400 2)
  # 4D patterns on equal q steps (cbed_square_q) on a non-square cell: virtual images with one Q
  # pixel size within 1%, sums kept, 2 ranks = 1 rank, the EMD calibration's one step
  stemsim_itest(square_q "mpi;physics" 300 2)
  # The transmission functions built in shares by the ranks of a node, exchanged only between
  # nodes (issue 44): the ranks' own -v report of what they built and received by MPI
  stemsim_itest(transmission_shares "mpi" 300 2)
  # Stored potentials and S-matrices in a [series] campaign: one per tilt, read back bit for
  # bit, kill and resume, files of other tilts refused
  stemsim_itest(stored_campaign "campaign;physics;mpi" 400)
endif()

# cmake --install: the tree under a prefix, moved, finds its tables and runs the example.
add_test(NAME install COMMAND bash ${_it_dir}/install.sh ${CMAKE_BINARY_DIR} ${_it_work}/install)
set_tests_properties(install PROPERTIES LABELS "install" ENVIRONMENT "${STEMSIM_TEST_ENV}" TIMEOUT 300)

# [output] layout = emd read by py4DSTEM (its virtual environment from .ci/deps; skipped
# with a message when it is missing, after the h5py checks of the tree).
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  set(STEMSIM_PY4DSTEM_PYTHON "${CMAKE_SOURCE_DIR}/build-venv/bin/python" CACHE FILEPATH
      "Python with py4DSTEM for the interop test (.ci/deps makes it)")
  stemsim_test(interop_py4dstem "interop" 600 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/interop.py --stemsim $<TARGET_FILE:stemsim>
                    --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags} --config ${_it_dir}/small.ini --workdir ${_it_work}
                    --py4dstem-python ${STEMSIM_PY4DSTEM_PYTHON})
  # The same layout through py4DSTEM's and hyperspy's own loaders on a non-square cell: calibrated,
  # the scan as navigation, each image range its own signal (issue 39).
  stemsim_test(interop_emd_readers "interop" 600 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/emd_readers.py --stemsim $<TARGET_FILE:stemsim>
                    --mpiexec ${STEMSIM_MPIEXEC} --config ${_it_dir}/small.ini --workdir ${_it_work}
                    --python ${STEMSIM_PY4DSTEM_PYTHON})
endif()

# stemsim --from-prismatic: a Prismatic parameter file and command line converted.
if(STEMSIM_PYTHON)
  stemsim_test(from_prismatic "interop" 300
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/from_prismatic.py --stemsim $<TARGET_FILE:stemsim>
                    --params ${_it_dir}/prismatic_params.txt --xyz ${CMAKE_SOURCE_DIR}/data/Si100_unitcell.xyz
                    --workdir ${_it_work})
endif()

# The job scripts under a real one-node Slurm (installed and started by the test as root;
# skipped with the reason where that cannot be done).
if(STEMSIM_PYTHON)
  stemsim_test(slurm_jobscripts "slurm" 600 SKIP SERIAL
               COMMAND bash ${_it_dir}/slurm.sh $<TARGET_FILE:stemsim> ${_it_dir}/small.ini ${_it_work}/slurm ${STEMSIM_PYTHON})
endif()

# The Python package python/ (pip-installed from the tree into the build dir, build-venv/ itself
# untouched) and the notebooks/ executed with nbconvert, in build-venv/ from .ci/deps --interop
# (skipped, saying what is missing, without it).
if(STEMSIM_PYTHON)
  set(STEMSIM_VENV_PYTHON "${CMAKE_SOURCE_DIR}/build-venv/bin/python" CACHE FILEPATH
      "Python of build-venv/ (.ci/deps --interop) for the python_pkg and notebooks tests")
  set(_pp_mpi "")
  if(STEMSIM_MPIEXEC)
    set(_pp_mpi --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags})
  endif()
  stemsim_test(python_pkg "interop" 300 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/python_pkg.py --python ${STEMSIM_VENV_PYTHON}
                    --stemsim $<TARGET_FILE:stemsim> --source ${CMAKE_SOURCE_DIR} --workdir ${_it_work}/python_pkg_work
                    ${_pp_mpi})
endif()
if(STEMSIM_PYTHON)
  # Potentials from elsewhere: stemsim.write_potential's files run (a closed-form grating; a
  # round trip bit for bit; refusals).
  stemsim_test(imported_potential "interop" 300 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/imported_potential.py --python ${STEMSIM_VENV_PYTHON}
                    --stemsim $<TARGET_FILE:stemsim> --source ${CMAKE_SOURCE_DIR} --workdir ${_it_work}/imported_potential)
  stemsim_test(notebooks "interop" 600 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/notebooks.py --python ${STEMSIM_VENV_PYTHON}
                    --stemsim $<TARGET_FILE:stemsim> --source ${CMAKE_SOURCE_DIR} --workdir ${_it_work}/notebooks)
endif()

# The documentation (tests/integration/docs.sh, LABELS docs): docs/config.md generated from the
# key table is current; the MkDocs site builds with warnings as errors; the README is a front door.
add_test(NAME docs_config COMMAND bash ${_it_dir}/docs.sh config $<TARGET_FILE:stemsim>)
set_tests_properties(docs_config PROPERTIES LABELS "docs" ENVIRONMENT "${STEMSIM_TEST_ENV}" TIMEOUT 60)
add_test(NAME docs_site COMMAND bash ${_it_dir}/docs.sh site ${CMAKE_SOURCE_DIR}/build-venv/bin/mkdocs ${CMAKE_BINARY_DIR}/site
                                 $<TARGET_FILE:stemsim> ${CMAKE_SOURCE_DIR}/build-venv/bin/python)
set_tests_properties(docs_site PROPERTIES LABELS "docs" ENVIRONMENT "${STEMSIM_TEST_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 240)
# The house's size rules (tests/house.py, docs/developers.md "Style"): files, functions, test hooks,
# stacked comments.
add_test(NAME house COMMAND ${STEMSIM_PYTHON} ${CMAKE_SOURCE_DIR}/tests/house.py ${CMAKE_SOURCE_DIR})
set_tests_properties(house PROPERTIES LABELS "docs" TIMEOUT 30)
# Numbers a page quotes from a validation script's results files equal them (tests/docs_numbers.py).
add_test(NAME docs_numbers COMMAND ${STEMSIM_PYTHON} ${CMAKE_SOURCE_DIR}/tests/docs_numbers.py ${CMAKE_SOURCE_DIR})
set_tests_properties(docs_numbers PROPERTIES LABELS "docs" TIMEOUT 30)
# The source's levels (tests/levels.sh, docs/developers.md "The levels"): which directory may
# include which, no include cycles between modules, src/ headers declare only src/ functions.
add_test(NAME levels COMMAND bash ${CMAKE_SOURCE_DIR}/tests/levels.sh)
set_tests_properties(levels PROPERTIES LABELS "unit;docs" TIMEOUT 30)
# The style: every tracked C/CUDA source formatted as .clang-format says (clang-format 14).
add_test(NAME format COMMAND bash ${CMAKE_SOURCE_DIR}/tests/format.sh)
set_tests_properties(format PROPERTIES LABELS "docs" SKIP_RETURN_CODE 77 TIMEOUT 120)
# Prismatic's own parameter files (tests/reference/prismatic/, written by Prismatic 2.0 itself)
# converted with --from-prismatic and run; stemsim's rings against Prismatic's stored numbers
# within measured bands. Needs the converter of issue 30 item 2 (nan = unset, '0 0' windows,
# relative -i against the parameter file, the 3D potential default).
if(STEMSIM_PYTHON)
  stemsim_test(prismatic_side_by_side "interop" 900 SKIP
               COMMAND ${STEMSIM_PYTHON} ${_it_dir}/prismatic_side_by_side.py --stemsim $<TARGET_FILE:stemsim>
                    --reference ${CMAKE_SOURCE_DIR}/tests/reference/prismatic --workdir ${_it_work})
endif()

# The composition matrix (tests/composition/matrix.py, LABELS composition): every algorithm with
# every feature, one ctest per feature; a cell that runs equals the same points computed singly
# (bit for bit on the CPU unless its feature names a tolerance), a refused one exits 3 with its
# reason. The README's "What combines with what" table is generated from the same cells.
set(_composition ${CMAKE_CURRENT_SOURCE_DIR}/composition/matrix.py)
if(STEMSIM_PYTHON AND STEMSIM_MPIEXEC)
  foreach(_f tilt_series defocus_series depths resume ranks distributed_fft emd positions potential smatrix
             focal_spread source_size series_potential series_smatrix series_distributed_fft
             depths_distributed_fft potential_distributed_fft)
    add_test(NAME composition_${_f}
             COMMAND ${STEMSIM_PYTHON} ${_composition} run ${_f} --stemsim $<TARGET_FILE:stemsim>
                     --mpiexec ${STEMSIM_MPIEXEC} ${_it_mpi_flags} --config ${_it_dir}/small.ini --workdir ${_it_work})
    set_tests_properties(composition_${_f} PROPERTIES LABELS "composition" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                         SKIP_RETURN_CODE 77 TIMEOUT 240)
  endforeach()
endif()
if(STEMSIM_PYTHON)
  add_test(NAME composition_selftest COMMAND ${STEMSIM_PYTHON} ${_composition} --self-test)
  add_test(NAME composition_readme COMMAND ${STEMSIM_PYTHON} ${_composition} --check-readme ${CMAKE_SOURCE_DIR}/README.md)
  set_tests_properties(composition_selftest composition_readme PROPERTIES LABELS "composition;docs" TIMEOUT 30)
endif()

# benchmarks/README.md's summary table is generated from benchmarks/results/summary.csv
if(STEMSIM_PYTHON)
  add_test(NAME benchmarks_summary COMMAND ${STEMSIM_PYTHON} ${CMAKE_SOURCE_DIR}/benchmarks/summary.py --check-readme)
  set_tests_properties(benchmarks_summary PROPERTIES LABELS "docs" TIMEOUT 30)
endif()
