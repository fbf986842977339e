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

static void layernorm_row_wide(
    const float *x, float *y, size_t n, const float *gamma, const float *beta, float eps);

/* The ISA paths: detected once, chosen once (environment), overridable. */
static int isa_detected = -1, isa_chosen = -1, isa_active = -1;

comet_kernels_isa comet_kernels_isa_detected(void)
{
    if (isa_detected < 0) {
        int d = COMET_KERNELS_ISA_PORTABLE;
#ifdef KERN_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            d = COMET_KERNELS_ISA_AVX2;
        if (d == COMET_KERNELS_ISA_AVX2 && __builtin_cpu_supports("avx512f"))
            d = COMET_KERNELS_ISA_AVX512;
#endif
        isa_detected = d;
    }
    return (comet_kernels_isa)isa_detected;
}

static const char *const isa_names[] = { "portable", "avx2", "avx512" };

const char *comet_kernels_isa_name(comet_kernels_isa isa)
{
    return (unsigned)isa < 3 ? isa_names[isa] : "unknown";
}

int comet_kernels_isa_parse(const char *name, comet_kernels_isa *isa)
{
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, isa_names[i])) {
            *isa = (comet_kernels_isa)i;
            return 0;
        }
    return -EINVAL;
}

comet_kernels_isa comet_kernels_isa_active(void)
{
    if (isa_active < 0) {
        comet_kernels_isa d = comet_kernels_isa_detected(), want = d;
        const char *e = getenv("COMET_KERNELS_ISA");
        if (e && comet_kernels_isa_parse(e, &want) == 0 && want <= d)
            d = want;
        else if (getenv("COMET_KERNELS_NO_AVX512") && d > COMET_KERNELS_ISA_AVX2)
            d = COMET_KERNELS_ISA_AVX2;
        isa_chosen = isa_active = (int)d;
    }
    return (comet_kernels_isa)isa_active;
}

int comet_kernels_set_isa(comet_kernels_isa isa)
{
    if ((unsigned)isa > COMET_KERNELS_ISA_AVX512 || isa > comet_kernels_isa_detected())
        return -ENOTSUP;
    comet_kernels_isa_active(); /* the environment's choice, for force_portable(0) */
    isa_active = (int)isa;
    return 0;
}

void comet_kernels_force_portable(int on)
{
    comet_kernels_isa_active();
    isa_active = on ? COMET_KERNELS_ISA_PORTABLE : isa_chosen;
}

int kern_use_avx2(void)
{
    return comet_kernels_isa_active() >= COMET_KERNELS_ISA_AVX2;
}

int kern_use_avx512(void)
{
    return comet_kernels_isa_active() >= COMET_KERNELS_ISA_AVX512;
}

int comet_kernels_have_avx2(void)
{
    return kern_use_avx2();
}

int comet_kernels_have_avx512(void)
{
    return kern_use_avx512();
}

double comet_kernels_exp_shifted_max_rel_error(double dist)
{
    /* the paths carry the difference's rounding error into the reduction
     * (a two-sum; double in the scalar path), so what is left of the
     * argument's rounding is the low part's own: |dist| 2^-48 */
    return comet_kernels_exp_max_rel_error() + fabs(dist) * 3.552713678800501e-15;
}

double comet_kernels_exp_max_rel_error(void)
{
    /* Measured by tests/kernels over [-87.3, 88.7] against exp() in double:
     * about 1.4e-7 (under 2 ulp); the bound stated here is 3 ulp. */
    return 3.0 * 5.96e-8 * 2.0;
}

/* exp(x - shift) for elements i0..n-1, scalar: the vector paths' tails and
 * the portable fallback. */
