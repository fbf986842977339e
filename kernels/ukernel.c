/* Own register-blocked GEMM for the fused kernels at small K, where
 * OpenBLAS re-packs B on every row-block call and loses to a simple kernel:
 * B is packed once into 16-column panels ([panel][k][16], zero padded), and a
 * 6x16 tile of C lives in 12 ymm registers across the whole K loop (AVX2);
 * with AVX-512, 12x32 tiles in 24 zmm registers (6x32 at a 6-row edge). */
#include "kernels_internal.h"

#include <cblas.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define UK_MR  COMET_KERNELS_TILE_ROWS
#define UK_MR2 COMET_KERNELS_TILE_ROWS_AVX512
#define UK_NR  16

/* 16-wide panels of n columns (keys, for K^T) */
static size_t pack_panels(size_t n)
{
    return (n + UK_NR - 1) / UK_NR;
}

size_t kern_packed_b_floats(size_t K, size_t N)
{
    return K * pack_panels(N) * UK_NR;
}

void kern_pack_b(size_t K, size_t N, const float *B, size_t ldb, float *Bp)
{
    const size_t np = pack_panels(N);
    for (size_t p = 0; p < np; p++) {
        size_t j0 = p * UK_NR, w = N - j0 < UK_NR ? N - j0 : UK_NR;
        float *dst = Bp + p * K * UK_NR;
        if (w == UK_NR) {
            /* a whole panel row is one fixed-size copy: inlined as vector
             * moves, not a library call per 64 bytes (2-3x the pack) */
            for (size_t k = 0; k < K; k++)
                memcpy(dst + k * UK_NR, B + k * ldb + j0, UK_NR * sizeof(float));
            continue;
        }
        for (size_t k = 0; k < K; k++) {
            memcpy(dst + k * UK_NR, B + k * ldb + j0, w * sizeof(float));
            memset(dst + k * UK_NR + w, 0, (UK_NR - w) * sizeof(float));
        }
    }
}

#if defined(__x86_64__)
/* One 6x16 tile: C[mr x nr] = alpha * A[mr rows] * Bp panel. Rows past mr
 * re-read row mr-1 (their results are dropped) so edges stay vectorized;
 * a partial tile goes through a small buffer so nothing past C's edge is
 * touched. */
__attribute__((target("avx2,fma"))) static void tile_6x16(size_t mr, size_t nr, size_t K,
    const float *A, size_t lda, const float *Bp, float *C, size_t ldc, float alpha, int acc)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *a0 = A, *a1 = A + (mr > 1 ? 1 : 0) * lda, *a2 = A + (mr > 2 ? 2 : mr - 1) * lda,
                *a3 = A + (mr > 3 ? 3 : mr - 1) * lda, *a4 = A + (mr > 4 ? 4 : mr - 1) * lda,
                *a5 = A + (mr > 5 ? 5 : mr - 1) * lda;
    for (size_t k = 0; k < K; k++) {
        __m256 b0 = _mm256_loadu_ps(Bp + k * UK_NR), b1 = _mm256_loadu_ps(Bp + k * UK_NR + 8);
        __m256 a = _mm256_broadcast_ss(a0 + k);
        c00 = _mm256_fmadd_ps(a, b0, c00);
        c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(a1 + k);
        c10 = _mm256_fmadd_ps(a, b0, c10);
        c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(a2 + k);
        c20 = _mm256_fmadd_ps(a, b0, c20);
        c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(a3 + k);
        c30 = _mm256_fmadd_ps(a, b0, c30);
        c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(a4 + k);
        c40 = _mm256_fmadd_ps(a, b0, c40);
        c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(a5 + k);
        c50 = _mm256_fmadd_ps(a, b0, c50);
        c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    __m256 al = _mm256_set1_ps(alpha);
    if (acc && mr == UK_MR && nr == UK_NR) { /* whole tile: C += alpha c in vectors */
        __m256 cc[UK_MR][2] = { { c00, c01 }, { c10, c11 }, { c20, c21 }, { c30, c31 },
            { c40, c41 }, { c50, c51 } };
#pragma GCC unroll 6
        for (int i = 0; i < UK_MR; i++) {
            float *ci = C + i * ldc;
            _mm256_storeu_ps(ci, _mm256_fmadd_ps(cc[i][0], al, _mm256_loadu_ps(ci)));
            _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(cc[i][1], al, _mm256_loadu_ps(ci + 8)));
        }
        return;
    }
    float tmp[UK_MR * UK_NR];
    int full = mr == UK_MR && nr == UK_NR && !acc;
    float *D = full ? C : tmp;
    size_t ld = full ? ldc : UK_NR;
    _mm256_storeu_ps(D, _mm256_mul_ps(c00, al));
    _mm256_storeu_ps(D + 8, _mm256_mul_ps(c01, al));
    _mm256_storeu_ps(D + ld, _mm256_mul_ps(c10, al));
    _mm256_storeu_ps(D + ld + 8, _mm256_mul_ps(c11, al));
    _mm256_storeu_ps(D + 2 * ld, _mm256_mul_ps(c20, al));
    _mm256_storeu_ps(D + 2 * ld + 8, _mm256_mul_ps(c21, al));
    _mm256_storeu_ps(D + 3 * ld, _mm256_mul_ps(c30, al));
    _mm256_storeu_ps(D + 3 * ld + 8, _mm256_mul_ps(c31, al));
    _mm256_storeu_ps(D + 4 * ld, _mm256_mul_ps(c40, al));
    _mm256_storeu_ps(D + 4 * ld + 8, _mm256_mul_ps(c41, al));
    _mm256_storeu_ps(D + 5 * ld, _mm256_mul_ps(c50, al));
    _mm256_storeu_ps(D + 5 * ld + 8, _mm256_mul_ps(c51, al));
    if (acc) {
        for (size_t i = 0; i < mr; i++)
            for (size_t j = 0; j < nr; j++)
                C[i * ldc + j] += tmp[i * UK_NR + j];
    } else if (!full) {
        for (size_t i = 0; i < mr; i++)
            memcpy(C + i * ldc, tmp + i * UK_NR, nr * sizeof(float));
    }
}
#endif

