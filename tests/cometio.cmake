comet_add_test(test_cometio_read SOURCES cometio/test_cometio_read.c LIBS comet_cometio
               LABELS cometio model sanitize)
comet_add_test(test_cometio_eval SOURCES cometio/test_cometio_eval.c LIBS comet_cometio
               LABELS cometio model sanitize)
comet_add_test(test_cometio_translate SOURCES cometio/test_cometio_translate.c LIBS comet_cometio comet_model
               LABELS cometio model sanitize)
