#include "comet_calibrate.h"

const char *comet_calibrate_version(void) { return COMET_VERSION; }