#if defined(__x86_64__)
/* A 32-column tile staged in tmp (edge or accumulate) lands in C. */
static void tile32_put(size_t mr, size_t nr, const float *tmp, float *C, size_t ldc, int acc)
{
    for (size_t i = 0; i < mr; i++) {
        if (acc)
            for (size_t j = 0; j < nr; j++)
                C[i * ldc + j] += tmp[i * 2 * UK_NR + j];
        else
            memcpy(C + i * ldc, tmp + i * 2 * UK_NR, nr * sizeof(float));
    }
}

/* AVX-512 tile of R rows over two adjacent 16-column panels: 2R zmm
 * accumulators, same packed layout as the AVX2 path (so one packing serves
 * both). Rows past mr re-read row mr-1; a partial tile goes through a
 * buffer; a whole tile accumulates in vectors. R = 12 keeps 24 of the 32
 * registers on C, so each B vector loaded feeds 12 FMAs (6 rows run into
 * the L1 load ports at large K: 126 against OpenBLAS's 160 GFLOP/s at
 * K=256 on a Xeon); R = 6 serves a block's last 1-6 rows. */
__attribute__((target("avx512f"), always_inline)) static inline void tile_rx32(int R, size_t mr,
    size_t nr, size_t K, const float *A, size_t lda, const float *Bp0, const float *Bp1, float *C,
    size_t ldc, float alpha, int acc)
{
    __m512 c[UK_MR2][2];
    const float *a[UK_MR2];
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) {
        c[i][0] = _mm512_setzero_ps();
        c[i][1] = _mm512_setzero_ps();
        a[i] = A + ((size_t)i < mr ? (size_t)i : mr - 1) * lda;
    }
    for (size_t k = 0; k < K; k++) {
        __m512 b0 = _mm512_loadu_ps(Bp0 + k * UK_NR), b1 = _mm512_loadu_ps(Bp1 + k * UK_NR);
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            __m512 av = _mm512_set1_ps(a[i][k]);
            c[i][0] = _mm512_fmadd_ps(av, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(av, b1, c[i][1]);
        }
    }
    __m512 al = _mm512_set1_ps(alpha);
    if (acc && mr == (size_t)R && nr == 2 * UK_NR) { /* whole tile: C += alpha c */
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            float *ci = C + i * ldc;
            _mm512_storeu_ps(ci, _mm512_fmadd_ps(c[i][0], al, _mm512_loadu_ps(ci)));
            _mm512_storeu_ps(ci + 16, _mm512_fmadd_ps(c[i][1], al, _mm512_loadu_ps(ci + 16)));
        }
        return;
    }
    float tmp[UK_MR2 * 2 * UK_NR];
    int full = mr == (size_t)R && nr == 2 * UK_NR && !acc;
    float *D = full ? C : tmp;
    size_t ld = full ? ldc : 2 * UK_NR;
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) {
        _mm512_storeu_ps(D + i * ld, _mm512_mul_ps(c[i][0], al));
        _mm512_storeu_ps(D + i * ld + 16, _mm512_mul_ps(c[i][1], al));
    }
    if (acc || !full)
        tile32_put(mr, nr, tmp, C, ldc, acc);
}

