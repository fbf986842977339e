comet_add_test(test_calibrate SOURCES calibrate/test_calibrate.c LIBS comet_calibrate LABELS calibrate sanitize)
