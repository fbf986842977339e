comet_add_test(test_kernels SOURCES kernels/test_kernels.c LIBS comet_kernels LABELS kernels sanitize)
target_link_libraries(test_kernels PRIVATE m)
comet_add_test(test_kernels_dist SOURCES kernels/test_kernels_dist.c LIBS comet_kernels RANKS 2
               TIMEOUT 120 LABELS kernels mpi)
target_link_libraries(test_kernels_dist PRIVATE m)
# Side-by-side performance driver (not a test): build/tests/kernel_perf [threads] [reps]
add_executable(kernel_perf perf/kernel_perf.c)
target_link_libraries(kernel_perf PRIVATE comet_kernels m)
