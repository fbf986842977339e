/* cometio's private declarations shared between its files. */
#ifndef COMETIO_INTERNAL_H
#define COMETIO_INTERNAL_H

#include "comet_cometio.h"

/* COMET's router energy model (orion_power_model.cpp) on a mesh network:
 * the marginal pJ per byte of a tile moved across `instances` nodes (a
 * broadcast, as COMET charges a fill), 0 where its hop table has no entry */
double comet_cometio_noc_pj_per_byte(const comet_cometio_net *n, int instances);

#endif
