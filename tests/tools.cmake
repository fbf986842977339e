comet_add_test(test_delayline SOURCES tools/test_delayline.c LIBS comet_delayline ${COMET_LIBM} LABELS tools)
set_property(TEST test_delayline APPEND PROPERTY ENVIRONMENT
  "COMET_DELAYLINE=$<TARGET_FILE:comet-delayline>")
add_dependencies(test_delayline comet-delayline)