static void vexps_scalar(const float *x, float *y, size_t i0, size_t n, float shift)
{
    /* the difference in double: a float subtraction would round the argument
     * by up to |x - shift| 2^-24, 65 ulp of the result near -87 */
    for (size_t i = i0; i < n; i++) {
        double t = (double)x[i] - (double)shift;
        y[i] = t > 0 ? 1.0f : (float)exp(t);
    }
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
AVX2 static inline __m256 exp8_nonpos_tail(__m256 k, __m256 r, __m256 tiny);

AVX2 static inline __m256 exp8_nonpos(__m256 t)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __m256 tiny = _mm256_cmp_ps(t, _mm256_set1_ps(-87.3365402f), _CMP_LT_OQ);
    __m256 k = _mm256_fmadd_ps(t, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 n = _mm256_sub_ps(k, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    return exp8_nonpos_tail(k, r, tiny);
}

/* exp(t + lo) for t + lo <= 0, where lo is the rounding error of t (a
 * two-sum's low part): the reduction t - n ln2_hi is exact (Sterbenz), so
 * adding lo after it keeps the argument's low bits that t alone lost. */
AVX2 static inline __m256 exp8_nonpos2(__m256 t, __m256 lo)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __m256 tiny = _mm256_cmp_ps(t, _mm256_set1_ps(-87.3365402f), _CMP_LT_OQ);
    __m256 k = _mm256_fmadd_ps(t, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 n = _mm256_sub_ps(k, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_add_ps(r, lo);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    return exp8_nonpos_tail(k, r, tiny);
}

/* exp8_nonpos's polynomial on the reduced r and 2^n from k's low bits */
AVX2 static inline __m256 exp8_nonpos_tail(__m256 k, __m256 r, __m256 tiny)
{
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

/* exp(x - shift) for x <= shift: the softmax form, through the cheaper
 * exp8_nonpos the row passes use. Larger x are clamped to exp(0); NaN
 * passes through. */
AVX2 static void vexps_avx2(const float *x, float *y, size_t n, float shift)
{
    const __m256 msh = _mm256_set1_ps(-shift), z = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        /* two-sum: t + lo = x - shift exactly (lo is 0 where t is not finite
         * or clamped, so -inf still gives 0 and x > shift gives 1) */
        __m256 a = _mm256_loadu_ps(x + i);
        __m256 t = _mm256_add_ps(a, msh);
        __m256 bb = _mm256_sub_ps(t, a);
        __m256 lo = _mm256_add_ps(_mm256_sub_ps(a, _mm256_sub_ps(t, bb)), _mm256_sub_ps(msh, bb));
        __m256 nan = _mm256_cmp_ps(t, t, _CMP_UNORD_Q);
        __m256 keep
            = _mm256_and_ps(_mm256_cmp_ps(lo, lo, _CMP_ORD_Q), _mm256_cmp_ps(t, z, _CMP_LT_OQ));
        __m256 e = exp8_nonpos2(_mm256_min_ps(t, z), _mm256_and_ps(lo, keep));
        _mm256_storeu_ps(y + i, _mm256_blendv_ps(e, t, nan));
    }
    vexps_scalar(x, y, i, n, shift);
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

/* A row's output written out a vector at a time while the next row is being
 * computed (software pipelining across rows): the NT stores then drain while
 * the core computes instead of after it. Softmax: y = src * a (src the
 * exps); LayerNorm: y = ((src - a) * b) * gamma + beta (src the input row,
 * still cached). */
typedef struct row_out {
    const float *src;
    float *y;
    const float *gamma, *beta;
    size_t n, i;
    float a, b;
    int ln, stream, active;
} row_out;

/* How many rows ahead of row r (of r..r1) the middle pass prefetches: two
 * for rows up to 64 KiB (measured at N = 4096: a few % over one, the
 * lines have a whole row's compute to arrive), one up to 256 KiB, none
 * beyond (the prefetched rows would evict the working rows from L2; the
 * hardware prefetcher streams them). */
static inline size_t pf_rows(size_t n, size_t r, size_t r1)
{
    size_t d = n <= 16384 ? 2 : (n <= 65536 ? 1 : 0);
    return r + d < r1 ? d : 0;
}

/* One element of the pending output (heads and tails). */
static inline float outq_scalar(const row_out *q, size_t i)
{
    if (!q->ln)
        return q->src[i] * q->a;
    return (q->src[i] - q->a) * q->b * (q->gamma ? q->gamma[i] : 1.0f)
        + (q->beta ? q->beta[i] : 0.0f);
}

AVX2 static inline __m256 outq8_vec(const row_out *q, size_t i)
{
    __m256 v = _mm256_loadu_ps(q->src + i);
    if (!q->ln)
        return _mm256_mul_ps(v, _mm256_set1_ps(q->a));
    v = _mm256_mul_ps(_mm256_sub_ps(v, _mm256_set1_ps(q->a)), _mm256_set1_ps(q->b));
    __m256 g = q->gamma ? _mm256_loadu_ps(q->gamma + i) : _mm256_set1_ps(1.0f);
    __m256 b = q->beta ? _mm256_loadu_ps(q->beta + i) : _mm256_setzero_ps();
    return _mm256_fmadd_ps(v, g, b);
}

/* AVX2 flavour of the pending-output writer: scalar head up to the first
 * 32-byte boundary of y when streaming, 8-wide steps, scalar tail. */
AVX2 static void outq8_begin(row_out *q)
{
    q->i = 0;
    q->active = 1;
    if (q->stream)
        for (; q->i < q->n && ((uintptr_t)(q->y + q->i) & 31); q->i++)
            q->y[q->i] = outq_scalar(q, q->i);
}

AVX2 static inline void outq8_step(row_out *q)
{
    if (!q->active || q->i + 8 > q->n)
        return;
    __m256 v = outq8_vec(q, q->i);
    if (q->stream)
        _mm256_stream_ps(q->y + q->i, v);
    else
        _mm256_storeu_ps(q->y + q->i, v);
    q->i += 8;
}

AVX2 static void outq8_finish(row_out *q)
{
    if (!q->active)
        return;
    while (q->i + 8 <= q->n)
        outq8_step(q);
    for (; q->i < q->n; q->i++)
        q->y[q->i] = outq_scalar(q, q->i);
    q->active = 0;
}

/* y = exp(x*scale - m), returns the sum; one line of pf (the next row, or
 * NULL) is prefetched per 16 elements. */
AVX2 static double exp_shift_sum_avx2(
    const float *x, float *y, size_t n, float scale, float m, const float *pf, row_out *q)
{
    __m256 s = _mm256_set1_ps(scale), mm = _mm256_set1_ps(m);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        if (pf) {
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 16), _MM_HINT_T0);
        }
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
        if (q) {
            outq8_step(q);
            outq8_step(q);
            outq8_step(q);
            outq8_step(q);
        }
    }
    for (; i + 8 <= n; i += 8) {
        __m256 e0 = exp8_nonpos(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), s, mm));
        _mm256_storeu_ps(y + i, e0);
        a0 = _mm256_add_ps(a0, e0);
        if (q)
            outq8_step(q);
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

AVX2 static double sqdev_avx2(const float *x, size_t n, float mean, const float *pf, row_out *q)
{
    __m256 m = _mm256_set1_ps(mean);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        if (pf) {
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 16), _MM_HINT_T0);
        }
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
        __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m);
        __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), m);
        __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), m);
        a0 = _mm256_fmadd_ps(d0, d0, a0);
        a1 = _mm256_fmadd_ps(d1, d1, a1);
        a2 = _mm256_fmadd_ps(d2, d2, a2);
        a3 = _mm256_fmadd_ps(d3, d3, a3);
        if (q) {
            outq8_step(q);
            outq8_step(q);
            outq8_step(q);
            outq8_step(q);
        }
    }
    for (; i + 8 <= n; i += 8) {
        __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
        a0 = _mm256_fmadd_ps(d0, d0, a0);
        if (q)
            outq8_step(q);
    }
    double s = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) {
        double d = (double)x[i] - mean;
        s += d * d;
    }
    return s;
}

