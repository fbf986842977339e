/* A calibrated CPU profile as the system model's chips: one chip is one
 * rank of `threads` cores of this machine, the chips joined by the link the
 * profile's fits were measured on (validate --system, predict --link). */
#include "comet_system.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The share of a lone core each of a rank's `threads` cores delivers while
 * `ranks` ranks of one machine compute at once: the measured GEMM grid's
 * per-core rate at ranks x threads busy cores against at threads (the
 * distributed-kernel model's share, model/dist.c), and the machine's cores
 * time-shared when the ranks' threads outnumber them. */
static double host_share(const comet_model_hw *profile, int threads, int ranks)
{
    const double busy = (double)threads * ranks, cores = profile->cores > 0 ? profile->cores : busy;
    const double lone = comet_model_gms_core_share(profile, threads),
                 all = comet_model_gms_core_share(profile, fmin(busy, cores));
    const double share = lone > 0 && all > 0 ? all / lone : 1;
    return fmin(1, share) * fmin(1, cores / busy);
}

int comet_system_from_profile(const comet_model_hw *profile, comet_model_dtype dtype, int threads,
    int chips, int host_ranks, const char *link, comet_system *sys, char *err, size_t errlen)
{
    comet_model_hw sc;
    memset(sys, 0, sizeof *sys);
    if (strcmp(profile->kind, "cpu") || profile->clusters != 1 || profile->n_outer != 0)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: not a calibrated single-node CPU profile (a rank of this machine is the chip)",
            profile->name);
    if (threads < 1 || chips < 1 || host_ranks < 1 || host_ranks > chips)
        return comet_util_seterr(err, errlen, -EINVAL,
            "threads (%d), chips (%d) and ranks a host (%d) must be >= 1, at most chips a host",
            threads, chips, host_ranks);
    /* no stated network: the scaled node keeps the calibrated links */
    if (comet_model_hw_scale(profile, threads, chips, NULL, &sc) != 0)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: cannot scale to %d x %d cores",
            profile->name, chips, threads);
    sc.clusters_per_chip = 1;
    int rc = comet_system_from_hw(&sc, dtype, 0, sys, err, errlen);
    comet_model_hw_free(&sc);
    if (rc)
        return rc;
    sys->host_share = host_share(profile, threads, host_ranks);
    sys->host_ranks = host_ranks;
    comet_model_links lk;
    memset(&lk, 0, sizeof lk);
    const char *l = link && *link ? link : "shm";
    if (chips > 1
        && (comet_model_links_for_transport(profile, l, &lk) != 0
            || comet_system_use_link_fits(sys, &lk) != 0)) {
        comet_system_free(sys);
        return comet_util_seterr(err, errlen, -ENOENT,
            "%s: the profile has no fit of link '%s' (calibrate with `comet bench collectives` "
            "records of that link)",
            profile->name, l);
    }
    return 0;
}
