comet_add_test(test_coll SOURCES coll/test_coll.c LIBS PkgConfig::JANSSON TIMEOUT 300 LABELS bench mpi)
add_dependencies(test_coll comet)
# the links over namespaces (tbf veth, delay line): about a minute, label
# long (CI runs it); the whole scale-out job over each link (5-12 minutes
# apiece) under the label scaleout: `scripts/setup.sh test-scaleout`, kept
# out of CI's 15 minutes
comet_add_test(test_netns SOURCES coll/test_netns.c LIBS PkgConfig::JANSSON TIMEOUT 600 LABELS bench mpi netns long)
add_test(NAME test_netns_scale_out COMMAND test_netns scale-out)
add_test(NAME test_netns_scale_out_delay COMMAND test_netns scale-out-delay)
# whole steps (comet bench llm, validate --system) over the delay line
add_test(NAME test_netns_scale_out_steps COMMAND test_netns scale-out-steps)
foreach(t test_netns test_netns_scale_out test_netns_scale_out_delay test_netns_scale_out_steps)
  set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
    "COMET_SOURCE_DIR=${PROJECT_SOURCE_DIR};COMET_BINARY=$<TARGET_FILE:comet>;OPENBLAS_NUM_THREADS=1;COMET_DELAYLINE=$<TARGET_FILE:comet-delayline>")
endforeach()
set_tests_properties(test_netns_scale_out test_netns_scale_out_delay test_netns_scale_out_steps PROPERTIES
  TIMEOUT 1800 LABELS "bench;mpi;netns;long;scaleout")
add_dependencies(test_netns comet comet-delayline)
# the MPI workers' ending (bench/mpi_end.c) over UCX's TCP on the loopback:
# a rank late into MPI_Finalize, with and without the ranks' barrier first
# (10-15 s: label long)
comet_add_test(test_finalize SOURCES coll/test_finalize.c LIBS PkgConfig::JANSSON LABELS bench mpi long)
add_dependencies(test_finalize comet)