/* ---- whole-row passes (softmax and LayerNorm over rows of a matrix) ----
 *
 * One row is processed while it sits in L1/L2: the first pass reads it from
 * memory (softmax: max and NaN check; LayerNorm: sum), the middle pass works
 * on the cached row (softmax: exp into a scratch row and its sum; LayerNorm:
 * squared deviations from the mean) and prefetches the caller's next row so
 * the memory stays busy while the core computes, and the last pass writes
 * the output once, with non-temporal stores when `stream` is set (a row pass
 * over a matrix far beyond the caches: the stores then skip the read for
 * ownership of each output line, which would be a third stream). With
 * e == y the exps go straight into the output row (in place, fused tiles). */

/* Softmax over rows r0..r1, pipelined across rows like the AVX-512
 * version below (scratch: two rows of ldscr floats, or NULL). */
AVX2 static void softmax_rows_avx2(size_t r0, size_t r1, size_t n, const float *X, size_t ldx,
    float *Y, size_t ldy, float scale, float *scratch, size_t ldscr, int stream)
{
    row_out q = { .n = n, .stream = stream };
    for (size_t r = r0; r < r1; r++) {
        const float *x = X + r * ldx, *pf = pf_rows(n, r, r1) ? x + pf_rows(n, r, r1) * ldx : NULL;
        float *y = Y + r * ldy;
        int nan = 0;
        float m = row_max_avx2(x, n, scale, &nan);
        if (nan || m == -INFINITY) {
            /* NaN anywhere: a NaN row; every entry masked: no probability mass */
            outq8_finish(&q);
            float v = nan ? NAN : 0.0f;
            for (size_t i = 0; i < n; i++)
                y[i] = v;
            continue;
        }
        float *e = scratch ? scratch + (r & 1) * ldscr : y;
        double s = exp_shift_sum_avx2(x, e, n, scale, m, pf, &q);
        outq8_finish(&q);
        q.src = e;
        q.y = y;
        q.a = (float)(1.0 / s);
        outq8_begin(&q);
    }
    outq8_finish(&q);
}

/* LayerNorm over rows r0..r1 (two passes over each cached row), pipelined
 * across rows. */
