# bench: statistics, idle gate parser, sampling, records round trip and
# damage handling, and a tiny end-to-end `comet bench memory` run.
comet_add_test(test_bench_stats SOURCES bench/test_bench_stats.c LIBS comet_bench comet_probe comet_kernels LABELS bench)
comet_add_test(test_bench_shapes SOURCES bench/test_bench_shapes.c LIBS comet_bench comet_probe comet_kernels LABELS bench)
comet_add_test(test_bench_records SOURCES bench/test_bench_records.c LIBS comet_bench comet_probe comet_kernels LABELS bench)
comet_add_test(test_bench_gms SOURCES bench/test_bench_gms.c LIBS comet_bench comet_probe comet_kernels LABELS bench)
comet_add_test(test_bench_cli SOURCES bench/test_bench_cli.c LIBS comet_bench comet_probe comet_kernels LABELS bench
               TIMEOUT 120)
add_dependencies(test_bench_cli comet)
# Hand-run check of the harness against a bare cblas loop (not a test).
add_executable(perf_sgemm_check bench/perf_sgemm_check.c)
target_link_libraries(perf_sgemm_check PRIVATE comet_bench comet_util PkgConfig::OPENBLAS)
# The decoder stack of `comet bench llm`: finite differences of the backward
# (one rank) and every tp x dp grid against the single-rank step (2 and 3
# ranks: uneven head and FFN splits).
# bench llm's launch options (--ranks, --launcher-args) end to end: the
# two-rank configurations the scale-out job runs across a link, here on shm.
comet_add_test(test_llm_launch SOURCES bench/test_llm_launch.c LIBS PkgConfig::JANSSON TIMEOUT 300
               LABELS bench mpi)
add_dependencies(test_llm_launch comet)
comet_add_test(test_llm SOURCES bench/test_llm.c LIBS comet_bench comet_kernels RANKS 2 TIMEOUT 180
               LABELS bench mpi)
target_link_libraries(test_llm PRIVATE m)
add_test(NAME test_llm_1 COMMAND ${MPIEXEC_EXECUTABLE} -n 1 $<TARGET_FILE:test_llm>)
set_tests_properties(test_llm_1 PROPERTIES TIMEOUT 180 LABELS "bench;mpi"
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
add_test(NAME test_llm_3 COMMAND ${MPIEXEC_EXECUTABLE} -n 3 $<TARGET_FILE:test_llm>)
# (3 busy-polling ranks on 2 vCPUs: 100 s beside other tenants' builds, 280 s seen)
set_tests_properties(test_llm_3 PROPERTIES TIMEOUT 600 LABELS "bench;mpi"
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
