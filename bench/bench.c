#include "comet_bench.h"

const char *comet_bench_version(void) { return COMET_VERSION; }