AVX2 static void layernorm_rows_avx2(size_t r0, size_t r1, size_t n, const float *X, size_t ldx,
    float *Y, size_t ldy, const float *gamma, const float *beta, float eps, int stream)
{
    row_out q = { .n = n, .stream = stream, .ln = 1, .gamma = gamma, .beta = beta };
    for (size_t r = r0; r < r1; r++) {
        const float *x = X + r * ldx, *pf = pf_rows(n, r, r1) ? x + pf_rows(n, r, r1) * ldx : NULL;
        double sum = sum_avx2(x, n);
        float mean = (float)(sum / (double)n);
        double var = isfinite(sum) ? sqdev_avx2(x, n, mean, pf, &q) / (double)n : INFINITY;
        outq8_finish(&q);
        if (!isfinite(var)) {
            /* float squares overflow beyond a spread of ~1e19 (or the sum
             * beyond ~3e38): this row in double */
            layernorm_row_wide(x, Y + r * ldy, n, gamma, beta, eps);
            continue;
        }
        q.src = x;
        q.y = Y + r * ldy;
        q.a = mean;
        q.b = (float)(1.0 / sqrt(var + (double)eps));
        outq8_begin(&q);
    }
    outq8_finish(&q);
}

#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* exp8_nonpos on 16 lanes: same reduction, polynomial and flush to 0 below
 * the smallest normal, so the same error bound. */
AVX512 static inline __m512 exp16_nonpos(__m512 t)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __mmask16 tiny = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-87.3365402f), _CMP_LT_OQ);
    __m512 k = _mm512_fmadd_ps(t, _mm512_set1_ps(1.44269504088896341f), magic);
    __m512 n = _mm512_sub_ps(k, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(8.2903197283e-03f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1897950501e-02f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6667636273e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999149377e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.9999970713e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_castps_si512(k), 23);
    /* the flush to 0 rides on the exponent add (zero-masking) */
    return _mm512_castsi512_ps(_mm512_maskz_add_epi32((__mmask16)~tiny, _mm512_castps_si512(p), e));
}

/* exp8_nonpos2 on 16 lanes: the low part lo of the argument is added after
 * the exact first reduction step. */
AVX512 static inline __m512 exp16_nonpos2(__m512 t, __m512 lo)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23 */
    __mmask16 tiny = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-87.3365402f), _CMP_LT_OQ);
    __m512 k = _mm512_fmadd_ps(t, _mm512_set1_ps(1.44269504088896341f), magic);
    __m512 n = _mm512_sub_ps(k, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
    r = _mm512_add_ps(r, lo);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(8.2903197283e-03f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1897950501e-02f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6667636273e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999149377e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.9999970713e-01f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_castps_si512(k), 23);
    return _mm512_castsi512_ps(_mm512_maskz_add_epi32((__mmask16)~tiny, _mm512_castps_si512(p), e));
}

/* vexps_avx2 on 16 lanes (the two-sum difference, then exp16_nonpos2). */
AVX512 static void vexps_avx512(const float *x, float *y, size_t n, float shift)
{
    const __m512 msh = _mm512_set1_ps(-shift), z = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 a = _mm512_loadu_ps(x + i);
        __m512 t = _mm512_add_ps(a, msh);
        __m512 bb = _mm512_sub_ps(t, a);
        __m512 lo = _mm512_add_ps(_mm512_sub_ps(a, _mm512_sub_ps(t, bb)), _mm512_sub_ps(msh, bb));
        __mmask16 nan = _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q);
        __mmask16 keep
            = _mm512_cmp_ps_mask(lo, lo, _CMP_ORD_Q) & _mm512_cmp_ps_mask(t, z, _CMP_LT_OQ);
        __m512 e = exp16_nonpos2(_mm512_min_ps(t, z), _mm512_maskz_mov_ps(keep, lo));
        _mm512_storeu_ps(y + i, _mm512_mask_blend_ps(nan, e, t));
    }
    vexps_scalar(x, y, i, n, shift);
}

static inline __mmask16 tail_mask(size_t r)
{
    return (__mmask16)((1u << r) - 1u);
}

/* Row max of x*scale with NaN tracked by an unordered compare (vmaxps drops
 * NaN depending on operand order); four accumulators. */
AVX512 static float row_max_avx512(const float *x, size_t n, float scale, int *has_nan)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY), s = _mm512_set1_ps(scale);
    __m512 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    __mmask16 nn = 0;
    size_t i = 0;
    /* scale 1 (the unfused passes, whose GEMM applied the scale) skips the
     * multiply; x * 1 is x, NaN included */
    int one = scale == 1.0f;
    for (; i + 64 <= n; i += 64) {
        __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16),
               c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
        if (!one) {
            a = _mm512_mul_ps(a, s);
            b = _mm512_mul_ps(b, s);
            c = _mm512_mul_ps(c, s);
            d = _mm512_mul_ps(d, s);
        }
        nn |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, d, _CMP_UNORD_Q);
        m0 = _mm512_max_ps(m0, a);
        m1 = _mm512_max_ps(m1, b);
        m2 = _mm512_max_ps(m2, c);
        m3 = _mm512_max_ps(m3, d);
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : tail_mask(n - i);
        /* masked-off lanes become -inf after the multiply (-inf * 0 is NaN) */
        __m512 a = _mm512_mask_mul_ps(ninf, k, _mm512_maskz_loadu_ps(k, x + i), s);
        nn |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
        m0 = _mm512_max_ps(m0, a);
    }
    *has_nan = nn != 0;
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

