/* Private to comet_model: what the distributed-kernel predictions
 * (dist.c, moe.c) and their explanation (explain.c) share about p ranks running as processes of
 * this machine over one link. */
#ifndef COMET_MODEL_DIST_INTERNAL_H
#define COMET_MODEL_DIST_INTERNAL_H

#include "comet_model.h"

#include <stddef.h>

/* One rank alone on its `threads` cores, the machine's memory bandwidth
 * shared by the p ranks. */
void comet_model__dist_rank_hw(const comet_model_hw *hw, int p, int threads, comet_model_hw *one);

/* The share of a core each of a rank's threads keeps while p ranks of
 * `threads` threads run at once, relative to the rank running alone (whose
 * T-thread rates the rank's own model already uses):
 * comet_model_gms_core_share(p x threads) / comet_model_gms_core_share(threads). */
double comet_model__dist_share(const comet_model_hw *hw, int p, int threads);

/* The p ranks as a one-level system over the link `link` names (NULL or
 * "": the description's own links); its name copied to name[len].
 * @return 0, or -ENOENT when the description has no fit of that link. */
int comet_model__dist_net(
    const comet_model_hw *hw, int p, const char *link, comet_model_hw *net, char *name, size_t len);

/* The rank's own slice, run as the single-process kernels run it: one BLAS
 * GEMM, then row passes (the fused distributed kernels too: their
 * statistics need the whole slice before the first collective): the rank's
 * description in *one, its problem in *sl, its mapping in *mp.
 * @return 0, or -EINVAL when the slice is empty. */
int comet_model__dist_slice(const comet_model_hw *hw, const comet_model_problem *pb, int threads,
    int p, comet_model_hw *one, comet_model_problem *sl, comet_model_mapping *mp);

/* The unfused baselines' staging of whole rows from the gathered slices
 * (kernels/dist.c), in cycles of the rank's description `one`. */
double comet_model__dist_stage_cycles(
    const comet_model_hw *one, const comet_model_problem *pb, double P);

#endif
