# Replay the committed fuzz corpora (and any regression inputs) in the normal build.
foreach(t doc hw record shape)
  string(TOUPPER ${t} T)
  add_executable(fuzz_replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/fuzz_targets.c)
  target_compile_definitions(fuzz_replay_${t} PRIVATE FUZZ_${T}=1 FUZZ_REPLAY=1)
  target_link_libraries(fuzz_replay_${t} PRIVATE comet_model comet_bench comet_probe comet_util)
  add_test(NAME fuzz_replay_${t} COMMAND fuzz_replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${t})
  set_tests_properties(fuzz_replay_${t} PROPERTIES LABELS "fuzz;sanitize" TIMEOUT 120)
endforeach()
