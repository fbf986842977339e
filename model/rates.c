/* The rates the model reads from a hardware description: GEMM efficiency
 * by size (a step table), from the measured sgemm and fused-kernel grids
 * (interpolated over M, N, K and threads), the share of the grid's C tile
 * traffic, and the share of a core each thread keeps when all run at once.
 * Below model.c, gms.c and dist.c; it reads the description's fields
 * (comet_model_hw.h) and calls no other file of model/. */
#include "comet_model.h"

#include <math.h>
#include <stdlib.h>

double comet_model_steps_eval(const comet_model_steps *st, double size, double dflt)
{
    if (!st || st->n <= 0)
        return dflt;
    if (!(size > 0))
        return st->eff[0];
    /* time per unit of work, size / efficiency, is held from dropping at a
     * step up: a bigger operation never finishes sooner than a smaller one
     * (the plain step function would let 16 GFLOP beat 15.9) */
    double t_edge = 0; /* time at the end of the previous step */
    int k = 0;
    for (int i = 1; i < st->n; i++) {
        if (size < st->at[i])
            break;
        t_edge = fmax(st->at[i] / st->eff[i - 1], t_edge);
        k = i;
    }
    const double t = fmax(size / st->eff[k], t_edge);
    return size / t;
}

static double interp_axis(const double *ax, int n, double x, int *i0)
{
    /* position of x between ax[i0] and ax[i0+1] in log space, clamped */
    if (n == 1 || x <= ax[0]) {
        *i0 = 0;
        return 0;
    }
    if (x >= ax[n - 1]) {
        *i0 = n - 2;
        return 1;
    }
    int i = 0;
    while (i < n - 2 && x > ax[i + 1])
        i++;
    *i0 = i;
    return (log(x) - log(ax[i])) / (log(ax[i + 1]) - log(ax[i]));
}

static double grid_eff(
    const comet_model_grid *g, double flat, double M, double N, double K, double thr)
{
    if (!g->values)
        return flat;
    int outside = M < g->M[0] || N < g->N[0] || K < g->K[0] || M > g->M[g->nm - 1]
        || N > g->N[g->nn - 1] || K > g->K[g->nk - 1];
    /* thread index: nearest */
    int t = 0;
    for (int i = 1; i < g->nt; i++)
        if (fabs(g->threads[i] - thr) < fabs(g->threads[t] - thr))
            t = i;
    int im, in, ik;
    double fm = g->nm > 1 ? interp_axis(g->M, g->nm, M, &im) : (im = 0, 0.0);
    double fn = g->nn > 1 ? interp_axis(g->N, g->nn, N, &in) : (in = 0, 0.0);
    double fk = g->nk > 1 ? interp_axis(g->K, g->nk, K, &ik) : (ik = 0, 0.0);
    double e = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++) {
                int ii = im + (g->nm > 1 ? a : 0), jj = in + (g->nn > 1 ? b : 0),
                    kk = ik + (g->nk > 1 ? c : 0);
                double w = (a ? fm : 1 - fm) * (b ? fn : 1 - fn) * (c ? fk : 1 - fk);
                if (w == 0)
                    continue;
                e += w * g->values[(((size_t)t * g->nm + ii) * g->nn + jj) * g->nk + kk];
            }
    if (outside && g->f_half > 0) {
        /* below the grid: saturating law on the flop count, joined to the
         * grid's edge value; above it the edge value stands (a GEMM larger
         * than the largest measured is on the BLAS plateau: the law's further
         * rise overstated 2048^2 x 64 by 20% on the Xeon) */
        double F = 2 * M * N * K;
        double law = g->emax * F / (F + g->f_half);
        double Fe = 2 * fmin(fmax(M, g->M[0]), g->M[g->nm - 1])
            * fmin(fmax(N, g->N[0]), g->N[g->nn - 1]) * fmin(fmax(K, g->K[0]), g->K[g->nk - 1]);
        double law_edge = g->emax * Fe / (Fe + g->f_half);
        if (law_edge > 0 && law < law_edge)
            e *= law / law_edge;
    }
    return e > 1e-4 ? e : 1e-4;
}

double comet_model_gemm_eff(const comet_model_hw *hw, double M, double N, double K, double thr)
{
    /* without a measured grid, a stated table by the GEMM's size */
    const double flat
        = comet_model_steps_eval(&hw->gemm_eff_by_gflop, 2 * M * N * K / 1e9, hw->gemm_eff);
    return grid_eff(&hw->grid, flat, M, N, K, thr);
}

