/* Sample statistics: median, distribution-free CI of the median, quantiles. */
#include "comet_bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* log of C(n, k) / 2^n through lgamma: exact enough for the ranks we pick
 * (n up to millions) and never overflows as products of binomials would. */
static double log_binom_half(size_t n, size_t k)
{
    return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1)
        - (double)n * log(2.0);
}

void comet_bench_median_ci_ranks(size_t n, size_t *lo, size_t *hi, double *coverage)
{
    /* Under any continuous distribution the number of samples below the
     * median is Bin(n, 1/2); [x(l), x(n-l+1)] covers the median with
     * probability 1 - 2 P(B <= l-1). Pick the largest l with tail <= 2.5%. */
    size_t l = 0;
    double cdf = 0, tail_at_l = 0;
    for (size_t k = 0; k < n; k++) {
        cdf += exp(log_binom_half(n, k));
        if (cdf <= 0.025) {
            l = k + 1;
            tail_at_l = cdf;
        } else {
            break;
        }
    }
    if (l == 0) {
        /* n < 6: no rank gives 95%; the widest interval is all we have. */
        *lo = n ? 1 : 0;
        *hi = n;
        *coverage = n ? 1.0 - 2.0 * exp(log_binom_half(n, 0)) : 0;
        return;
    }
    *lo = l;
    *hi = n - l + 1;
    *coverage = 1.0 - 2.0 * tail_at_l;
}

/* Quantile q of sorted x by linear interpolation (Hyndman-Fan type 7). */
static double quantile_sorted(const double *x, size_t n, double q)
{
    double h = (double)(n - 1) * q;
    size_t i = (size_t)floor(h);
    if (i + 1 >= n)
        return x[n - 1];
    return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}

int comet_bench_stats_compute(const double *samples, size_t n, comet_bench_stats *out)
{
    double *x = NULL;
    int rc = 0;
    if (!samples || !out || n == 0)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    x = malloc(n * sizeof *x);
    if (!x) {
        rc = -ENOMEM;
        goto fail;
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(samples[i])) {
            rc = -EINVAL;
            goto fail;
        }
        x[i] = samples[i];
        sum += samples[i];
    }
    qsort(x, n, sizeof *x, cmp_double);
    out->n = n;
    out->min = x[0];
    out->max = x[n - 1];
    out->mean = sum / (double)n;
    out->median = (n % 2) ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    out->p90 = quantile_sorted(x, n, 0.9);
    size_t lo, hi;
    comet_bench_median_ci_ranks(n, &lo, &hi, &out->ci_level);
    out->ci_lo = x[lo - 1];
    out->ci_hi = x[hi - 1];
fail:
    free(x);
    return rc;
}