AVX512 static double hsum16(__m512 v)
{
    float t[16];
    double s = 0;
    _mm512_storeu_ps(t, v);
    for (int i = 0; i < 16; i++)
        s += t[i];
    return s;
}

AVX512 static inline __m512 outq_vec(const row_out *q, size_t i, __mmask16 k)
{
    __m512 v = _mm512_maskz_loadu_ps(k, q->src + i);
    if (!q->ln)
        return _mm512_mul_ps(v, _mm512_set1_ps(q->a));
    v = _mm512_mul_ps(_mm512_sub_ps(v, _mm512_set1_ps(q->a)), _mm512_set1_ps(q->b));
    __m512 g = q->gamma ? _mm512_maskz_loadu_ps(k, q->gamma + i) : _mm512_set1_ps(1.0f);
    __m512 b = q->beta ? _mm512_maskz_loadu_ps(k, q->beta + i) : _mm512_setzero_ps();
    return _mm512_fmadd_ps(v, g, b);
}

/* Starts a row: the elements before the first 64-byte line of y (NT stores
 * need aligned lines) go out with one masked store. */
AVX512 static void outq_begin(row_out *q)
{
    q->i = 0;
    q->active = 1;
    if (!q->stream)
        return;
    size_t head = ((64 - ((uintptr_t)q->y & 63)) & 63) / sizeof(float);
    if (head > q->n)
        head = q->n;
    if (head) {
        __mmask16 k = tail_mask(head);
        _mm512_mask_storeu_ps(q->y, k, outq_vec(q, 0, k));
        q->i = head;
    }
}

/* Writes the next full vector of the pending row, if any. */
AVX512 static inline void outq_step(row_out *q)
{
    if (!q->active || q->i + 16 > q->n)
        return;
    __m512 v = outq_vec(q, q->i, (__mmask16)0xFFFF);
    if (q->stream)
        _mm512_stream_ps(q->y + q->i, v);
    else
        _mm512_storeu_ps(q->y + q->i, v);
    q->i += 16;
}

/* Writes what is left of the pending row (full vectors, masked tail). */
AVX512 static void outq_finish(row_out *q)
{
    if (!q->active)
        return;
    while (q->i + 16 <= q->n)
        outq_step(q);
    if (q->i < q->n) {
        __mmask16 k = tail_mask(q->n - q->i);
        _mm512_mask_storeu_ps(q->y + q->i, k, outq_vec(q, q->i, k));
    }
    q->active = 0;
}

/* e = exp(x*scale - m), returns the sum (four accumulators); prefetches one
 * line of pf per 16 elements and writes one vector of q per 16 elements. */
AVX512 static double exp_shift_sum_avx512(
    const float *x, float *e, size_t n, float scale, float m, const float *pf, row_out *q)
{
    const __m512 s = _mm512_set1_ps(scale), mm = _mm512_set1_ps(m);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if (pf) {
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 16), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 32), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 48), _MM_HINT_T0);
        }
        __m512 e0 = exp16_nonpos(_mm512_fmsub_ps(_mm512_loadu_ps(x + i), s, mm));
        __m512 e1 = exp16_nonpos(_mm512_fmsub_ps(_mm512_loadu_ps(x + i + 16), s, mm));
        __m512 e2 = exp16_nonpos(_mm512_fmsub_ps(_mm512_loadu_ps(x + i + 32), s, mm));
        __m512 e3 = exp16_nonpos(_mm512_fmsub_ps(_mm512_loadu_ps(x + i + 48), s, mm));
        _mm512_storeu_ps(e + i, e0);
        _mm512_storeu_ps(e + i + 16, e1);
        _mm512_storeu_ps(e + i + 32, e2);
        _mm512_storeu_ps(e + i + 48, e3);
        a0 = _mm512_add_ps(a0, e0);
        a1 = _mm512_add_ps(a1, e1);
        a2 = _mm512_add_ps(a2, e2);
        a3 = _mm512_add_ps(a3, e3);
        if (q) {
            outq_step(q);
            outq_step(q);
            outq_step(q);
            outq_step(q);
        }
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : tail_mask(n - i);
        if (pf)
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
        /* masked-off lanes get t = -inf: exp gives exactly 0 there */
        __m512 t = _mm512_mask_fmsub_ps(_mm512_maskz_loadu_ps(k, x + i), k, s, mm);
        t = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), k, t);
        __m512 e0 = exp16_nonpos(t);
        _mm512_mask_storeu_ps(e + i, k, e0);
        a0 = _mm512_add_ps(a0, e0);
        if (q)
            outq_step(q);
    }
    return hsum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* Softmax over rows r0..r1 of X into Y. scratch (two rows of ldscr floats,
 * or NULL: then the exps go to the output row) takes the exps of the
 * current row while the previous row's output is written from the other. */
