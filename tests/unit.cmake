# Unit and physics tests: one small C executable per topic, linked against
# stemsim_core, each compared against physics or tabulated values (never
# against the code's own output for the same computation). They call the
# library directly (config, plan, engines through stem_result) on one rank
# and use no MPI function, so none calls MPI_Init. Run with
#   ctest -L unit --output-on-failure
# Shared helpers: unit/check.h (CHECK macros), unit/sim.h (set-up and runs).
set(STEMSIM_UNIT_TESTS
  physics         # wavelength, sigma, K0, Kirkland closed form and its integral
  potential       # lookup table and slices vs closed form, cutoff, integral, wrap, transmission
  probe           # aberration phase, aperture, normalisation, shifted probes, vacuum propagation
  phonons         # frozen-phonon displacements: reproducibility, statistics
  config          # config.ini / --set / XYZ parsing and messages
  conservation    # intensity conservation, bright-field disk (multislice, PRISM)
  prism           # PRISM f = 1 == multislice, window wrap-around at the cell edge
  prism_tolerance # PRISM f = 2, 4 against multislice (unit/PRISM_TOLERANCES.md)
  geometry        # tiling and tilt-series rotations against hand-written rotation matrices
  safety          # config syntax, non-blocking inputs, bad tables, duplicate atoms, memory estimate, cgroups, PRISM window
  coherence       # source-size blur against a direct 2D convolution, periodic and mirrored edges
  depths          # detection planes inside the sample vs separately built thinner samples (multislice, PRISM)
  hrtem           # plane-wave exit wave and HRTEM image against closed forms (vacuum, perfect lens)
  cross_section   # single atoms' detector cross-sections vs the thin phase object and first Born, on and off pixel
  slices          # slices that fit the cell, a thinner last slice against Fresnel propagation in closed form
  errors          # standard errors over configurations: Welford, unequal groups, DPC ratio, against two-pass formulas
  pacbed          # PACBED's sum over probes exact: the same bits in any order (threads, ranks)
  advice          # convergence advice: each check tripped and passed, focal_points = auto, error-bar lines
)
# Seconds each, under the sanitizers too (the others take minutes there): also label
# fast, the set .ci/run checks under AddressSanitizer (.ci/sanitize fast).
set(STEMSIM_UNIT_FAST physics probe phonons config geometry safety coherence depths hrtem errors pacbed advice)
foreach(t IN LISTS STEMSIM_UNIT_TESTS)
  add_executable(unit_${t} ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_${t}.c)
  target_link_libraries(unit_${t} PRIVATE stemsim_core)
  target_compile_definitions(unit_${t} PRIVATE STEMSIM_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/data")
  add_test(NAME unit_${t} COMMAND unit_${t})
  set(_labels unit)
  if(t IN_LIST STEMSIM_UNIT_FAST)
    list(APPEND _labels fast)
  endif()
  set_tests_properties(unit_${t} PROPERTIES ENVIRONMENT "${STEMSIM_TEST_ENV}" LABELS "${_labels}" TIMEOUT 120)
endforeach()
