comet_add_test(test_probe SOURCES probe/test_probe.c LIBS comet_probe comet_util LABELS probe sanitize)
