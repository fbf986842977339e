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
