comet_add_test(test_system SOURCES system/test_system.c LIBS comet_system comet_model
               LABELS system model TIMEOUT 600)
comet_add_test(test_published SOURCES system/test_published.c LIBS comet_system comet_model
               LABELS system model TIMEOUT 600)
