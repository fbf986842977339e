/* The model tests' calibrated CPU description: the report fixture's
 * profile (a real calibration of an earlier machine). */
#ifndef MFIXTURE_H
#define MFIXTURE_H
#include "comet_model.h"

#include <stdio.h>
#include <stdlib.h>

/* Loads it into *hw: 0, or the loader's negative errno. */
static inline int mfix_profile(comet_model_hw *hw)
{
    char path[600], err[256];
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    int rc = comet_model_hw_load(path, hw, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    return rc;
}
#endif
