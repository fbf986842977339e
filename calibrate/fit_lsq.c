/* Weighted non-negative least squares on top of GSL, collinearity detection,
 * straight lines, error statistics. */
#include "comet_calibrate.h"

#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns whose cosine exceeds this are proportional (collinear terms). */
#define PROPORTIONAL_COS (1.0 - 1e-9)

/* Unconstrained weighted LS on the columns listed in idx (k of them) of the
 * scaled design Xs (n x p); writes z[idx[j]]. GSL does the work (SVD based). */
static int solve_subset(const double *Xs, const double *y, const double *w, size_t n, size_t p,
    const size_t *idx, size_t k, double *z)
{
    int rc = 0;
    gsl_matrix *A = gsl_matrix_alloc(n, k), *cov = gsl_matrix_alloc(k, k);
    gsl_vector *c = gsl_vector_alloc(k);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, k);
    if (!A || !cov || !c || !ws) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < k; j++)
            gsl_matrix_set(A, i, j, Xs[i * p + idx[j]]);
    gsl_vector_const_view wv = gsl_vector_const_view_array(w, n);
    gsl_vector_const_view yv = gsl_vector_const_view_array(y, n);
    double chisq;
    if (gsl_multifit_wlinear(A, &wv.vector, &yv.vector, c, cov, &chisq, ws) != GSL_SUCCESS) {
        rc = -EDOM;
        goto fail;
    }
    for (size_t j = 0; j < k; j++)
        z[idx[j]] = gsl_vector_get(c, j);
fail:
    gsl_matrix_free(A);
    gsl_matrix_free(cov);
    gsl_vector_free(c);
    if (ws)
        gsl_multifit_linear_free(ws);
    return rc;
}

/* Numerical rank of the weighted, column-normalised design (GSL SVD). */
static int design_rank(
    const double *Xs, const double *w, size_t n, size_t p, const size_t *idx, size_t k)
{
    if (k == 0)
        return 0;
    if (n < k)
        return (int)n;
    gsl_matrix *A = gsl_matrix_alloc(n, k), *V = gsl_matrix_alloc(k, k);
    gsl_vector *S = gsl_vector_alloc(k), *work = gsl_vector_alloc(k);
    int rank = -1;
    if (A && V && S && work) {
        for (size_t j = 0; j < k; j++) {
            double nn = 0;
            for (size_t i = 0; i < n; i++) {
                double v = sqrt(w[i]) * Xs[i * p + idx[j]];
                gsl_matrix_set(A, i, j, v);
                nn += v * v;
            }
            nn = nn > 0 ? 1 / sqrt(nn) : 0;
            for (size_t i = 0; i < n; i++)
                gsl_matrix_set(A, i, j, gsl_matrix_get(A, i, j) * nn);
        }
        if (gsl_linalg_SV_decomp(A, V, S, work) == GSL_SUCCESS) {
            double smax = gsl_vector_get(S, 0);
            rank = 0;
            for (size_t j = 0; j < k; j++)
                if (gsl_vector_get(S, j) > 1e-9 * smax)
                    rank++;
        }
    }
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(work);
    return rank;
}

