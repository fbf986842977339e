/* Double-precision reference implementations for the kernel tests. */
#ifndef KREF_H
#define KREF_H
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

static inline void kref_fill(float *x, size_t n, unsigned seed, float lo, float hi)
{
    unsigned s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)((s >> 8) & 0xFFFFFF) / 16777216.0f;
    }
}

static inline void kref_gemm(
    size_t M, size_t N, size_t K, double alpha, const float *A, const float *B, double *C)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t k = 0; k < K; k++)
                s += (double)A[i * K + k] * B[k * N + j];
            C[i * N + j] = alpha * s;
        }
}

static inline void kref_softmax_row(double *x, size_t n)
{
    double m = -INFINITY;
    int nan = 0;
    for (size_t j = 0; j < n; j++) {
        if (isnan(x[j]))
            nan = 1;
        else if (x[j] > m)
            m = x[j];
    }
    if (nan) {
        for (size_t j = 0; j < n; j++)
            x[j] = NAN;
        return;
    }
    if (m == -INFINITY) {
        for (size_t j = 0; j < n; j++)
            x[j] = 0;
        return;
    }
    double s = 0;
    for (size_t j = 0; j < n; j++)
        s += (x[j] = exp(x[j] - m));
    for (size_t j = 0; j < n; j++)
        x[j] /= s;
}

static inline void kref_layernorm_row(
    double *x, size_t n, const float *g, const float *b, double eps)
{
    double mean = 0, var = 0;
    for (size_t j = 0; j < n; j++)
        mean += x[j];
    mean /= (double)n;
    for (size_t j = 0; j < n; j++)
        var += (x[j] - mean) * (x[j] - mean);
    var /= (double)n;
    double r = 1.0 / sqrt(var + eps);
    for (size_t j = 0; j < n; j++)
        x[j] = (x[j] - mean) * r * (g ? g[j] : 1.0) + (b ? b[j] : 0.0);
}

/* Returns the max |got - ref| / (tol_rel*|ref| + tol_abs) (<= 1 passes);
 * NaN must match NaN. */
static inline double kref_compare(
    const float *got, const double *ref, size_t n, double tol_rel, double tol_abs, size_t *worst)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(ref[i]) || isnan(got[i])) {
            if (!(isnan(ref[i]) && isnan(got[i]))) {
                *worst = i;
                return INFINITY;
            }
            continue;
        }
        double e = fabs((double)got[i] - ref[i]) / (tol_rel * fabs(ref[i]) + tol_abs);
        if (e > w) {
            w = e;
            *worst = i;
        }
    }
    return w;
}
#endif
