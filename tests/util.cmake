comet_add_test(test_util SOURCES util/test_util.c LIBS comet_util LABELS util sanitize)
