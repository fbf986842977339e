/* Private to comet_model: what the description's loader (hw.c) asks of the
 * calibrated links (links.c). */
#ifndef COMET_MODEL_LINKS_INTERNAL_H
#define COMET_MODEL_LINKS_INTERNAL_H

#include "comet_model.h"

#include <jansson.h>

/* The machine's own links from a profile's calibration block: shared
 * memory's fits when there are any, else every fit. */
void comet_model__links_from_calibration(const json_t *cal, comet_model_links *l);

#endif
