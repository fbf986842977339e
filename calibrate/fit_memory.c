/* Memory plateaus (ERT rule) and the GEMM saturating law. */
#include "comet_calibrate.h"

#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Median of v[lo..hi) (copied: the caller's order is kept). */
static double median_of(const double *v, size_t lo, size_t hi, double *tmp)
{
    size_t m = hi - lo;
    memcpy(tmp, v + lo, m * sizeof(double));
    gsl_sort(tmp, 1, m);
    return gsl_stats_median_from_sorted_data(tmp, 1, m);
}

int comet_calibrate_plateaus(
    const double *size, const double *gbs, size_t n, comet_calibrate_plateau *lv, int max)
{
    int nl = 0;
    double *tmp = NULL;
    size_t *start = NULL, nruns = 0;
    if (!size || !gbs || !lv || max < 1)
        return -EINVAL;
    if (n == 0)
        return 0;
    tmp = malloc(n * sizeof(double));
    start = malloc((n + 1) * sizeof(size_t));
    if (!tmp || !start) {
        free(tmp);
        free(start);
        return -ENOMEM;
    }
    /* runs: a new one starts at a >= 1.25x drop below the running median */
    start[nruns++] = 0;
    for (size_t i = 1; i < n; i++) {
        double med = median_of(gbs, start[nruns - 1], i, tmp);
        if (gbs[i] * 1.25 <= med)
            start[nruns++] = i;
    }
    start[nruns] = n;
    for (size_t r = 0; r < nruns && nl < max; r++) {
        size_t lo = start[r], hi = start[r + 1];
        double med = median_of(gbs, lo, hi, tmp), s = 0;
        size_t m = 0;
        for (size_t i = lo; i < hi; i++)
            if (fabs(gbs[i] - med) <= 0.05 * med)
                tmp[m++] = gbs[i];
        if (m > 0) { /* the level's value: its points within +-5% */
            gsl_sort(tmp, 1, m);
            s = gsl_stats_median_from_sorted_data(tmp, 1, m);
        } else
            s = med;
        lv[nl].gbs = s;
        lv[nl].from_bytes = size[lo];
        lv[nl].to_bytes = size[hi - 1];
        lv[nl].points = hi - lo;
        nl++;
    }
    free(tmp);
    free(start);
    return nl;
}

double comet_calibrate_plateau_predict(const comet_calibrate_plateau *lv, int nl, double bytes)
{
    if (nl < 1)
        return NAN;
    if (bytes <= lv[0].to_bytes)
        return lv[0].gbs;
    for (int i = 0; i < nl; i++) {
        if (bytes >= lv[i].from_bytes && bytes <= lv[i].to_bytes)
            return lv[i].gbs;
        if (i + 1 < nl && bytes > lv[i].to_bytes && bytes < lv[i + 1].from_bytes) {
            /* between levels: log-linear in the working set */
            double t = (log(bytes) - log(lv[i].to_bytes))
                / (log(lv[i + 1].from_bytes) - log(lv[i].to_bytes));
            return exp(log(lv[i].gbs) + t * (log(lv[i + 1].gbs) - log(lv[i].gbs)));
        }
    }
    return lv[nl - 1].gbs;
}

int comet_calibrate_fit_saturating(
    const double *F, const double *eff, size_t n, double *emax, double *f_half)
{
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    comet_calibrate_line l;
    int rc = -ENOMEM;
    if (!x || !y)
        goto fail;
    rc = -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!(F[i] > 0) || !(eff[i] > 0))
            goto fail;
        x[i] = 1.0 / F[i];
        y[i] = 1.0 / eff[i];
    }
    if ((rc = comet_calibrate_fit_line(x, y, n, &l)) != 0)
        goto fail;
    if (!(l.a > 0)) { /* no saturation seen: the law degenerates to the mean */
        rc = -EDOM;
        goto fail;
    }
    *emax = 1.0 / l.a;
    *f_half = l.b * *emax;
fail:
    free(x);
    free(y);
    return rc;
}
