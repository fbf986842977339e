#include "comet_reports.h"

const char *comet_reports_version(void) { return COMET_VERSION; }
