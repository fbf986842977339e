/* Vector math: exp, softmax and LayerNorm row passes. AVX2+FMA paths are
 * compiled with target attributes and chosen at run time, so the library
 * runs on any x86-64 (and builds without -march=native). */
#include "kernels_internal.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define KERN_X86 1
#endif

static int force_portable = 0;
static int avx2_state = -1;

void comet_kernels_force_portable(int on)
{
    force_portable = on;
}

int kern_use_avx2(void)
{
#ifdef KERN_X86
    if (avx2_state < 0) {
        __builtin_cpu_init();
        avx2_state = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return avx2_state && !force_portable;
#else
    return 0;
#endif
}

int kern_use_avx512(void)
{
#ifdef KERN_X86
    static int state = -1;
    if (state < 0) {
        __builtin_cpu_init();
        state = __builtin_cpu_supports("avx512f") && getenv("COMET_KERNELS_NO_AVX512") == NULL;
    }
    return state && kern_use_avx2();
#else
    return 0;
#endif
}

int comet_kernels_have_avx2(void)
{
    return kern_use_avx2();
}

double comet_kernels_exp_max_rel_error(void)
{
    /* Measured by tests/kernels over [-87.3, 88.7] against exp() in double:
     * about 1.4e-7 (under 2 ulp); the bound stated here is 3 ulp. */
    return 3.0 * 5.96e-8 * 2.0;
}

#ifdef KERN_X86
#define AVX2 __attribute__((target("avx2,fma")))

/* exp for 8 floats: Cody-Waite reduction x = n ln2 + r, degree-6 polynomial
 * on r, and 2^n built in two halves so results near +-88 do not overflow the
 * exponent field early. NaN passes through; x > 88.72 gives +inf. */
AVX2 static inline __m256 exp8(__m256 x)
{
    const __m256 hi = _mm256_set1_ps(88.7228394f), lo = _mm256_set1_ps(-104.0f);
    __m256 nanmask = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    __m256 ovf = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 fx = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
    fx = _mm256_floor_ps(fx);
    __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    __m256 r2 = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i n = _mm256_cvtps_epi32(fx);
    __m256i n1 = _mm256_srai_epi32(n, 1);
    __m256i n2 = _mm256_sub_epi32(n, n1);
    __m256i b = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, b), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, b), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), ovf);
    return _mm256_blendv_ps(y, x, nanmask);
}

/* exp for the softmax epilogue, where the argument t = x*s - max is <= 0
 * (tiny positive values from fmsub rounding are fine). Cheaper than exp8:
 * n = round(t log2 e) by the 1.5*2^23 magic-number trick (no floor, no
 * convert), 2^n added straight into the exponent bits, and no overflow
 * path. Results below the smallest normal (t < -126 ln 2) flush to 0, which
 * also maps t = -inf (masked logits) to exactly 0. The polynomial is the
 * one of exp8, so the relative error on normal results is the same (about
 * 1.5 ulp; tests/kernels measures it against exp() in double). */
AVX2 static inline __m256 exp8_nonpos(__m256 t)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __m256 tiny = _mm256_cmp_ps(t, _mm256_set1_ps(-87.3365402f), _CMP_LT_OQ);
    __m256 k = _mm256_fmadd_ps(t, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 n = _mm256_sub_ps(k, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    /* degree-5 relative-minimax polynomial on [-ln2/2, ln2/2] with p(0) = 1
     * (Lawson iteration, tests/kernels checks it): 9.2e-8 approximation
     * error, 5 FMAs instead of exp8's 8 operations */
    __m256 p = _mm256_set1_ps(8.2903197283e-03f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1897950501e-02f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6667636273e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.9999149377e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(9.9999970713e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* the low bits of k hold n; shifting by 23 drops the magic's bits */
    __m256i e = _mm256_slli_epi32(_mm256_castps_si256(k), 23);
    __m256 y = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
    return _mm256_andnot_ps(tiny, y);
}

AVX2 static void vexp_avx2(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float tx[8] = { 0 }, ty[8];
        memcpy(tx, x + i, (n - i) * sizeof(float));
        _mm256_storeu_ps(ty, exp8(_mm256_loadu_ps(tx)));
        memcpy(y + i, ty, (n - i) * sizeof(float));
    }
}

AVX2 static float hmax8(__m256 v)
{
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_shuffle_ps(a, a, 1));
    return _mm_cvtss_f32(a);
}

AVX2 static double hsum8(__m256 v)
{
    float t[8];
    double s = 0;
    _mm256_storeu_ps(t, v);
    for (int i = 0; i < 8; i++)
        s += t[i];
    return s;
}

/* Max that remembers NaN separately: vmaxps drops NaN depending on operand
 * order, so NaN is tracked with an unordered compare instead. */
AVX2 static float row_max_avx2(const float *x, size_t n, float scale, int *has_nan)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, nn = _mm256_setzero_ps();
    __m256 s = _mm256_set1_ps(scale);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
        __m256 b = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), s);
        nn = _mm256_or_ps(nn, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
        m0 = _mm256_max_ps(m0, a);
        m1 = _mm256_max_ps(m1, b);
    }
    float m = hmax8(_mm256_max_ps(m0, m1));
    int nan = _mm256_movemask_ps(nn) != 0;
    for (; i < n; i++) {
        float v = x[i] * scale;
        if (v != v)
            nan = 1;
        else if (v > m)
            m = v;
    }
    *has_nan = nan;
    return m;
}

