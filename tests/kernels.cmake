comet_add_test(test_kernels SOURCES kernels/test_kernels.c LIBS comet_kernels LABELS kernels sanitize)
find_package(OpenMP REQUIRED COMPONENTS C)
# OpenMP: a kernel called inside the test's own parallel region
target_link_libraries(test_kernels PRIVATE m OpenMP::OpenMP_C)
comet_add_test(test_kernels_dist SOURCES kernels/test_kernels_dist.c LIBS comet_kernels comet_model RANKS 2
               TIMEOUT 120 LABELS kernels mpi)
target_link_libraries(test_kernels_dist PRIVATE m)
# Side-by-side performance driver (not a test): build/tests/kernel_perf [threads] [reps]
add_executable(kernel_perf perf/kernel_perf.c)
target_link_libraries(kernel_perf PRIVATE comet_kernels comet_util OpenMP::OpenMP_C PkgConfig::OPENBLAS m)
# oneDNN side-by-side (not a test), only where libdnnl-dev is installed:
# build/tests/dnnl_compare [threads] [reps] [M] [N]
find_path(COMET_DNNL_INCLUDE dnnl.h)
find_library(COMET_DNNL_LIB dnnl)
if(COMET_DNNL_INCLUDE AND COMET_DNNL_LIB)
  add_executable(dnnl_compare perf/dnnl_compare.c)
  target_include_directories(dnnl_compare PRIVATE ${COMET_DNNL_INCLUDE})
  target_link_libraries(dnnl_compare PRIVATE comet_kernels comet_util OpenMP::OpenMP_C PkgConfig::OPENBLAS ${COMET_DNNL_LIB} m)
endif()
# The whole suite on every ISA path below the detected one (test_kernels
# runs the detected path): COMET_KERNELS_ISA selects it; a path the CPU
# cannot run leaves the detected one (the test then repeats it).
foreach(isa avx2 portable)
  add_test(NAME test_kernels_${isa} COMMAND test_kernels)
  set_tests_properties(test_kernels_${isa} PROPERTIES TIMEOUT 300 LABELS kernels
    ENVIRONMENT "COMET_KERNELS_ISA=${isa};OPENBLAS_NUM_THREADS=1")
  add_test(NAME test_gms_${isa} COMMAND test_gms)
  set_tests_properties(test_gms_${isa} PROPERTIES TIMEOUT 120 LABELS kernels
    ENVIRONMENT "COMET_KERNELS_ISA=${isa}")
endforeach()
# Gather-GEMM-scatter: four dataflows, generators, reader.
comet_add_test(test_gms SOURCES kernels/test_gms.c LIBS comet_kernels LABELS kernels sanitize)
target_link_libraries(test_gms PRIVATE m)
# Three ranks: slices that no power of two divides (MPICH aborted here once).
add_test(NAME test_kernels_dist_3 COMMAND ${MPIEXEC_EXECUTABLE} -n 3 $<TARGET_FILE:test_kernels_dist>)
set_tests_properties(test_kernels_dist_3 PROPERTIES TIMEOUT 120 LABELS "kernels;mpi"
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
# Distributed MoE (expert parallelism): 2 ranks (3 experts on 2: uneven),
# and 3 ranks (2 experts on 3: a rank without experts).
comet_add_test(test_moe_dist SOURCES kernels/test_moe_dist.c LIBS comet_kernels comet_model RANKS 2
               TIMEOUT 120 LABELS kernels mpi)
target_link_libraries(test_moe_dist PRIVATE m)
add_test(NAME test_moe_dist_3 COMMAND ${MPIEXEC_EXECUTABLE} -n 3 $<TARGET_FILE:test_moe_dist>)
set_tests_properties(test_moe_dist_3 PROPERTIES TIMEOUT 120 LABELS "kernels;mpi"
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
