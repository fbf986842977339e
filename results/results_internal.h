/* Internal to comet_results: what record.c and io.c share (not installed). */
#ifndef COMET_RESULTS_INTERNAL_H
#define COMET_RESULTS_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

/* Brings rec to COMET_RESULTS_SCHEMA in place (v1 -> v2: attention tiles
 * renamed). @return 0 current (or no schema: the check reports that), 1
 * converted, -EINVAL newer or unknown (why says which). */
int comet_results__upgrade(json_t *rec, char *why, size_t whylen);

#endif
