#include "comet_kernels.h"

const char *comet_kernels_version(void) { return COMET_VERSION; }