__attribute__((target("avx512f"))) static void tile_6x32(size_t mr, size_t nr, size_t K,
    const float *A, size_t lda, const float *Bp0, const float *Bp1, float *C, size_t ldc,
    float alpha, int acc)
{
    tile_rx32(UK_MR, mr, nr, K, A, lda, Bp0, Bp1, C, ldc, alpha, acc);
}

__attribute__((target("avx512f"))) static void tile_12x32(size_t mr, size_t nr, size_t K,
    const float *A, size_t lda, const float *Bp0, const float *Bp1, float *C, size_t ldc,
    float alpha, int acc)
{
    tile_rx32(UK_MR2, mr, nr, K, A, lda, Bp0, Bp1, C, ldc, alpha, acc);
}
#endif

/* Portable fallback tile: mr x nr of the 6x16 tile. */
static void tile_generic(size_t mr, size_t nr, size_t K, const float *A, size_t lda,
    const float *Bp, float *C, size_t ldc, float alpha, int accum)
{
    float acc[UK_MR][UK_NR];
    memset(acc, 0, sizeof acc);
    for (size_t k = 0; k < K; k++)
        for (size_t i = 0; i < mr; i++) {
            float a = A[i * lda + k];
            for (size_t j = 0; j < UK_NR; j++)
                acc[i][j] += a * Bp[k * UK_NR + j];
        }
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nr; j++)
            C[i * ldc + j] = alpha * acc[i][j] + (accum ? C[i * ldc + j] : 0.0f);
}

void kern_ukernel_gemm(size_t mb, size_t N, size_t K, float alpha, const float *A, size_t lda,
    const float *Bp, float *C, size_t ldc)
{
    kern_ukernel_gemm_ex(mb, N, K, alpha, A, lda, Bp, K * UK_NR, 0, C, ldc);
}

void kern_ukernel_gemm_ex(size_t mb, size_t N, size_t K, float alpha, const float *A, size_t lda,
    const float *Bp, size_t pstride, int accumulate, float *C, size_t ldc)
{
    size_t np = pack_panels(N);
    int avx2 = kern_use_avx2(), avx512 = kern_use_avx512();
    /* Column chunks whose packed B (K x nc floats) stays in L2 (~128 KiB)
     * while every 6-row group of the block sweeps it: B comes from L2, the
     * group's A rows from L1, and C is written row-contiguously (a
     * panel-outer order writes 16-float columns at a 16 KiB stride, which
     * all land in one L1 set). */
    size_t pc = (32 * 1024) / (K * UK_NR);
    if (pc < 1)
        pc = 1;
    for (size_t p0 = 0; p0 < np; p0 += pc) {
        size_t p1 = p0 + pc < np ? p0 + pc : np;
        for (size_t i0 = 0; i0 < mb; i0 += UK_MR) {
            size_t mr = mb - i0 < UK_MR ? mb - i0 : UK_MR;
#if defined(__x86_64__)
            if (avx512 && mb - i0 > UK_MR) { /* 12 rows (7..12 left) at once */
                size_t mr2 = mb - i0 < UK_MR2 ? mb - i0 : UK_MR2, p = p0;
                for (; p + 1 < p1; p += 2) {
                    size_t j0 = p * UK_NR, nr2 = N - j0 < 2 * UK_NR ? N - j0 : 2 * UK_NR;
                    tile_12x32(mr2, nr2, K, A + i0 * lda, lda, Bp + p * pstride,
                        Bp + (p + 1) * pstride, C + i0 * ldc + j0, ldc, alpha, accumulate);
                }
                for (; p < p1; p++) { /* an odd last panel: two 6-row tiles */
                    size_t j0 = p * UK_NR, nr = N - j0 < UK_NR ? N - j0 : UK_NR;
                    for (size_t h = 0; h < mr2; h += UK_MR)
                        tile_6x16(mr2 - h < UK_MR ? mr2 - h : UK_MR, nr, K, A + (i0 + h) * lda, lda,
                            Bp + p * pstride, C + (i0 + h) * ldc + j0, ldc, alpha, accumulate);
                }
                i0 += UK_MR; /* the loop adds the other 6 */
                continue;
            }
#endif
            for (size_t p = p0; p < p1; p++) {
                size_t j0 = p * UK_NR, nr = N - j0 < UK_NR ? N - j0 : UK_NR;
                const float *bp = Bp + p * pstride;
#if defined(__x86_64__)
                if (avx512 && p + 1 < p1) { /* two panels at once */
                    size_t nr2 = N - j0 < 2 * UK_NR ? N - j0 : 2 * UK_NR;
                    tile_6x32(mr, nr2, K, A + i0 * lda, lda, bp, bp + pstride, C + i0 * ldc + j0,
                        ldc, alpha, accumulate);
                    p++;
                    continue;
                }
                if (avx2) {
                    tile_6x16(mr, nr, K, A + i0 * lda, lda, bp, C + i0 * ldc + j0, ldc, alpha,
                        accumulate);
                    continue;
                }
#endif
                tile_generic(
                    mr, nr, K, A + i0 * lda, lda, bp, C + i0 * ldc + j0, ldc, alpha, accumulate);
            }
        }
    }
    (void)avx2;
    (void)avx512;
}