double comet_model_gemm_wave_eff(const comet_model_hw *hw, double M, double N, double batch)
{
    if (hw->gemm_ntiles <= 0 || hw->cores < 1 || !(M > 0) || !(N > 0) || !(batch >= 1))
        return 0;
    double mmin = INFINITY, nmin = INFINITY;
    for (int i = 0; i < hw->gemm_ntiles; i++) {
        mmin = fmin(mmin, hw->gemm_tile_m[i]);
        nmin = fmin(nmin, hw->gemm_tile_n[i]);
    }
    if (M < mmin || N < nmin)
        return 0;
    const double S = hw->cores, useful = M * N * batch;
    double best = 0;
    for (int i = 0; i < hw->gemm_ntiles; i++) {
        const double tm = hw->gemm_tile_m[i], tn = hw->gemm_tile_n[i];
        const double tiles = batch * ceil(M / tm) * ceil(N / tn);
        const double q = useful / (ceil(tiles / S) * S * tm * tn);
        best = fmax(best, q);
    }
    return fmin(best, 1.0);
}

double comet_model_gemm_grid_c_share(const comet_model_hw *hw, double M, double N, double c_bytes)
{
    const comet_model_grid *g = &hw->grid;
    if (!g->values)
        return 1;
    int im, in;
    double fm = g->nm > 1 ? interp_axis(g->M, g->nm, M, &im) : (im = 0, 0.0);
    double fn = g->nn > 1 ? interp_axis(g->N, g->nn, N, &in) : (in = 0, 0.0);
    double share = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const int ii = im + (g->nm > 1 ? a : 0), jj = in + (g->nn > 1 ? b : 0);
            const double w = (a ? fm : 1 - fm) * (b ? fn : 1 - fn);
            /* the grid's sgemm records are fp32: C is M x N x 4 bytes */
            if (w > 0 && g->M[ii] * g->N[jj] * 4 <= c_bytes)
                share += w;
        }
    return share;
}

double comet_model_fused_gemm_eff(
    const comet_model_hw *hw, double M, double N, double K, double thr)
{
    if (!hw->fused_grid.values)
        return comet_model_gemm_eff(hw, M, N, K, thr);
    return grid_eff(&hw->fused_grid, hw->gemm_eff, M, N, K, thr);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What each of T cores delivers when all T run at once, against one core
 * running alone: from the profile's GEMM grid (fused, else sgemm) at its
 * largest M, where each thread's share of rows is largest (fork, join and
 * packing amortized), the median over its N, K points of the efficiency at
 * T threads over that at 1 thread, at most 1. On a host whose cores are shared
 * (a VM's vCPUs, other tenants) this is the share of a core's time each
 * thread gets, so it divides every phase, compute and memory alike, and the
 * order of the configurations at one thread count stays the model's. 1 at
 * one thread or without a grid. (AMD EPYC Zen 5 VM, 2 vCPUs: 0.80 in the
 * profile's grid; the fused gms kernel ran 1.43-1.53x faster at 2 threads
 * than at 1, 0.71-0.77 a core, where the model at a whole core each
 * predicted 2-thread calls 27-37% fast in median.) */
double comet_model_gms_core_share(const comet_model_hw *hw, double T)
{
    /* the fused grid where it was timed at several thread counts (a quick
     * profile times it at one: then the sgemm grid's, not 1) */
    const comet_model_grid *gr = hw && hw->fused_grid.values && hw->fused_grid.nt >= 2
        ? &hw->fused_grid
        : hw ? &hw->grid
             : NULL;
    if (!gr || !gr->values || T <= 1 || gr->nt < 2 || gr->nm < 1 || gr->nn * gr->nk > 64)
        return 1;
    double r[64];
    int n = 0;
    const double M = gr->M[gr->nm - 1];
    for (int j = 0; j < gr->nn; j++)
        for (int k = 0; k < gr->nk; k++) {
            double e1 = grid_eff(gr, hw->gemm_eff, M, gr->N[j], gr->K[k], 1),
                   eT = grid_eff(gr, hw->gemm_eff, M, gr->N[j], gr->K[k], T);
            if (e1 > 0 && eT > 0)
                r[n++] = eT / e1;
        }
    if (n == 0)
        return 1;
    qsort(r, (size_t)n, sizeof *r, cmp_double);
    const double med = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    return fmin(1, med);
}

double comet_model_cold_read_cpb(const comet_model_hw *hw, double N, double K)
{
    if (!hw || hw->cold_nn < 1 || hw->cold_nk < 1)
        return NAN;
    int in, ik;
    const double fn = interp_axis(hw->cold_N, hw->cold_nn, N, &in),
                 fk = interp_axis(hw->cold_K, hw->cold_nk, K, &ik);
    const int in1 = in + 1 < hw->cold_nn ? in + 1 : in, ik1 = ik + 1 < hw->cold_nk ? ik + 1 : ik;
    const double *v = hw->cold_cpb;
    const int nk = hw->cold_nk;
    const double a = v[in * nk + ik] * (1 - fk) + v[in * nk + ik1] * fk,
                 b = v[in1 * nk + ik] * (1 - fk) + v[in1 * nk + ik1] * fk;
    return a * (1 - fn) + b * fn;
}
