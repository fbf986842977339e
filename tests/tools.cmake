comet_add_test(test_delayline SOURCES tools/test_delayline.c LIBS comet_delayline ${COMET_LIBM} LABELS tools)
set_property(TEST test_delayline APPEND PROPERTY ENVIRONMENT
  "COMET_DELAYLINE=$<TARGET_FILE:comet-delayline>")
add_dependencies(test_delayline comet-delayline)
# the program's own ends between two namespaces (-t, -P, SIGTERM) and
# netns-veth.sh's watch over it: root, a few seconds, label long
add_test(NAME test_delayline_netns COMMAND test_delayline netns)
set_tests_properties(test_delayline_netns PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE TIMEOUT 600
  LABELS "tools;netns;long")
set_property(TEST test_delayline_netns APPEND PROPERTY ENVIRONMENT
  "COMET_DELAYLINE=$<TARGET_FILE:comet-delayline>;COMET_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