size_t kern_packed_kt_floats(size_t lk, size_t d)
{
    return pack_panels(lk) * UK_NR * d;
}

#if defined(__x86_64__)
/* 8 keys x 8 columns of K, transposed into the panel's [c][16] rows at key
 * offset jj0 (8 rows of 8 floats in, 8 out). */
__attribute__((target("avx2"))) static void kt_8x8(
    const float *K, size_t d, size_t c0, float *dst, size_t jj0)
{
    __m256 r0 = _mm256_loadu_ps(K + 0 * d + c0), r1 = _mm256_loadu_ps(K + 1 * d + c0);
    __m256 r2 = _mm256_loadu_ps(K + 2 * d + c0), r3 = _mm256_loadu_ps(K + 3 * d + c0);
    __m256 r4 = _mm256_loadu_ps(K + 4 * d + c0), r5 = _mm256_loadu_ps(K + 5 * d + c0);
    __m256 r6 = _mm256_loadu_ps(K + 6 * d + c0), r7 = _mm256_loadu_ps(K + 7 * d + c0);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    float *o = dst + c0 * UK_NR + jj0;
    _mm256_storeu_ps(o + 0 * UK_NR, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(o + 1 * UK_NR, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(o + 2 * UK_NR, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(o + 3 * UK_NR, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(o + 4 * UK_NR, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(o + 5 * UK_NR, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(o + 6 * UK_NR, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(o + 7 * UK_NR, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

static void pack_kt(size_t lk, size_t d, const float *K, float *Kp)
{
    /* B = K^T (d x lk): panel p holds keys 16p..16p+15 as [c][16] */
    const size_t np = pack_panels(lk);
#if defined(__x86_64__)
    /* whole panels in 8 x 8 register transposes: the scalar loop reads K
     * down its columns and took 1.1 cycles a float, 4-5% of fused attention
     * at 256 keys (Zen 4 VM, d = 64) */
    const size_t c8 = kern_use_avx2() ? d / 8 * 8 : 0;
#endif
    for (size_t p = 0; p < np; p++) {
        float *dst = Kp + p * d * UK_NR;
        const size_t j0 = p * UK_NR;
        size_t c = 0;
#if defined(__x86_64__)
        /* a whole panel's columns in 8-wide blocks; the rest (and a partial
         * last panel) element by element */
        const size_t cv = lk - j0 >= UK_NR ? c8 : 0;
        for (; c < cv; c += 8) {
            kt_8x8(K + j0 * d, d, c, dst, 0);
            kt_8x8(K + (j0 + 8) * d, d, c, dst, 8);
        }
#endif
        for (; c < d; c++)
            for (size_t jj = 0; jj < UK_NR; jj++) {
                size_t j = j0 + jj;
                dst[c * UK_NR + jj] = j < lk ? K[j * d + c] : 0.0f;
            }
    }
}

size_t kern_packed_v_floats(size_t lk, size_t d)
{
    return pack_panels(d) * UK_NR * lk;
}

void kern_pack_attn_head(size_t lk, size_t d, const float *K, const float *V, float *dst)
{
    pack_kt(lk, d, K, dst);
    /* V's panel q: columns 16q..16q+15 as [j][16], panel stride lk*16 */
    kern_pack_b(lk, d, V, d, dst + kern_packed_kt_floats(lk, d));
}