AVX512 static void softmax_rows_avx512(size_t r0, size_t r1, size_t n, const float *X, size_t ldx,
    float *Y, size_t ldy, float scale, float *scratch, size_t ldscr, int stream)
{
    row_out q = { .n = n, .stream = stream };
    for (size_t r = r0; r < r1; r++) {
        const float *x = X + r * ldx, *pf = pf_rows(n, r, r1) ? x + pf_rows(n, r, r1) * ldx : NULL;
        float *y = Y + r * ldy;
        int nan = 0;
        float m = row_max_avx512(x, n, scale, &nan);
        if (nan || m == -INFINITY) {
            /* NaN anywhere: a NaN row; every entry masked: no probability mass */
            outq_finish(&q);
            float v = nan ? NAN : 0.0f;
            for (size_t i = 0; i < n; i++)
                y[i] = v;
            continue;
        }
        float *e = scratch ? scratch + (r & 1) * ldscr : y;
        double s = exp_shift_sum_avx512(x, e, n, scale, m, pf, &q);
        outq_finish(&q);
        q.src = e;
        q.y = y;
        q.a = (float)(1.0 / s);
        outq_begin(&q);
    }
    outq_finish(&q);
}

AVX512 static double sum_avx512(const float *x, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : tail_mask(n - i);
        a0 = _mm512_add_ps(a0, _mm512_maskz_loadu_ps(k, x + i));
    }
    return hsum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* Sum of squared deviations from mean (second pass, row cached); prefetches
 * pf and writes q like exp_shift_sum_avx512. */
AVX512 static double sqdev_avx512(const float *x, size_t n, float mean, const float *pf, row_out *q)
{
    const __m512 m = _mm512_set1_ps(mean);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if (pf) {
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 16), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 32), _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + i + 48), _MM_HINT_T0);
        }
        __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), m);
        __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), m);
        __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), m);
        __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), m);
        a0 = _mm512_fmadd_ps(d0, d0, a0);
        a1 = _mm512_fmadd_ps(d1, d1, a1);
        a2 = _mm512_fmadd_ps(d2, d2, a2);
        a3 = _mm512_fmadd_ps(d3, d3, a3);
        if (q) {
            outq_step(q);
            outq_step(q);
            outq_step(q);
            outq_step(q);
        }
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : tail_mask(n - i);
        if (pf)
            _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
        /* masked-off lanes are 0, not 0 - mean */
        __m512 d0 = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + i), m);
        a0 = _mm512_fmadd_ps(d0, d0, a0);
        if (q)
            outq_step(q);
    }
    return hsum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* LayerNorm over rows r0..r1: per row the mean, then the squared deviations
 * (two passes over the cached row; never E[x^2]-E[x]^2, which cancels
 * catastrophically) while the previous row's output is written. */
