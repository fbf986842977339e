/* Piecewise linear models over message size: protocol switches (eager ->
 * rendezvous, shm -> CMA) break one Hockney line into several. */
#include "comet_calibrate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Lazily fitted contiguous ranges [bnd[a], bnd[b]) of the sorted points. */
typedef struct ranges {
    const double *X, *y;
    size_t p, minpts;
    const size_t *bnd; /* indices where a new distinct key starts, then n */
    size_t nb; /* boundaries (including the final n) */
    comet_calibrate_lsq *fit; /* nb x nb */
    signed char *state; /* 0 unknown, 1 ok, -1 unusable */
} ranges;

static const comet_calibrate_lsq *range_fit(ranges *r, size_t a, size_t b)
{
    size_t k = a * r->nb + b;
    if (r->state[k] == 0) {
        size_t lo = r->bnd[a], hi = r->bnd[b];
        r->state[k] = -1;
        if (hi - lo >= r->minpts
            && comet_calibrate_nnls(r->X + lo * r->p, r->y + lo, NULL, hi - lo, r->p, &r->fit[k])
                == 0)
            r->state[k] = 1;
    }
    return r->state[k] == 1 ? &r->fit[k] : NULL;
}

static size_t free_params(const comet_calibrate_lsq *f)
{
    size_t k = 0;
    for (size_t j = 0; j < f->p; j++)
        k += f->state[j] == COMET_CALIBRATE_FITTED;
    return k;
}

/* Bayesian information criterion on the relative (1/y^2-weighted) error. */
static double bic(double chisq, size_t n, size_t k)
{
    return (double)n * log(chisq / (double)n + 1e-14) + (double)k * log((double)n);
}

int comet_calibrate_fit_piecewise(const double *key, const double *X, const double *y, size_t n,
    size_t p, int maxseg, size_t minpts, comet_calibrate_piecewise *out)
{
    int rc = 0;
    ranges r = { X, y, p, minpts < 1 ? 1 : minpts, NULL, 0, NULL, NULL };
    size_t *bnd = NULL;
    memset(out, 0, sizeof *out);
    if (!key || !X || !y || n < 1 || p < 1 || p > COMET_CALIBRATE_MAXP || maxseg < 1)
        return -EINVAL;
    if (maxseg > COMET_CALIBRATE_MAXSEG)
        maxseg = COMET_CALIBRATE_MAXSEG;
    bnd = malloc((n + 1) * sizeof(size_t));
    if (!bnd)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && !(key[i] >= key[i - 1])) {
            rc = -EINVAL;
            goto fail;
        }
        if (i == 0 || key[i] > key[i - 1])
            bnd[r.nb++] = i;
    }
    bnd[r.nb++] = n;
    r.bnd = bnd;
    r.fit = calloc(r.nb * r.nb, sizeof(comet_calibrate_lsq));
    r.state = calloc(r.nb * r.nb, 1);
    if (!r.fit || !r.state) {
        rc = -ENOMEM;
        goto fail;
    }
    const size_t last = r.nb - 1;
    double best = INFINITY;
    size_t bs[COMET_CALIBRATE_MAXSEG + 1] = { 0 };
    int bseg = 0;
    /* one piece */
    const comet_calibrate_lsq *f0 = range_fit(&r, 0, last);
    if (f0) {
        best = bic(f0->chisq, n, free_params(f0));
        bseg = 1;
        bs[0] = 0;
        bs[1] = last;
    }
    /* two pieces: every split between distinct keys */
    for (size_t a = 1; maxseg >= 2 && a < last; a++) {
        const comet_calibrate_lsq *f1 = range_fit(&r, 0, a), *f2 = range_fit(&r, a, last);
        if (!f1 || !f2)
            continue;
        double b = bic(f1->chisq + f2->chisq, n, free_params(f1) + free_params(f2) + 1);
        if (b < best) {
            best = b;
            bseg = 2;
            bs[0] = 0;
            bs[1] = a;
            bs[2] = last;
        }
    }
    /* three pieces */
    for (size_t a = 1; maxseg >= 3 && a < last; a++) {
        const comet_calibrate_lsq *f1 = range_fit(&r, 0, a);
        if (!f1)
            continue;
        for (size_t c = a + 1; c < last; c++) {
            const comet_calibrate_lsq *f2 = range_fit(&r, a, c), *f3 = range_fit(&r, c, last);
            if (!f2 || !f3)
                continue;
            double b = bic(f1->chisq + f2->chisq + f3->chisq, n,
                free_params(f1) + free_params(f2) + free_params(f3) + 2);
            if (b < best) {
                best = b;
                bseg = 3;
                bs[0] = 0;
                bs[1] = a;
                bs[2] = c;
                bs[3] = last;
            }
        }
    }
    if (bseg == 0) {
        rc = -EINVAL; /* too few points for even one piece */
        goto fail;
    }
    out->nseg = bseg;
    double chisq = 0;
    for (int s = 0; s < bseg; s++) {
        out->seg[s] = *range_fit(&r, bs[s], bs[s + 1]);
        out->from[s] = s == 0 ? 0 : key[bnd[bs[s]]];
        chisq += out->seg[s].chisq;
    }
    /* weighted R^2 of the whole piecewise model */
    double sw = 0, swy = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        sw += 1 / (y[i] * y[i]);
        swy += y[i] / (y[i] * y[i]);
    }
    for (size_t i = 0; i < n; i++)
        ss += (y[i] - swy / sw) * (y[i] - swy / sw) / (y[i] * y[i]);
    out->r2 = ss > 0 ? 1 - chisq / ss : 1;
fail:
    free(bnd);
    free(r.fit);
    free(r.state);
    return rc;
}

double comet_calibrate_piecewise_eval(
    const comet_calibrate_piecewise *f, double key, const double *xrow)
{
    int s = 0;
    while (s + 1 < f->nseg && key >= f->from[s + 1])
        s++;
    return comet_calibrate_lsq_eval(&f->seg[s], xrow);
}

static void to_line(const comet_calibrate_lsq *f, comet_calibrate_line *l)
{
    l->a = f->state[0] == COMET_CALIBRATE_FITTED ? f->coef[0] : 0;
    l->b = f->state[1] == COMET_CALIBRATE_FITTED ? f->coef[1] : 0;
    l->r2 = f->r2;
    l->n = f->n;
}

int comet_calibrate_fit_hockney(
    const double *x, const double *y, size_t n, comet_calibrate_hockney *out)
{
    int rc;
    double *X = malloc(2 * n * sizeof(double));
    comet_calibrate_piecewise pw;
    memset(out, 0, sizeof *out);
    if (!X)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = 1;
        X[2 * i + 1] = x[i];
    }
    if ((rc = comet_calibrate_fit_piecewise(x, X, y, n, 2, 2, 3, &pw)) == 0) {
        to_line(&pw.seg[0], &out->lo);
        to_line(&pw.seg[pw.nseg - 1], &out->hi);
        out->breakpoint = pw.nseg > 1 ? pw.from[1] : 0;
    }
    free(X);
    return rc;
}

double comet_calibrate_hockney_eval(const comet_calibrate_hockney *h, double x)
{
    const comet_calibrate_line *l = (h->breakpoint > 0 && x >= h->breakpoint) ? &h->hi : &h->lo;
    return l->a + l->b * x;
}
