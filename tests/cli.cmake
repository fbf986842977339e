comet_add_test(test_cli SOURCES cli/test_cli.c LIBS comet_util LABELS cli)
add_dependencies(test_cli comet)
comet_add_test(test_whatif SOURCES cli/test_whatif.c LIBS PkgConfig::JANSSON LABELS cli)
add_dependencies(test_whatif comet)