AVX512 static void layernorm_rows_avx512(size_t r0, size_t r1, size_t n, const float *X, size_t ldx,
    float *Y, size_t ldy, const float *gamma, const float *beta, float eps, int stream)
{
    row_out q = { .n = n, .stream = stream, .ln = 1, .gamma = gamma, .beta = beta };
    for (size_t r = r0; r < r1; r++) {
        const float *x = X + r * ldx, *pf = pf_rows(n, r, r1) ? x + pf_rows(n, r, r1) * ldx : NULL;
        double sum = sum_avx512(x, n);
        float mean = (float)(sum / (double)n);
        double var = isfinite(sum) ? sqdev_avx512(x, n, mean, pf, &q) / (double)n : INFINITY;
        outq_finish(&q);
        if (!isfinite(var)) {
            /* float squares overflow beyond a spread of ~1e19 (or the sum
             * beyond ~3e38): this row in double */
            layernorm_row_wide(x, Y + r * ldy, n, gamma, beta, eps);
            continue;
        }
        q.src = x;
        q.y = Y + r * ldy;
        q.a = mean;
        q.b = (float)(1.0 / sqrt(var + (double)eps));
        outq_begin(&q);
    }
    outq_finish(&q);
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

/* LayerNorm of one row entirely in double: the portable path, and the
 * vector paths' fallback for rows whose float statistics overflow. The
 * output is the float of the double result (inf only where it is). */
static void layernorm_row_wide(
    const float *x, float *y, size_t n, const float *gamma, const float *beta, float eps)
{
    double mean = sum_port(x, n) / (double)n, s[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - mean;
        s[i & 3] += d * d;
    }
    double var = ((s[0] + s[1]) + (s[2] + s[3])) / (double)n;
    double rstd = 1.0 / sqrt(var + (double)eps);
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(((double)x[i] - mean) * rstd * (gamma ? gamma[i] : 1.0f)
            + (beta ? beta[i] : 0.0f));
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

void comet_kernels_vexp_shifted(const float *x, float *y, size_t n, float shift)
{
    if (!x || !y)
        return;
#ifdef KERN_X86
    if (kern_use_avx512()) {
        vexps_avx512(x, y, n, shift);
        return;
    }
    if (kern_use_avx2()) {
        vexps_avx2(x, y, n, shift);
        return;
    }
#endif
    vexps_scalar(x, y, 0, n, shift);
}

static float row_max_scaled(const float *x, size_t n, float scale, int *has_nan)
{
#ifdef KERN_X86
    if (kern_use_avx512())
        return row_max_avx512(x, n, scale, has_nan);
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
    if (kern_use_avx512())
        return exp_shift_sum_avx512(x, y, n, scale, m, NULL, NULL);
    if (kern_use_avx2())
        return exp_shift_sum_avx2(x, y, n, scale, m, NULL, NULL);
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

static double sum_port_or_vec(const float *x, size_t n)
{
#ifdef KERN_X86
    if (kern_use_avx512())
        return sum_avx512(x, n);
    if (kern_use_avx2())
        return sum_avx2(x, n);
#endif
    return sum_port(x, n);
}

double kern_row_sum(const float *x, size_t n)
{
    double s = sum_port_or_vec(x, n);
    /* float accumulators overflow on rows of huge finite values: the sum in
     * double is exact enough and never overflows */
    return isfinite(s) ? s : sum_port(x, n);
}

/* Row passes over rows r0..r1: AVX-512 where the CPU has it
 * (COMET_KERNELS_NO_AVX512 turns it off), else AVX2+FMA, else portable.
 * scratch (two rows of ldscr floats, or NULL) receives the exps so the
 * output is written once; stream selects NT stores for the output. */
static void softmax_rows_any(size_t r0, size_t r1, size_t n, const float *X, size_t ldx, float *Y,
    size_t ldy, float scale, float *scratch, size_t ldscr, int stream)
{
#ifdef KERN_X86
    if (kern_use_avx512()) {
        softmax_rows_avx512(r0, r1, n, X, ldx, Y, ldy, scale, scratch, ldscr, stream);
        return;
    }
    if (kern_use_avx2()) {
        softmax_rows_avx2(r0, r1, n, X, ldx, Y, ldy, scale, scratch, ldscr, stream);
        return;
    }
#endif
    (void)stream;
    (void)ldscr;
    for (size_t r = r0; r < r1; r++) {
        const float *x = X + r * ldx;
        float *y = Y + r * ldy, *e = scratch ? scratch : y;
        int nan = 0;
        float m = row_max_port(x, n, scale, &nan);
        if (nan || m == -INFINITY) {
            /* NaN anywhere: a NaN row; every entry masked: no probability mass */
            float v = nan ? NAN : 0.0f;
            for (size_t i = 0; i < n; i++)
                y[i] = v;
            continue;
        }
        float inv = (float)(1.0 / exp_shift_sum_port(x, e, n, scale, m));
        for (size_t i = 0; i < n; i++)
            y[i] = e[i] * inv;
    }
}

static void layernorm_rows_any(size_t r0, size_t r1, size_t n, const float *X, size_t ldx, float *Y,
    size_t ldy, const float *gamma, const float *beta, float eps, int stream)
{
#ifdef KERN_X86
    if (kern_use_avx512()) {
        layernorm_rows_avx512(r0, r1, n, X, ldx, Y, ldy, gamma, beta, eps, stream);
        return;
    }
    if (kern_use_avx2()) {
        layernorm_rows_avx2(r0, r1, n, X, ldx, Y, ldy, gamma, beta, eps, stream);
        return;
    }
#endif
    (void)stream;
    for (size_t r = r0; r < r1; r++) {
        const float *x = X + r * ldx;
        float *y = Y + r * ldy;
        layernorm_row_wide(x, y, n, gamma, beta, eps);
    }
}

void kern_softmax_row(const float *x, float *y, size_t n, float scale)
{
    softmax_rows_any(0, 1, n, x, n, y, n, scale, NULL, 0, 0);
}

void kern_layernorm_row(
    const float *x, float *y, size_t n, const float *gamma, const float *beta, float eps)
{
    layernorm_rows_any(0, 1, n, x, n, y, n, gamma, beta, eps, 0);
}

void kern_softmax_rows_tile(size_t m, size_t n, const float *X, size_t ldx, float *Y, size_t ldy,
    float scale, float *scratch, size_t ldscr, int stream)
{
    softmax_rows_any(0, m, n, X, ldx, Y, ldy, scale, scratch, ldscr, stream && scratch);
}

void kern_layernorm_rows_tile(size_t m, size_t n, const float *X, size_t ldx, float *Y, size_t ldy,
    const float *gamma, const float *beta, float eps, int stream)
{
    layernorm_rows_any(0, m, n, X, ldx, Y, ldy, gamma, beta, eps, stream);
}

/* Outputs at least this large are written with non-temporal stores: a row
 * pass over a matrix of this size is not followed by a re-read from cache
 * (half the 32 MiB L3 of the machine this was tuned on; the passes also read
 * an input of the same size). */
static size_t stream_min_bytes = (size_t)16 << 20;

void kern_set_stream_min_bytes(size_t bytes)
{
    stream_min_bytes = bytes;
}

/* 0 makes the softmax rows run as if the scratch rows could not be
 * allocated (exps into the output row), for tests. */
static int row_scratch = 1;

void kern_set_row_scratch(int on)
{
    row_scratch = on;
}

int kern_stream_output(size_t bytes)
{
    return bytes >= stream_min_bytes;
}

void kern_stream_fence(int stream)
{
#ifdef KERN_X86
    if (stream)
        _mm_sfence(); /* NT stores are weakly ordered: publish before the barrier */
#else
    (void)stream;
#endif
}

void kern_thread_rows(size_t M, size_t *r0, size_t *r1)
{
    size_t t = 0, nt = 1;
#ifdef _OPENMP
    extern int omp_get_thread_num(void), omp_get_num_threads(void);
    t = (size_t)omp_get_thread_num();
    nt = (size_t)omp_get_num_threads();
#endif
    *r0 = M * t / nt;
    *r1 = M * (t + 1) / nt;
}

/* The policy's decision for an output of M x N floats: 1 stream, 0 cache,
 * -1 an unknown policy. */
static int stores_stream(comet_kernels_stores stores, size_t M, size_t N)
{
    switch (stores) {
    case COMET_KERNELS_STORES_AUTO:
        return (double)M * (double)N * sizeof(float) >= (double)stream_min_bytes;
    case COMET_KERNELS_STORES_CACHED:
        return 0;
    case COMET_KERNELS_STORES_STREAM:
        return 1;
    }
    return -1;
}

int comet_kernels_softmax_rows(
    size_t M, size_t N, const float *X, size_t ldx, float *Y, size_t ldy, float scale, int threads)
{
    return comet_kernels_softmax_rows_ex(
        M, N, X, ldx, Y, ldy, scale, threads, COMET_KERNELS_STORES_AUTO);
}

int kern_softmax_rows_ex(size_t M, size_t N, const float *X, size_t ldx, float *Y, size_t ldy,
    float scale, int threads, int may_stream)
{
    return comet_kernels_softmax_rows_ex(M, N, X, ldx, Y, ldy, scale, threads,
        may_stream ? COMET_KERNELS_STORES_AUTO : COMET_KERNELS_STORES_CACHED);
}

int comet_kernels_softmax_rows_ex(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, float scale, int threads, comet_kernels_stores stores)
{
    const int stream = stores_stream(stores, M, N);
    if (!X || !Y || M == 0 || N == 0 || ldx < N || ldy < N || threads <= 0 || !isfinite(scale)
        || stream < 0)
        return -EINVAL;
#pragma omp parallel num_threads(threads)
    {
        size_t r0, r1;
        kern_thread_rows(M, &r0, &r1);
        /* the exps go to scratch rows that stay in L1/L2, so the output is
         * written exactly once; without them (no memory) they go to y */
        size_t ldscr = (N + 15) / 16 * 16;
        float *e = r1 > r0 && row_scratch ? aligned_alloc(64, 2 * ldscr * sizeof(float)) : NULL;
        int st = stream && e;
        softmax_rows_any(r0, r1, N, X, ldx, Y, ldy, scale, e, ldscr, st);
        kern_stream_fence(st);
        free(e);
    }
    return 0;
}

int comet_kernels_layernorm_rows(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, const float *gamma, const float *beta, float eps, int threads)
{
    return comet_kernels_layernorm_rows_ex(
        M, N, X, ldx, Y, ldy, gamma, beta, eps, threads, COMET_KERNELS_STORES_AUTO);
}

int comet_kernels_layernorm_rows_ex(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, const float *gamma, const float *beta, float eps, int threads,
    comet_kernels_stores stores)
{
    const int stream = stores_stream(stores, M, N);
    if (!X || !Y || M == 0 || N == 0 || ldx < N || ldy < N || threads <= 0 || !(eps > 0)
        || !isfinite(eps) || stream < 0)
        return -EINVAL;
#pragma omp parallel num_threads(threads)
    {
        size_t r0, r1;
        kern_thread_rows(M, &r0, &r1);
        layernorm_rows_any(r0, r1, N, X, ldx, Y, ldy, gamma, beta, eps, stream);
        kern_stream_fence(stream);
    }
    return 0;
}
