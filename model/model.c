#include "comet_model.h"

const char *comet_model_version(void) { return COMET_VERSION; }
