# GPU engine tests; they need the CUDA build. gpu_tiles_check runs on the host
# (index arithmetic of the PRISM output tiles); gpu_vs_cpu skips (77) without a GPU.
if(TARGET stemsim_gpu)
  enable_language(CXX)
  add_executable(gpu_tiles_check ${CMAKE_CURRENT_SOURCE_DIR}/gpu/tiles_check.cpp)
  target_compile_features(gpu_tiles_check PRIVATE cxx_std_17)
  target_link_libraries(gpu_tiles_check PRIVATE stemsim_gpu) # which links the core

  add_test(NAME gpu_tiles_check COMMAND gpu_tiles_check)
  set_tests_properties(gpu_tiles_check PROPERTIES LABELS "gpu")
  # each kernel against its plain-C reference, and timed (skips without a GPU)
  add_executable(gpu_kernel_check ${CMAKE_CURRENT_SOURCE_DIR}/gpu/kernel_check.cu)
  target_include_directories(gpu_kernel_check PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(gpu_kernel_check PRIVATE stemsim_gpu)
  add_test(NAME gpu_kernel_check COMMAND gpu_kernel_check)
  set_tests_properties(gpu_kernel_check PROPERTIES LABELS "gpu" ENVIRONMENT "${STEMSIM_TEST_ENV}" SKIP_RETURN_CODE 77)
  # the GPU engine's transmission step against the CPU's, and timed (skips without a GPU)
  add_executable(gpu_transmission_check ${CMAKE_CURRENT_SOURCE_DIR}/gpu/transmission_check.cu)
  target_include_directories(gpu_transmission_check PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(gpu_transmission_check PRIVATE stemsim_gpu)
  add_test(NAME gpu_transmission_check COMMAND gpu_transmission_check)
  set_tests_properties(gpu_transmission_check PROPERTIES LABELS "gpu" ENVIRONMENT "${STEMSIM_TEST_ENV}" SKIP_RETURN_CODE 77)
  add_test(NAME gpu_vs_cpu
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_vs_cpu.sh $<TARGET_FILE:stemsim>
                   ${CMAKE_CURRENT_SOURCE_DIR}/check_h5.py ${STEMSIM_PYTHON}
                   ${CMAKE_SOURCE_DIR}/benchmarks/cases/gpu_check_si.ini ${CMAKE_CURRENT_BINARY_DIR}/gpu_work)
  set_tests_properties(gpu_vs_cpu PROPERTIES LABELS "gpu" ENVIRONMENT "${STEMSIM_TEST_ENV}"
                       SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