AVX2 static double exp_shift_sum_avx2(const float *x, float *y, size_t n, float scale, float m)
{
    __m256 s = _mm256_set1_ps(scale), mm = _mm256_set1_ps(m);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 e0 = exp8_nonpos(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), s, mm));
        __m256 e1 = exp8_nonpos(_mm256_fmsub_ps(_mm256_loadu_ps(x + i + 8), s, mm));
        __m256 e2 = exp8_nonpos(_mm256_fmsub_ps(_mm256_loadu_ps(x + i + 16), s, mm));
        __m256 e3 = exp8_nonpos(_mm256_fmsub_ps(_mm256_loadu_ps(x + i + 24), s, mm));
        _mm256_storeu_ps(y + i, e0);
        _mm256_storeu_ps(y + i + 8, e1);
        _mm256_storeu_ps(y + i + 16, e2);
        _mm256_storeu_ps(y + i + 24, e3);
        a0 = _mm256_add_ps(a0, e0);
        a1 = _mm256_add_ps(a1, e1);
        a2 = _mm256_add_ps(a2, e2);
        a3 = _mm256_add_ps(a3, e3);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 e0 = exp8_nonpos(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), s, mm));
        _mm256_storeu_ps(y + i, e0);
        a0 = _mm256_add_ps(a0, e0);
    }
    double sum = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    if (i < n) {
        float t[8];
        size_t r = n - i;
        for (size_t k = 0; k < r; k++)
            t[k] = fmaf(x[i + k], scale, -m);
        for (size_t k = r; k < 8; k++)
            t[k] = -INFINITY; /* padding contributes exactly 0 */
        _mm256_storeu_ps(t, exp8_nonpos(_mm256_loadu_ps(t)));
        for (size_t k = 0; k < r; k++) {
            y[i + k] = t[k];
            sum += t[k];
        }
    }
    return sum;
}

AVX2 static void scale_avx2(float *y, size_t n, float s)
{
    __m256 v = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), v));
    for (; i < n; i++)
        y[i] *= s;
}

AVX2 static double sum_avx2(const float *x, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    double s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        s += x[i];
    return s;
}

AVX2 static double sqdev_avx2(const float *x, size_t n, float mean)
{
    __m256 m = _mm256_set1_ps(mean);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
        __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m);
        __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), m);
        __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), m);
        a0 = _mm256_fmadd_ps(d0, d0, a0);
        a1 = _mm256_fmadd_ps(d1, d1, a1);
        a2 = _mm256_fmadd_ps(d2, d2, a2);
        a3 = _mm256_fmadd_ps(d3, d3, a3);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
        a0 = _mm256_fmadd_ps(d0, d0, a0);
    }
    double s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) {
        double d = (double)x[i] - mean;
        s += d * d;
    }
    return s;
}

AVX2 static void ln_apply_avx2(const float *x, float *y, size_t n, float mean, float rstd,
    const float *gamma, const float *beta)
{
    __m256 m = _mm256_set1_ps(mean), r = _mm256_set1_ps(rstd);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m), r);
        __m256 g = gamma ? _mm256_loadu_ps(gamma + i) : _mm256_set1_ps(1.0f);
        __m256 b = beta ? _mm256_loadu_ps(beta + i) : _mm256_setzero_ps();
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(v, g, b));
    }
    for (; i < n; i++)
        y[i] = (x[i] - mean) * rstd * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
}
#endif /* KERN_X86 */

/* ---- portable fallbacks ---- */

