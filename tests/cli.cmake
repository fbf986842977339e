comet_add_test(test_cli SOURCES cli/test_cli.c LIBS comet_util LABELS cli)
add_dependencies(test_cli comet)