int comet_calibrate_nnls(
    const double *X, const double *y, const double *w, size_t n, size_t p, comet_calibrate_lsq *out)
{
    int rc = 0;
    double *Xs = NULL, *wt = NULL;
    size_t act[COMET_CALIBRATE_MAXP], nact = 0, P[COMET_CALIBRATE_MAXP], np = 0;
    double scale[COMET_CALIBRATE_MAXP] = { 0 }, x[COMET_CALIBRATE_MAXP] = { 0 },
           z[COMET_CALIBRATE_MAXP] = { 0 };
    int inP[COMET_CALIBRATE_MAXP] = { 0 };
    memset(out, 0, sizeof *out);
    if (!X || !y || n < 1 || p < 1 || p > COMET_CALIBRATE_MAXP)
        return -EINVAL;
    gsl_set_error_handler_off(); /* GSL must never abort the process */
    out->p = p;
    out->n = n;
    Xs = malloc(n * p * sizeof(double));
    wt = malloc(n * sizeof(double));
    if (!Xs || !wt) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i]) || (!w && !(y[i] > 0))) {
            rc = -EINVAL;
            goto fail;
        }
        wt[i] = w ? w[i] : 1.0 / (y[i] * y[i]);
        if (!(wt[i] >= 0) || !isfinite(wt[i])) {
            rc = -EINVAL;
            goto fail;
        }
        for (size_t j = 0; j < p; j++)
            if (!isfinite(X[i * p + j])) {
                rc = -EINVAL;
                goto fail;
            }
    }
    /* Column analysis on the weighted design: zero columns are absent,
     * proportional columns merge into the first (only their sum is
     * identifiable). Columns are then scaled to unit weighted norm so that
     * alpha (~1e-6 s) and beta (~1e-10 s/B) are solved at comparable size. */
    for (size_t j = 0; j < p; j++) {
        double nn = 0;
        for (size_t i = 0; i < n; i++)
            nn += wt[i] * X[i * p + j] * X[i * p + j];
        out->owner[j] = -1;
        if (!(nn > 0)) {
            out->state[j] = COMET_CALIBRATE_ABSENT;
            continue;
        }
        scale[j] = 1 / sqrt(nn);
        for (size_t a = 0; a < nact; a++) {
            size_t i0 = act[a];
            double d = 0;
            for (size_t i = 0; i < n; i++)
                d += wt[i] * X[i * p + j] * X[i * p + i0];
            double cosv = d * scale[j] * scale[i0];
            if (cosv > PROPORTIONAL_COS) {
                out->state[j] = COMET_CALIBRATE_MERGED;
                out->owner[j] = (int)i0;
                out->ratio[j] = d * scale[i0] * scale[i0]; /* col_j = ratio * col_i0 */
                break;
            }
        }
        if (out->state[j] != COMET_CALIBRATE_MERGED)
            act[nact++] = j;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < p; j++)
            Xs[i * p + j] = X[i * p + j] * scale[j];
    out->rank = design_rank(Xs, wt, n, p, act, nact);

    /* Lawson-Hanson active set: P = free (positive) variables. */
    for (int outer = 0; outer < 3 * COMET_CALIBRATE_MAXP + 3; outer++) {
        double grad[COMET_CALIBRATE_MAXP] = { 0 }, gmax = 0;
        int jmax = -1;
        for (size_t a = 0; a < nact; a++) {
            size_t j = act[a];
            if (inP[j])
                continue;
            for (size_t i = 0; i < n; i++) {
                double r = y[i];
                for (size_t b = 0; b < nact; b++)
                    r -= Xs[i * p + act[b]] * x[act[b]];
                grad[j] += wt[i] * Xs[i * p + j] * r;
            }
            if (grad[j] > gmax) {
                gmax = grad[j];
                jmax = (int)j;
            }
        }
        /* relative tolerance: the gradient of a converged fit is round-off */
        double ynorm = 0;
        for (size_t i = 0; i < n; i++)
            ynorm += wt[i] * y[i] * y[i];
        if (jmax < 0 || gmax <= 1e-12 * sqrt(ynorm))
            break;
        inP[jmax] = 1;
        P[np++] = (size_t)jmax;
        for (int inner = 0; inner < 2 * COMET_CALIBRATE_MAXP + 2; inner++) {
            if ((rc = solve_subset(Xs, y, wt, n, p, P, np, z)) != 0)
                goto fail;
            int allpos = 1;
            for (size_t k = 0; k < np; k++)
                if (!(z[P[k]] > 0))
                    allpos = 0;
            if (allpos) {
                for (size_t k = 0; k < np; k++)
                    x[P[k]] = z[P[k]];
                break;
            }
            /* step from x toward z until the first variable hits zero */
            double t = 1;
            for (size_t k = 0; k < np; k++) {
                size_t j = P[k];
                if (!(z[j] > 0) && x[j] - z[j] > 0)
                    t = fmin(t, x[j] / (x[j] - z[j]));
            }
            double big = 0;
            for (size_t k = 0; k < np; k++)
                big = fmax(big, fabs(x[P[k]]) + fabs(z[P[k]]));
            size_t keep = 0;
            for (size_t k = 0; k < np; k++) {
                size_t j = P[k];
                x[j] += t * (z[j] - x[j]);
                if (x[j] > 1e-12 * big)
                    P[keep++] = j;
                else { /* the variable(s) that reached the bound leave P */
                    x[j] = 0;
                    inP[j] = 0;
                }
            }
            np = keep;
            if (np == 0)
                break;
        }
    }
    for (size_t j = 0; j < p; j++) {
        out->coef[j] = x[j] * scale[j];
        out->pinned[j] = out->state[j] == COMET_CALIBRATE_FITTED && !(x[j] > 0);
    }
    /* weighted R^2 and residual sum of squares */
    {
        double sw = 0, swy = 0, ss = 0, sr = 0;
        for (size_t i = 0; i < n; i++) {
            sw += wt[i];
            swy += wt[i] * y[i];
        }
        double ym = sw > 0 ? swy / sw : 0;
        for (size_t i = 0; i < n; i++) {
            double f = comet_calibrate_lsq_eval(out, X + i * p);
            sr += wt[i] * (y[i] - f) * (y[i] - f);
            ss += wt[i] * (y[i] - ym) * (y[i] - ym);
        }
        out->chisq = sr;
        out->r2 = ss > 0 ? 1 - sr / ss : (sr == 0 ? 1 : 0);
    }
fail:
    free(Xs);
    free(wt);
    return rc;
}

double comet_calibrate_lsq_eval(const comet_calibrate_lsq *f, const double *xrow)
{
    double s = 0;
    for (size_t j = 0; j < f->p; j++)
        if (f->state[j] == COMET_CALIBRATE_FITTED)
            s += f->coef[j] * xrow[j];
    return s;
}

int comet_calibrate_fit_line(const double *x, const double *y, size_t n, comet_calibrate_line *out)
{
    int rc;
    double *X = NULL;
    comet_calibrate_lsq f;
    memset(out, 0, sizeof *out);
    if (!x || !y || n < 2)
        return -EINVAL;
    X = malloc(2 * n * sizeof(double));
    if (!X)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = 1;
        X[2 * i + 1] = x[i];
    }
    if ((rc = comet_calibrate_nnls(X, y, NULL, n, 2, &f)) != 0)
        goto fail;
    out->a = f.coef[0];
    out->b = f.state[1] == COMET_CALIBRATE_FITTED ? f.coef[1] : 0;
    out->r2 = f.r2;
    out->n = n;
fail:
    free(X);
    return rc;
}

void comet_calibrate_err_stats(const double *err, size_t n, double *median, double *p90)
{
    *median = *p90 = NAN;
    if (!n)
        return;
    double *t = malloc(n * sizeof(double));
    if (!t)
        return;
    for (size_t i = 0; i < n; i++)
        t[i] = fabs(err[i]);
    gsl_sort(t, 1, n);
    *median = gsl_stats_median_from_sorted_data(t, 1, n);
    *p90 = gsl_stats_quantile_from_sorted_data(t, 1, n, 0.9);
    free(t);
}
