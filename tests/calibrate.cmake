comet_add_test(test_calibrate_fits SOURCES calibrate/test_fits.c LIBS comet_calibrate
               LABELS calibrate sanitize)
comet_add_test(test_calibrate_profile SOURCES calibrate/test_profile.c LIBS comet_calibrate comet_bench
               TIMEOUT 120 LABELS calibrate)
