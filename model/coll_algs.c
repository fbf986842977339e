/* The collectives' and algorithms' names, and the Thakur-Rabenseifner-Gropp
 * structure row of each (collective, algorithm) pair (shared with
 * calibrate/, which fits alpha, beta and gamma of these rows). The leaf the
 * collective cost (coll.c), the descriptions (hw.c) and the links (links.c)
 * stand on. */
#include "comet_model.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const coll_names[COMET_MODEL_NCOLL]
    = { "allreduce", "allgather", "reduce_scatter", "reduce", "bcast", "alltoall", "allgatherv" };

static const char *const alg_names[COMET_MODEL_NALG]
    = { "none", "ring", "tree", "rabenseifner", "mesh", "direct", "in_network", "fit" };

const char *comet_model_coll_name(comet_model_coll c)
{
    return (unsigned)c < COMET_MODEL_NCOLL ? coll_names[c] : "unknown";
}

const char *comet_model_alg_name(comet_model_alg a)
{
    return (unsigned)a < COMET_MODEL_NALG ? alg_names[a] : "unknown";
}

int comet_model_coll_parse(const char *s, comet_model_coll *c)
{
    for (int i = 0; s && i < COMET_MODEL_NCOLL; i++)
        if (!strcmp(s, coll_names[i])) {
            *c = (comet_model_coll)i;
            return 0;
        }
    return -EINVAL;
}

int comet_model_coll_row(comet_model_coll coll, const char *alg, double bytes, int p, double row[3],
    const char **formula)
{
    const char *f = "alpha + n beta (algorithm not fixed: MPICH's choice)";
    int known = 1;
    if (!alg || p < 1 || !(bytes >= 0) || (unsigned)coll >= COMET_MODEL_NCOLL)
        return -EINVAL;
    const double P = p, L = ceil(log2(P)), Lf = floor(log2(P)), q = (P - 1) / P;
    const int pof2 = (p & (p - 1)) == 0;
    double n = bytes, a = 1, b = n, c = 0;
    switch (coll) {
    case COMET_MODEL_ALLREDUCE:
        if (!strcmp(alg, "recursive_doubling")) {
            a = L, b = L * n, c = L * n;
            f = "lg p (alpha + n beta + n gamma)";
        } else if (!strcmp(alg, "reduce_scatter_allgather") && pof2) {
            a = 2 * L, b = 2 * q * n, c = q * n;
            f = "2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma";
        } else if (!strcmp(alg, "reduce_scatter_allgather")) {
            a = 2 * Lf + 2, b = (2 * q + 2) * n, c = (1 + q) * n;
            f = "(2 floor(lg p) + 2) alpha + (2 (p-1)/p + 2) n beta + (1 + (p-1)/p) n gamma";
        } else if (!strcmp(alg, "ring") || !strcmp(alg, "tsp_ring")) {
            a = 2 * (P - 1), b = 2 * q * n, c = q * n;
            f = "2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma";
        } else
            known = 0;
        break;
    case COMET_MODEL_ALLGATHERV:
        /* MPICH chooses among its own allgatherv algorithms: measured as
         * "auto" only (alpha + n beta over the gathered total) */
        n = bytes * P;
        b = n;
        known = 0;
        break;
    case COMET_MODEL_ALLGATHER:
        n = bytes * P; /* TRG's n is the gathered total */
        b = n;
        if (!strcmp(alg, "ring")) {
            a = P - 1, b = q * n, c = 0;
            f = "(p-1) alpha + (p-1)/p n beta";
        } else if (!strcmp(alg, "recursive_doubling") || !strcmp(alg, "brucks")) {
            a = L, b = q * n, c = 0;
            f = "lg p alpha + (p-1)/p n beta";
        } else
            known = 0;
        break;
    case COMET_MODEL_REDUCE_SCATTER:
        if (!strcmp(alg, "recursive_halving")) {
            a = L, b = q * n, c = q * n;
            f = "lg p alpha + (p-1)/p n (beta + gamma)";
        } else if (!strcmp(alg, "pairwise")) {
            a = P - 1, b = q * n, c = q * n;
            f = "(p-1) alpha + (p-1)/p n (beta + gamma)";
        } else if (!strcmp(alg, "recursive_doubling")) {
            a = L, b = (L - q) * n, c = (L - q) * n;
            f = "lg p alpha + n (lg p - (p-1)/p) (beta + gamma)";
        } else
            known = 0;
        break;
    case COMET_MODEL_REDUCE:
        if (!strcmp(alg, "binomial")) {
            a = L, b = L * n, c = L * n;
            f = "lg p (alpha + n beta + n gamma)";
        } else if (!strcmp(alg, "reduce_scatter_gather") && pof2) {
            a = 2 * L, b = 2 * q * n, c = q * n;
            f = "2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma";
        } else if (!strcmp(alg, "reduce_scatter_gather")) {
            a = 2 * Lf + 1, b = (2 * q + 1) * n, c = (1 + q) * n;
            f = "(2 floor(lg p) + 1) alpha + (2 (p-1)/p + 1) n beta + (1 + (p-1)/p) n gamma";
        } else
            known = 0;
        break;
    case COMET_MODEL_BCAST:
        if (!strcmp(alg, "binomial")) {
            a = L, b = L * n, c = 0;
            f = "lg p (alpha + n beta)";
        } else if (!strcmp(alg, "scatter_recursive_doubling_allgather")) {
            a = 2 * L, b = 2 * q * n, c = 0;
            f = "2 lg p alpha + 2 (p-1)/p n beta";
        } else if (!strcmp(alg, "scatter_ring_allgather")) {
            a = L + P - 1, b = 2 * q * n, c = 0;
            f = "(lg p + p - 1) alpha + 2 (p-1)/p n beta";
        } else
            known = 0;
        break;
    case COMET_MODEL_ALLTOALL:
        if (!strcmp(alg, "brucks")) {
            a = L, b = n / 2 * L, c = 0;
            f = "lg p alpha + (n/2) lg p beta";
        } else if (!strcmp(alg, "pairwise") || !strcmp(alg, "scattered")) {
            a = P - 1, b = n, c = 0;
            f = "(p-1) alpha + n beta";
        } else
            known = 0;
        break;
    default:
        return -EINVAL;
    }
    if (!known)
        a = 1, b = n, c = 0, f = "alpha + n beta (algorithm not fixed: MPICH's choice)";
    row[0] = a;
    row[1] = b;
    row[2] = c;
    if (formula)
        *formula = f;
    return known;
}
