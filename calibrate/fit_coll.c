/* Thakur-Rabenseifner-Gropp (IJHPCA 2005) cost rows of MPICH's collective
 * algorithms: T = a(p) alpha + b(p, n) beta + c(p, n) gamma, linear in the
 * three parameters so that every measurement is one least-squares row. */
#include "comet_calibrate.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int comet_calibrate_trg_row(
    const char *coll, const char *alg, double bytes, int p, double row[3], const char **formula)
{
    const char *f = "alpha + n beta (generic)";
    int known = 1;
    if (!coll || !alg || p < 1 || !(bytes >= 0))
        return -EINVAL;
    const double P = p, L = ceil(log2(P)), Lf = floor(log2(P)), q = (P - 1) / P;
    const int pof2 = (p & (p - 1)) == 0;
    double n = bytes, a = 1, b = n, c = 0;
    if (!strcmp(coll, "allreduce")) {
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
    } else if (!strcmp(coll, "allgather")) {
        n = bytes * P; /* TRG's n is the gathered total */
        if (!strcmp(alg, "ring")) {
            a = P - 1, b = q * n, c = 0;
            f = "(p-1) alpha + (p-1)/p n beta";
        } else if (!strcmp(alg, "recursive_doubling") || !strcmp(alg, "brucks")) {
            a = L, b = q * n, c = 0;
            f = "lg p alpha + (p-1)/p n beta";
        } else
            known = 0;
    } else if (!strcmp(coll, "reduce_scatter")) {
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
    } else if (!strcmp(coll, "reduce")) {
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
    } else if (!strcmp(coll, "bcast")) {
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
    } else if (!strcmp(coll, "alltoall")) {
        if (!strcmp(alg, "brucks")) {
            a = L, b = n / 2 * L, c = 0;
            f = "lg p alpha + (n/2) lg p beta";
        } else if (!strcmp(alg, "pairwise") || !strcmp(alg, "scattered")) {
            a = P - 1, b = n, c = 0;
            f = "(p-1) alpha + n beta";
        } else
            known = 0;
    } else if (!strcmp(coll, "pingpong")) {
        f = "alpha + n beta (Hockney)";
    } else
        return -EINVAL;
    if (!known)
        a = 1, b = n, c = 0, f = "alpha + n beta (algorithm not fixed: MPICH's choice)";
    row[0] = a;
    row[1] = b;
    row[2] = c;
    if (formula)
        *formula = f;
    return known;
}
