comet_add_test(test_coll SOURCES coll/test_coll.c LIBS PkgConfig::JANSSON TIMEOUT 300 LABELS bench mpi)
add_dependencies(test_coll comet)
