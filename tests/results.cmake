# The results library: one typed record read, validated and written in one place.
# comet_kernels only for its header (the micro-tile table is checked against it).
comet_add_test(test_results SOURCES results/test_results.c LIBS comet_results comet_kernels
               LABELS results sanitize)
