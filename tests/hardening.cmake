# Hardening: fuzz-corpus replay, regression inputs, bad-input and fault tests.
#
# Each libFuzzer target (fuzz/fuzz_targets.c) is also built as a plain driver
# whose main() feeds every file of fuzz/corpus/<target>/ (valid examples and
# the inputs of fixed findings) to LLVMFuzzerTestOneInput, so the normal gcc
# build (and the ASan+UBSan build) replays them under ctest (label "fuzz").
set(COMET_FUZZ_TARGETS doc hw record results shape shapeset overrides mapping workload llm cuts)
foreach(t ${COMET_FUZZ_TARGETS})
  string(TOUPPER ${t} T)
  add_executable(fuzz_replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/fuzz_targets.c)
  target_compile_definitions(fuzz_replay_${t} PRIVATE FUZZ_${T}=1 FUZZ_REPLAY=1)
  target_link_libraries(fuzz_replay_${t} PRIVATE comet_system comet_calibrate comet_model comet_bench comet_probe
                        comet_util m)
  add_test(NAME fuzz_replay_${t} COMMAND fuzz_replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${t})
  set_tests_properties(fuzz_replay_${t} PROPERTIES LABELS "fuzz;hardening;sanitize" TIMEOUT 120
    ENVIRONMENT "COMET_SOURCE_DIR=${PROJECT_SOURCE_DIR};OPENBLAS_NUM_THREADS=1")
endforeach()

# Full disk: writers pointed at a tiny tmpfs in a private mount namespace
# (skips with 77 when not root or when the mount cannot be made).
comet_add_test(test_fulldisk SOURCES hardening/test_fulldisk.c
  LIBS comet_bench comet_util LABELS hardening TIMEOUT 300)
set_tests_properties(test_fulldisk PROPERTIES SKIP_RETURN_CODE 77)
target_compile_definitions(test_fulldisk PRIVATE COMET_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# Results from another machine or an older schema (library and CLI).
comet_add_test(test_foreign SOURCES hardening/test_foreign.c
  LIBS comet_bench comet_util LABELS hardening sanitize TIMEOUT 300)
target_compile_definitions(test_foreign PRIVATE COMET_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# valgrind memcheck over the CLI paths (scripts/memcheck.sh): every
# subcommand on small inputs and the error paths; skips (77) without valgrind.
add_test(NAME memcheck_cli COMMAND ${PROJECT_SOURCE_DIR}/scripts/memcheck.sh ${CMAKE_BINARY_DIR})
set_tests_properties(memcheck_cli PROPERTIES LABELS "hardening;memcheck;long" TIMEOUT 600
  SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
# The same under an environment that pins OpenBLAS's core type (as some
# machines set): comet must not re-execute itself out of valgrind.
add_test(NAME memcheck_cli_blaspin COMMAND ${PROJECT_SOURCE_DIR}/scripts/memcheck.sh ${CMAKE_BINARY_DIR})
set_tests_properties(memcheck_cli_blaspin PROPERTIES LABELS "hardening;memcheck;long" TIMEOUT 600
  SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  ENVIRONMENT "OPENBLAS_CORETYPE=Haswell;OPENBLAS_L2_SIZE=1048576;COMET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
# Fault injection on real processes: kill -9 / SIGINT of calibrate and run at
# several points, concurrent comets on one folder, a read-only folder.
add_test(NAME faults COMMAND ${PROJECT_SOURCE_DIR}/tests/hardening/faults_test.sh
  $<TARGET_FILE:comet> ${PROJECT_SOURCE_DIR})
set_tests_properties(faults PROPERTIES LABELS "hardening;faults;long" TIMEOUT 900 RUN_SERIAL TRUE
  ENVIRONMENT "COMET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