static float row_max_port(const float *x, size_t n, float scale, int *has_nan)
{
    float m = -INFINITY;
    int nan = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i] * scale;
        if (v != v)
            nan = 1;
        else if (v > m)
            m = v;
    }
    *has_nan = nan;
    return m;
}

static double exp_shift_sum_port(const float *x, float *y, size_t n, float scale, float m)
{
    double s[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        y[i] = expf(x[i] * scale - m);
        s[i & 3] += y[i];
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static double sum_port(const float *x, size_t n)
{
    double s[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < n; i++)
        s[i & 3] += x[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static double sqdev_port(const float *x, size_t n, float mean)
{
    double s[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - mean;
        s[i & 3] += d * d;
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* ---- dispatch ---- */

void comet_kernels_vexp(const float *x, float *y, size_t n)
{
    if (!x || !y)
        return;
#ifdef KERN_X86
    if (kern_use_avx2()) {
        vexp_avx2(x, y, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

static float row_max_scaled(const float *x, size_t n, float scale, int *has_nan)
{
#ifdef KERN_X86
    if (kern_use_avx2())
        return row_max_avx2(x, n, scale, has_nan);
#endif
    return row_max_port(x, n, scale, has_nan);
}

float kern_row_max(const float *x, size_t n, int *has_nan)
{
    return row_max_scaled(x, n, 1.0f, has_nan);
}

static double exp_shift_sum_scaled(const float *x, float *y, size_t n, float scale, float m)
{
#ifdef KERN_X86
    if (kern_use_avx2())
        return exp_shift_sum_avx2(x, y, n, scale, m);
#endif
    return exp_shift_sum_port(x, y, n, scale, m);
}

double kern_exp_shift_sum(const float *x, float *y, size_t n, float m)
{
    return exp_shift_sum_scaled(x, y, n, 1.0f, m);
}

void kern_scale(float *y, size_t n, float s)
{
#ifdef KERN_X86
    if (kern_use_avx2()) {
        scale_avx2(y, n, s);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        y[i] *= s;
}

double kern_row_sum(const float *x, size_t n)
{
#ifdef KERN_X86
    if (kern_use_avx2())
        return sum_avx2(x, n);
#endif
    return sum_port(x, n);
}

static double row_sqdev(const float *x, size_t n, float mean)
{
#ifdef KERN_X86
    if (kern_use_avx2())
        return sqdev_avx2(x, n, mean);
#endif
    return sqdev_port(x, n, mean);
}

void kern_softmax_row(const float *x, float *y, size_t n, float scale)
{
    int nan = 0;
    float m = row_max_scaled(x, n, scale, &nan);
    if (nan) {
        for (size_t i = 0; i < n; i++)
            y[i] = NAN;
        return;
    }
    if (m == -INFINITY) {
        /* every entry masked: the row carries no probability mass */
        memset(y, 0, n * sizeof(float));
        return;
    }
    double s = exp_shift_sum_scaled(x, y, n, scale, m);
    kern_scale(y, n, (float)(1.0 / s));
}

void kern_layernorm_row(
    const float *x, float *y, size_t n, const float *gamma, const float *beta, float eps)
{
    /* Two passes over the cache-resident row: mean, then squared deviations
     * (never E[x^2]-E[x]^2, which cancels catastrophically). */
    float mean = (float)(kern_row_sum(x, n) / (double)n);
    double var = row_sqdev(x, n, mean) / (double)n;
    float rstd = (float)(1.0 / sqrt(var + (double)eps));
#ifdef KERN_X86
    if (kern_use_avx2()) {
        ln_apply_avx2(x, y, n, mean, rstd, gamma, beta);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        y[i] = (x[i] - mean) * rstd * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
}

int comet_kernels_softmax_rows(
    size_t M, size_t N, const float *X, size_t ldx, float *Y, size_t ldy, float scale, int threads)
{
    if (!X || !Y || M == 0 || N == 0 || ldx < N || ldy < N || threads <= 0 || !isfinite(scale))
        return -EINVAL;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < M; i++)
        kern_softmax_row(X + i * ldx, Y + i * ldy, N, scale);
    return 0;
}

int comet_kernels_layernorm_rows(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, const float *gamma, const float *beta, float eps, int threads)
{
    if (!X || !Y || M == 0 || N == 0 || ldx < N || ldy < N || threads <= 0 || !(eps > 0)
        || !isfinite(eps))
        return -EINVAL;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < M; i++)
        kern_layernorm_row(X + i * ldx, Y + i * ldy, N, gamma, beta, eps);
    return 0;
}
