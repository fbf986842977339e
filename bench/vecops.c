/* The vector ops the memory bench times (float32): exp, max, sum, sub, div,
 * mul, sqrt, at the vector width the kernels' row passes use on this CPU
 * (AVX-512, else AVX2, chosen at run time) and a portable fallback. These
 * give the per-element costs the model's SIMD unit needs; exp is the kernels
 * library's own softmax exponential, exp(x - s) after the row max. */
#include "bench_internal.h"
#include "comet_kernels.h"

#include <errno.h>
#include <immintrin.h>
#include <math.h>

#define AVX2 __attribute__((target("avx2,fma")))

#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* the kernels' ISA choice (COMET_KERNELS_ISA included): one switch for both */
static int have_avx2(void)
{
    return comet_kernels_have_avx2();
}

const char *bench_vecop_impl(void)
{
    return comet_kernels_have_avx512() ? "avx512" : have_avx2() ? "avx2" : "scalar";
}

/* The accumulators' lanes, then the tail, into one max (NaN kept) or sum. */
static float fold(const float *t, size_t nt, const float *x, size_t n, int mx)
{
    float r = mx ? -INFINITY : 0;
    for (size_t j = 0; j < nt + n; j++) {
        float v = j < nt ? t[j] : x[j - nt];
        r = mx ? ((v > r || v != v) ? v : r) : r + v;
    }
    return r;
}

AVX2 static int vecop_avx2(int op, const float *x, float *y, size_t n, float s, float *red)
{
    size_t i = 0;
    const __m256 vs = _mm256_set1_ps(s);
    switch (op) {
    case BENCH_VMAX:
    case BENCH_VSUM: {
        /* Four accumulators (NaN rules are the kernels library's job; this times). */
        int mx = op == BENCH_VMAX;
        __m256 init = mx ? _mm256_set1_ps(-INFINITY) : _mm256_setzero_ps();
        __m256 a0 = init, a1 = init, a2 = init, a3 = init;
        for (; i + 32 <= n; i += 32) {
            __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
            __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
            if (mx) {
                a0 = _mm256_max_ps(v0, a0);
                a1 = _mm256_max_ps(v1, a1);
                a2 = _mm256_max_ps(v2, a2);
                a3 = _mm256_max_ps(v3, a3);
            } else {
                a0 = _mm256_add_ps(a0, v0);
                a1 = _mm256_add_ps(a1, v1);
                a2 = _mm256_add_ps(a2, v2);
                a3 = _mm256_add_ps(a3, v3);
            }
        }
        float t[32];
        _mm256_storeu_ps(t, a0);
        _mm256_storeu_ps(t + 8, a1);
        _mm256_storeu_ps(t + 16, a2);
        _mm256_storeu_ps(t + 24, a3);
        *red = fold(t, 32, x + i, n - i, mx);
        return 0;
    }
    case BENCH_VSUB:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
        for (; i < n; i++)
            y[i] = x[i] - s;
        return 0;
    case BENCH_VDIV:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(x + i), vs));
        for (; i < n; i++)
            y[i] = x[i] / s;
        return 0;
    case BENCH_VMUL:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
        for (; i < n; i++)
            y[i] = x[i] * s;
        return 0;
    case BENCH_VSQRT:
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
        for (; i < n; i++)
            y[i] = sqrtf(x[i]);
        return 0;
    default:
        return -EINVAL;
    }
}

AVX512 static int vecop_avx512(int op, const float *x, float *y, size_t n, float s, float *red)
{
    size_t i = 0;
    const __m512 vs = _mm512_set1_ps(s);
    switch (op) {
    case BENCH_VMAX:
    case BENCH_VSUM: {
        int mx = op == BENCH_VMAX;
        __m512 init = mx ? _mm512_set1_ps(-INFINITY) : _mm512_setzero_ps();
        __m512 a0 = init, a1 = init, a2 = init, a3 = init;
        for (; i + 64 <= n; i += 64) {
            __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
            __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
            if (mx) {
                a0 = _mm512_max_ps(v0, a0);
                a1 = _mm512_max_ps(v1, a1);
                a2 = _mm512_max_ps(v2, a2);
                a3 = _mm512_max_ps(v3, a3);
            } else {
                a0 = _mm512_add_ps(a0, v0);
                a1 = _mm512_add_ps(a1, v1);
                a2 = _mm512_add_ps(a2, v2);
                a3 = _mm512_add_ps(a3, v3);
            }
        }
        float t[64];
        _mm512_storeu_ps(t, a0);
        _mm512_storeu_ps(t + 16, a1);
        _mm512_storeu_ps(t + 32, a2);
        _mm512_storeu_ps(t + 48, a3);
        *red = fold(t, 64, x + i, n - i, mx);
        return 0;
    }
    case BENCH_VSUB:
    case BENCH_VDIV:
    case BENCH_VMUL:
    case BENCH_VSQRT:
        for (; i + 16 <= n; i += 16) {
            __m512 v = _mm512_loadu_ps(x + i);
            v = op == BENCH_VSUB   ? _mm512_sub_ps(v, vs)
                : op == BENCH_VDIV ? _mm512_div_ps(v, vs)
                : op == BENCH_VMUL ? _mm512_mul_ps(v, vs)
                                   : _mm512_sqrt_ps(v);
            _mm512_storeu_ps(y + i, v);
        }
        for (; i < n; i++)
            y[i] = op == BENCH_VSUB ? x[i] - s
                : op == BENCH_VDIV  ? x[i] / s
                : op == BENCH_VMUL  ? x[i] * s
                                    : sqrtf(x[i]);
        return 0;
    default:
        return -EINVAL;
    }
}

static int vecop_scalar(int op, const float *x, float *y, size_t n, float s, float *red)
{
    float r;
    switch (op) {
    case BENCH_VMAX:
        r = -INFINITY;
        for (size_t i = 0; i < n; i++)
            r = (x[i] > r || x[i] != x[i]) ? x[i] : r;
        *red = r;
        return 0;
    case BENCH_VSUM:
        r = 0;
        for (size_t i = 0; i < n; i++)
            r += x[i];
        *red = r;
        return 0;
    case BENCH_VSUB:
        for (size_t i = 0; i < n; i++)
            y[i] = x[i] - s;
        return 0;
    case BENCH_VDIV:
        for (size_t i = 0; i < n; i++)
            y[i] = x[i] / s;
        return 0;
    case BENCH_VMUL:
        for (size_t i = 0; i < n; i++)
            y[i] = x[i] * s;
        return 0;
    case BENCH_VSQRT:
        for (size_t i = 0; i < n; i++)
            y[i] = sqrtf(x[i]);
        return 0;
    default:
        return -EINVAL;
    }
}

int bench_vecop(int op, const float *x, float *y, size_t n, float s, float *red)
{
    float dummy;
    if (!red)
        red = &dummy;
    if (op == BENCH_VEXP) {
        /* the exp the kernels run (kernels/vmath.c, its own ISA switch), not
         * a copy of it: the profile's exp cost is then the cost the row
         * passes and fused epilogues pay */
        comet_kernels_vexp_shifted(x, y, n, s);
        return 0;
    }
    /* the kernels' own switch (COMET_KERNELS_NO_AVX512 included) */
    if (comet_kernels_have_avx512())
        return vecop_avx512(op, x, y, n, s, red);
    return have_avx2() ? vecop_avx2(op, x, y, n, s, red) : vecop_scalar(op, x, y, n, s, red);
}
