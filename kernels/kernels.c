/* Compound kernels: GEMM-Softmax, GEMM-LayerNorm, self-attention, fused and
 * unfused; parameters, workspace sizing, analytic FLOPs and bytes. */
#include "kernels_internal.h"

#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const char *const op_names[] = { "gemm_softmax", "gemm_layernorm", "attention" };
static const char *const variant_names[] = { "unfused", "fused", "unfused_same_gemm" };

const char *comet_kernels_op_name(comet_kernels_op op)
{
    return (unsigned)op < 3 ? op_names[op] : "unknown";
}

const char *comet_kernels_variant_name(comet_kernels_variant v)
{
    return (unsigned)v < COMET_KERNELS_NVARIANTS ? variant_names[v] : "unknown";
}

int comet_kernels_op_parse(const char *name, comet_kernels_op *op)
{
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, op_names[i])) {
            *op = (comet_kernels_op)i;
            return 0;
        }
    return -EINVAL;
}

int comet_kernels_variant_parse(const char *name, comet_kernels_variant *v)
{
    for (int i = 0; name && i < COMET_KERNELS_NVARIANTS; i++)
        if (!strcmp(name, variant_names[i])) {
            *v = (comet_kernels_variant)i;
            return 0;
        }
    return -EINVAL;
}

int kern_check_dims(size_t a, size_t b, size_t c, size_t *prod)
{
    if (a == 0 || b == 0 || c == 0)
        return -EINVAL;
    /* BLAS and MPI take int dimensions and leading dimensions: a dimension
     * of 2^31 or more would be truncated into a wrong result */
    if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return -EOVERFLOW;
    if (b > SIZE_MAX / a || c > SIZE_MAX / (a * b))
        return -EOVERFLOW;
    size_t p = a * b * c;
    /* room for sizeof(float) and a few buffers of this size */
    if (p > SIZE_MAX / 64)
        return -EOVERFLOW;
    if (prod)
        *prod = p;
    return 0;
}

#define UKERNEL_MAX_K 512

/* A product of at most this many bytes per thread runs op by op (one BLAS
 * GEMM per thread's rows, then the pass in cache): row blocking's fixed
 * costs (packing B, short blocks, per-block calls) show there. Zen 4 VM,
 * both paths in one process, interleaved, with each thread packing its own
 * B (kernels/README.md): blocked against op by op 1.04x at 128 KiB a thread
 * (128x256x64, 1 thread), 1.05-1.26x at 256x256 on 2 threads, 1.00x at 256
 * KiB on 1, 0.94-0.98x from 512 KiB; across two L3s op by op lost 10-34%
 * (OpenBLAS's calls from two threads). It was 512 KiB while the team shared
 * B's panels (the blocked path then ran at 0.72-0.97x up to 256 x 512). */
#define SMALL_ROWOP_BYTES (128u * 1024u)

/* Small GEMM row ops on auto settings run op by op in cache: one BLAS GEMM
 * into the output, the pass in place (the fused and same-GEMM variants
 * alike: the choice of method by size is the kernels', not a variant's). */
static int small_rowop(const comet_kernels_params *p, size_t M, size_t N)
{
    /* gemm_only (calibration's "GEMM inside fused") keeps the blocked path */
    return p->ukernel == 0 && !p->gemm_only
        && M * N * sizeof(float) <= SMALL_ROWOP_BYTES * (size_t)p->threads;
}

static void fill_defaults(comet_kernels_op op, const comet_kernels_shape *s,
    const comet_kernels_params *in, comet_kernels_params *p);

int comet_kernels_op_by_op(comet_kernels_op op, comet_kernels_variant v,
    const comet_kernels_shape *shape, const comet_kernels_params *in)
{
    comet_kernels_params p;
    if (!shape || op == COMET_KERNELS_ATTENTION || v == COMET_KERNELS_UNFUSED
        || (unsigned)v >= COMET_KERNELS_NVARIANTS)
        return 0;
    fill_defaults(op, shape, in, &p);
    return small_rowop(&p, shape->M, shape->N);
}

static int use_ukernel(const comet_kernels_params *p, size_t K)
{
    if (p->ukernel == 2)
        return 0;
    if (p->ukernel == 1)
        return 1;
    /* Auto: measured side by side at M=N=4096, 1 thread (tests/perf/kernel_perf,
     * GEMM only): with B packed once and L2-sized column chunks the own AVX2
     * kernel runs 82/110/113 GFLOP/s at K=16/64/256 against 62/97/98 for
     * OpenBLAS 0.3.21 (Haswell kernels) on the same row blocks (it re-packs B
     * per call) and 60/96/108 for one whole sgemm; at K=1024 OpenBLAS's deeper
     * blocking wins. The AVX-512 tile (Zen 5 here) runs 159/202/214. On a
     * Xeon with AVX-512 OpenBLAS (SkylakeX kernels) the 12x32 tile runs
     * 141/176/155 against 33/100/162 for one whole sgemm. */
    return kern_use_avx2() && K <= UKERNEL_MAX_K;
}

void comet_kernels_default_params(comet_kernels_op op, const comet_kernels_shape *s, size_t l1,
    size_t l2, size_t l3, int threads, comet_kernels_params *p)
{
    (void)l3;
    memset(p, 0, sizeof *p);
    p->threads = threads > 0 ? threads : 1;
    p->ukernel = 0;
    p->eps = 1e-5f;
    if (!l2)
        l2 = 512 * 1024;
    if (!l1)
        l1 = 32 * 1024;
    if (op == COMET_KERNELS_ATTENTION) {
        p->scale = s && s->d ? (float)(1.0 / sqrt((double)s->d)) : 1.0f;
        /* S tile (tile_m x tile_n) plus the O accumulator fit in half of L2. */
        /* measured at Lq=Lk=4096, d=64, 1 thread, micro-kernel path: 96x512
         * within 1% of the best of 48..256 x 256..1024; a multiple of the
         * micro-kernel's 6 rows (128 wastes 4 of 132 computed rows) */
        p->tile_m = 96;
        p->tile_n = 512;
        while (p->tile_n > 32 && (p->tile_m * p->tile_n + p->tile_m * (s ? s->d : 64)) * 4 > l2 / 2)
            p->tile_n /= 2;
        return;
    }
    p->scale = 1.0f;
    size_t N = s && s->N ? s->N : 1024, K = s ? s->K : 64;
    /* A fused tile of tile_m output rows stays in half of L2 while the
     * epilogue runs; the BLAS path prefers taller blocks (it re-packs B per
     * call), so it may use the whole L2. */
    int uk = kern_use_avx2() && K <= UKERNEL_MAX_K;
    size_t budget = uk ? l2 / 2 : l2;
    size_t rows = budget / (N * sizeof(float));
    if (uk) {
        rows = rows / 6 * 6;
        if (rows < 6)
            rows = 6;
    } else {
        rows = rows / 16 * 16;
        if (rows < 16)
            rows = 16;
    }
    /* at least ~4 blocks per thread so dynamic scheduling balances */
    if (s && s->M) {
        size_t cap = (s->M + 4 * (size_t)p->threads - 1) / (4 * (size_t)p->threads);
        size_t q = uk ? 6 : 16;
        cap = (cap + q - 1) / q * q;
        if (rows > cap)
            rows = cap;
        if (rows > s->M)
            rows = s->M;
    }
    p->tile_m = rows;
}

/* Attention's fused GEMMs through the own micro-kernel: K^T and V packed
 * once per head, KV tiles aligned to the 16-key panels. */
static int attn_ukernel(const comet_kernels_params *p, size_t d)
{
    if (p->ukernel == 2 || p->tile_n % 16 != 0)
        return 0;
    return p->ukernel == 1 || (kern_use_avx2() && d <= UKERNEL_MAX_K);
}

static void fill_defaults(comet_kernels_op op, const comet_kernels_shape *s,
    const comet_kernels_params *in, comet_kernels_params *p)
{
    comet_kernels_default_params(op, s, 0, 0, 0, in ? in->threads : 1, p);
    if (!in)
        return;
    if (in->tile_m)
        p->tile_m = in->tile_m;
    if (in->tile_n)
        p->tile_n = in->tile_n;
    p->ukernel = in->ukernel;
    if (in->scale != 0)
        p->scale = in->scale;
    if (in->eps != 0)
        p->eps = in->eps;
    p->causal = in->causal;
    p->gemm_only = in->gemm_only;
    p->threads = in->threads;
}

static int check_params(const comet_kernels_params *p)
{
    if (!p || p->threads <= 0 || p->threads > 4096 || !isfinite(p->scale) || !(p->eps > 0)
        || !isfinite(p->eps))
        return -EINVAL;
    return 0;
}

/* n floats rounded up to a 64-byte line: what follows starts aligned. */
static size_t round16(size_t n)
{
    return (n + 15) / 16 * 16;
}

/* Per-thread floats of a fused GEMM row op: the tile of tile_m GEMM rows
 * (kept in L2 while the epilogue runs) and two scratch rows for softmax's
 * exps, rows padded to 64 bytes. */
static size_t fused_tile_floats(const comet_kernels_params *p, size_t M, size_t N)
{
    size_t tm = p->tile_m < M ? p->tile_m : M, ld = (N + 15) / 16 * 16;
    if (ld < N || (tm + 2) > SIZE_MAX / 4 / ld)
        return SIZE_MAX; /* refused by kern_check_dims */
    return (tm + 2) * ld;
}

int comet_kernels_workspace_size(comet_kernels_op op, comet_kernels_variant v,
    const comet_kernels_shape *s, const comet_kernels_params *in, size_t *bytes)
{
    comet_kernels_params p;
    size_t prod;
    int rc;
    if (!s || !bytes || (unsigned)v >= COMET_KERNELS_NVARIANTS)
        return -EINVAL;
    if (in && (in->threads <= 0 || in->eps < 0))
        return -EINVAL;
    fill_defaults(op, s, in, &p);
    *bytes = 0;
    switch (op) {
    case COMET_KERNELS_GEMM_SOFTMAX:
    case COMET_KERNELS_GEMM_LAYERNORM:
        if ((rc = kern_check_dims(s->M, s->N, s->K, NULL)) != 0)
            return rc;
        if ((rc = kern_check_dims(s->M, s->N, 1, &prod)) != 0)
            return rc;
        if (v == COMET_KERNELS_UNFUSED) {
            *bytes = prod * sizeof(float);
        } else if (v == COMET_KERNELS_UNFUSED_SAME_GEMM) {
            /* the intermediate, then B packed per thread as the fused
             * variant packs it */
            *bytes = round16(prod) * sizeof(float);
            if (use_ukernel(&p, s->K))
                *bytes += (size_t)p.threads * kern_packed_b_floats(s->K, s->N) * sizeof(float);
        } else {
            size_t tile;
            if (p.tile_m == 0)
                return -EINVAL;
            if ((rc = kern_check_dims(
                     fused_tile_floats(&p, s->M, s->N), (size_t)p.threads, 1, &tile))
                != 0)
                return rc;
            *bytes = tile * sizeof(float);
            size_t packs;
            if (use_ukernel(&p, s->K)) {
                /* each thread's own packed B */
                if ((rc = kern_check_dims(kern_packed_b_floats(s->K, s->N), (size_t)p.threads,
                         sizeof(float), &packs))
                    != 0)
                    return rc;
                *bytes += packs;
            }
        }
        return 0;
    case COMET_KERNELS_ATTENTION:
        if ((rc = kern_check_dims(s->batch, s->heads, s->lq, NULL)) != 0
            || (rc = kern_check_dims(s->lk, s->d, 1, NULL)) != 0
            || (rc = kern_check_dims(s->lq, s->lk, 1, &prod)) != 0)
            return rc;
        if (v == COMET_KERNELS_UNFUSED) {
            *bytes = prod * sizeof(float);
        } else if (v == COMET_KERNELS_UNFUSED_SAME_GEMM) {
            /* S of one head, then that head's K^T and V packed per thread as
             * the fused variant packs them */
            if (p.tile_m == 0 || p.tile_n == 0)
                return -EINVAL;
            *bytes = round16(prod) * sizeof(float);
            if (attn_ukernel(&p, s->d))
                *bytes += (size_t)p.threads
                    * (kern_packed_kt_floats(s->lk, s->d) + kern_packed_v_floats(s->lk, s->d))
                    * sizeof(float);
        } else {
            if (p.tile_m == 0 || p.tile_n == 0)
                return -EINVAL;
            size_t per = p.tile_m * p.tile_n + p.tile_m * s->d + 3 * p.tile_m;
            if (per < s->lk) /* a one-row head's scores (lq = 1: the GEMV path) */
                per = s->lk;
            *bytes = (size_t)p.threads * per * sizeof(float);
            if (attn_ukernel(&p, s->d)) {
                /* each thread packs the head it works on into its own buffer */
                size_t pk = kern_packed_kt_floats(s->lk, s->d) + kern_packed_v_floats(s->lk, s->d);
                if (pk > SIZE_MAX / 64 / (size_t)p.threads)
                    return -EOVERFLOW;
                *bytes += (size_t)p.threads * pk * sizeof(float);
            }
        }
        return 0;
    default:
        return -EINVAL;
    }
}

/* ------------------------------------------------------------------ */
/* GEMM-Softmax / GEMM-LayerNorm                                       */
/* ------------------------------------------------------------------ */

/* This thread's number in the enclosing team (0 outside one). */
static size_t team_thread(void)
{
#ifdef _OPENMP
    extern int omp_get_thread_num(void);
    return (size_t)omp_get_thread_num();
#else
    return 0;
#endif
}

/* The threads the enclosing team got (OpenMP may give fewer than asked). */
static size_t team_size(void)
{
#ifdef _OPENMP
    extern int omp_get_num_threads(void);
    return (size_t)omp_get_num_threads();
#else
    return 1;
#endif
}

typedef struct row_epilogue {
    int layernorm;
    float eps;
    const float *gamma, *beta;
} row_epilogue;

static void slab_gemm(int threads, size_t m, size_t n, size_t k, float alpha, const float *A,
    size_t lda, int transb, const float *B, size_t ldb, float *C, size_t ldc);

static int gemm_rowop(comet_kernels_op op, comet_kernels_variant v, size_t M, size_t N, size_t K,
    const float *A, const float *B, const row_epilogue *ep, float *Y,
    const comet_kernels_params *in, void *ws, size_t ws_bytes)
{
    comet_kernels_shape s = { .M = M, .N = N, .K = K };
    comet_kernels_params p;
    size_t need = 0;
    int rc;
    if (!A || !B || !Y || !in)
        return -EINVAL;
    if ((rc = comet_kernels_workspace_size(op, v, &s, in, &need)) != 0)
        return rc;
    fill_defaults(op, &s, in, &p);
    if ((rc = check_params(&p)) != 0)
        return rc;
    if (need > ws_bytes || (need && !ws))
        return -ENOMEM;
    if (p.tile_m == 0)
        return -EINVAL;
    float alpha = ep->layernorm ? 1.0f : p.scale;
    int saved = openblas_get_num_threads();

    if (v != COMET_KERNELS_UNFUSED && small_rowop(&p, M, N)) {
        /* fused: the output is the (cache-resident) intermediate; the same-
         * GEMM baseline keeps its own intermediate, as the BLAS one does */
        float *C = v == COMET_KERNELS_FUSED ? Y : ws;
        openblas_set_num_threads(1);
        slab_gemm(p.threads, M, N, K, alpha, A, K, 0, B, N, C, N);
        openblas_set_num_threads(saved);
        if (ep->layernorm)
            return comet_kernels_layernorm_rows(
                M, N, C, N, Y, N, ep->gamma, ep->beta, ep->eps, p.threads);
        return comet_kernels_softmax_rows(M, N, C, N, Y, N, 1.0f, p.threads);
    }

    if (v == COMET_KERNELS_UNFUSED) {
        float *C = ws;
        /* The framework baseline: the whole GEMM into a full intermediate in
         * memory, then a separate pass. Parallel GEMM as contiguous row slabs
         * per thread (single-threaded BLAS each): one thread pool for GEMM
         * and passes, so OpenBLAS's spinning workers never fight OpenMP's.
         * BLAS is pinned to one thread in both branches: at threads == 1 the
         * baseline must not borrow OpenBLAS's default pool (the fused variant
         * runs on one core too). */
        openblas_set_num_threads(1);
        if (p.threads == 1) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, alpha, A,
                (int)K, B, (int)N, 0.0f, C, (int)N);
        } else
            slab_gemm(p.threads, M, N, K, alpha, A, K, 0, B, N, C, N);
        openblas_set_num_threads(saved);
        if (ep->layernorm)
            return comet_kernels_layernorm_rows(
                M, N, C, N, Y, N, ep->gamma, ep->beta, ep->eps, p.threads);
        return comet_kernels_softmax_rows(M, N, C, N, Y, N, 1.0f, p.threads);
    }

    if (v == COMET_KERNELS_UNFUSED_SAME_GEMM) {
        /* The fused variant's GEMM (B packed per thread, the same row
         * blocks of each thread's own rows) into the full intermediate,
         * then the same passes as the BLAS baseline over the same rows:
         * the difference to the fused variant is the fusion alone. */
        int uk = use_ukernel(&p, K);
        size_t tm = p.tile_m < M ? p.tile_m : M;
        float *C = ws, *Bp0 = C + round16(M * N);
        const size_t pb = kern_packed_b_floats(K, N);
        openblas_set_num_threads(1);
#pragma omp parallel num_threads(p.threads)
        {
            float *Bp = Bp0 + team_thread() * pb;
            if (uk) /* each thread packs its own B, as the fused variant's do */
                kern_pack_b(K, N, B, N, Bp);
            size_t r0, r1;
            kern_thread_rows(M, &r0, &r1);
            for (size_t i0 = r0; i0 < r1; i0 += tm) {
                size_t mb = r1 - i0 < tm ? r1 - i0 : tm;
                if (uk)
                    kern_ukernel_gemm(mb, N, K, alpha, A + i0 * K, K, Bp, C + i0 * N, N);
                else
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mb, (int)N, (int)K,
                        alpha, A + i0 * K, (int)K, B, (int)N, 0.0f, C + i0 * N, (int)N);
            }
        }
        openblas_set_num_threads(saved);
        if (ep->layernorm)
            return comet_kernels_layernorm_rows(
                M, N, C, N, Y, N, ep->gamma, ep->beta, ep->eps, p.threads);
        return comet_kernels_softmax_rows(M, N, C, N, Y, N, 1.0f, p.threads);
    }

    int uk = use_ukernel(&p, K);
    size_t tm = p.tile_m < M ? p.tile_m : M;
    size_t ld = (N + 15) / 16 * 16, per = fused_tile_floats(&p, M, N);
    float *tiles = ws, *Bp0 = tiles + (size_t)p.threads * per;
    const size_t pb = kern_packed_b_floats(K, N);
    /* Y far beyond the caches is written once with NT stores: no read for
     * ownership of its lines, the one DRAM stream the fused kernel keeps */
    int stream = kern_stream_output(M * N * sizeof(float));
    openblas_set_num_threads(1); /* the kernel owns the parallelism */
#pragma omp parallel num_threads(p.threads)
    {
        const size_t t = team_thread();
        /* every thread packs B into its own buffer: panels packed by one
         * core and read by another cross the core-to-core path, which a VM
         * host moves between one L3 (26 ns) and two (150 ns): on the Zen 4
         * VM 2-thread 512x1024x64 took 0.58 ms with shared panels across,
         * 0.50 ms with its own, and 0.46 and 0.45 ms on one L3 (same
         * process, interleaved). The redundant pack is what the 1-thread
         * grid point of the thread's rows already holds. */
        float *Bp = Bp0 + t * pb;
        if (uk)
            kern_pack_b(K, N, B, N, Bp);
        float *T = tiles + t * per, *scr = T + tm * ld;
        size_t r0, r1;
        kern_thread_rows(M, &r0, &r1);
        for (size_t i0 = r0; i0 < r1; i0 += tm) {
            size_t mb = r1 - i0 < tm ? r1 - i0 : tm;
            float *Yb = Y + i0 * N;
            /* the block lands in this thread's tile, reused block after
             * block so it stays in L2; gemm_only 1 (the calibration's "GEMM
             * inside fused") stops there, gemm_only 2 writes the product to
             * Y instead so that it can be checked */
            float *C = p.gemm_only == 2 ? Yb : T;
            size_t ldc = p.gemm_only == 2 ? N : ld;
            if (uk)
                kern_ukernel_gemm(mb, N, K, alpha, A + i0 * K, K, Bp, C, ldc);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mb, (int)N, (int)K,
                    alpha, A + i0 * K, (int)K, B, (int)N, 0.0f, C, (int)ldc);
            if (p.gemm_only)
                continue;
            /* the epilogue reads the hot tile and writes the output once,
             * pipelined across the block's rows like the unfused passes */
            if (ep->layernorm)
                kern_layernorm_rows_tile(mb, N, T, ld, Yb, N, ep->gamma, ep->beta, ep->eps, stream);
            else
                kern_softmax_rows_tile(mb, N, T, ld, Yb, N, 1.0f, scr, ld, stream);
        }
        kern_stream_fence(stream);
    }
    openblas_set_num_threads(saved);
    return 0;
}

int comet_kernels_gemm_softmax(comet_kernels_variant v, size_t M, size_t N, size_t K,
    const float *A, const float *B, float *Y, const comet_kernels_params *p, void *ws,
    size_t ws_bytes)
{
    row_epilogue ep = { 0, 0, NULL, NULL };
    return gemm_rowop(COMET_KERNELS_GEMM_SOFTMAX, v, M, N, K, A, B, &ep, Y, p, ws, ws_bytes);
}

int comet_kernels_gemm_layernorm(comet_kernels_variant v, size_t M, size_t N, size_t K,
    const float *A, const float *B, const float *gamma, const float *beta, float *Y,
    const comet_kernels_params *p, void *ws, size_t ws_bytes)
{
    comet_kernels_params q;
    if (!p)
        return -EINVAL;
    q = *p;
    if (q.eps == 0)
        q.eps = 1e-5f;
    if (!(q.eps > 0) || !isfinite(q.eps))
        return -EINVAL;
    row_epilogue ep = { 1, q.eps, gamma, beta };
    return gemm_rowop(COMET_KERNELS_GEMM_LAYERNORM, v, M, N, K, A, B, &ep, Y, &q, ws, ws_bytes);
}

/* C[m x n] = alpha * A[m x k] * op(B), rows split into one slab per thread
 * (single-threaded BLAS inside: the kernel owns the parallelism). */
static void slab_gemm(int threads, size_t m, size_t n, size_t k, float alpha, const float *A,
    size_t lda, int transb, const float *B, size_t ldb, float *C, size_t ldc)
{
#pragma omp parallel num_threads(threads)
    {
        size_t r0, r1;
        kern_thread_rows(m, &r0, &r1);
        if (r1 > r0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, transb ? CblasTrans : CblasNoTrans,
                (int)(r1 - r0), (int)n, (int)k, alpha, A + r0 * lda, (int)lda, B, (int)ldb, 0.0f,
                C + r0 * ldc, (int)ldc);
    }
}

/* ------------------------------------------------------------------ */
/* Attention                                                           */
/* ------------------------------------------------------------------ */

/* Keys visible to query i under a causal mask aligned at the end. */
static size_t causal_limit(size_t i, size_t lq, size_t lk)
{
    /* query i sees keys j <= i + (lk - lq) */
    if (lk >= lq)
        return i + (lk - lq) + 1;
    return i + 1 > lq - lk ? i + 1 - (lq - lk) : 0;
}

/* Keys every query row from r0 on sees under the causal mask (at most lk). */
static size_t causal_full_keys(size_t r0, size_t lq, size_t lk)
{
    size_t j = causal_limit(r0, lq, lk);
    return j < lk ? j : lk;
}

/* O rows r0..r0+rb += P V over keys jfull .. each row's limit, row by row: a
 * masked key's value (NaN included) never enters a row that cannot see it. */
static void causal_pv_rest(const float *S, size_t lds, const float *V, size_t d, float *O,
    size_t r0, size_t rb, size_t jfull, size_t lq, size_t lk)
{
    for (size_t i = r0; i < r0 + rb; i++) {
        size_t lim = causal_full_keys(i, lq, lk);
        for (size_t j = jfull; j < lim; j++) {
            const float pj = S[i * lds + j], *vj = V + j * d;
            for (size_t c = 0; c < d; c++)
                O[i * d + c] += pj * vj[c];
        }
    }
}

/* 1 when rows x d values (consecutive rows of d) are all finite: no value
 * has an all-ones exponent. An OR of integer tests vectorises; the float
 * sum of v x 0 it replaces was one dependent add per value (about 4% of
 * causal fused attention at 1024^2, called on every block's diagonal
 * tile). */
static int finite_rows(const float *v, size_t rows, size_t d)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < rows * d; i++) {
        uint32_t b;
        memcpy(&b, v + i, sizeof b);
        bad |= (b & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

static void attention_block_fused(const comet_kernels_params *p, size_t lq, size_t lk, size_t d,
    const float *Q, const float *K, const float *V, const float *Kp, const float *Vp, float *O,
    size_t q0, size_t mb, float *S, float *Oacc, float *m, float *l, float *nanf)
{
    size_t tn = p->tile_n;
    for (size_t i = 0; i < mb; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        nanf[i] = 0.0f;
    }
    memset(Oacc, 0, mb * d * sizeof(float));
    size_t kv_end = lk;
    if (p->causal)
        kv_end = causal_limit(q0 + mb - 1, lq, lk);
    if (kv_end > lk)
        kv_end = lk;
    for (size_t j0 = 0; j0 < kv_end; j0 += tn) {
        size_t nb = kv_end - j0 < tn ? kv_end - j0 : tn;
        if (Kp) /* j0 is a multiple of 16: the tile starts on a panel */
            kern_ukernel_gemm(mb, nb, d, p->scale, Q + q0 * d, d, Kp + j0 * d, S, nb);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mb, (int)nb, (int)d, p->scale,
                Q + q0 * d, (int)d, K + j0 * d, (int)d, 0.0f, S, (int)nb);
        for (size_t i = 0; i < mb; i++) {
            float *srow = S + i * nb;
            if (p->causal) {
                size_t lim = causal_limit(q0 + i, lq, lk);
                for (size_t j = lim > j0 ? lim - j0 : 0; j < nb; j++)
                    srow[j] = -INFINITY;
            }
            int nan = 0;
            float mt = kern_row_max(srow, nb, &nan);
            if (nan)
                nanf[i] = 1.0f;
            float mn = mt > m[i] ? mt : m[i];
            if (mn == -INFINITY) {
                /* nothing visible yet in this row: contributes nothing */
                memset(srow, 0, nb * sizeof(float));
                continue;
            }
            float alpha = m[i] == -INFINITY ? 0.0f : expf(m[i] - mn);
            double rs = kern_exp_shift_sum(srow, srow, nb, mn);
            l[i] = l[i] * alpha + (float)rs;
            if (alpha != 1.0f)
                kern_scale(Oacc + i * d, d, alpha);
            m[i] = mn;
        }
        /* P V over the keys every row of the block sees; the keys only some
         * rows see, row by row: a masked key's value (NaN included) never
         * reaches a row that cannot see it (0 x NaN would be NaN) */
        size_t jfull = nb;
        if (p->causal) {
            size_t lim0 = causal_limit(q0, lq, lk);
            jfull = lim0 > j0 ? (lim0 - j0 < nb ? lim0 - j0 : nb) : 0;
            /* the keys only some rows see hold exact zeros in the rows that
             * do not (exp of -inf, or a row memset above): with finite
             * values there, one GEMM over every key the block sees gives
             * those rows nothing, as the row-by-row loop below would; a
             * non-finite value keeps the loop (0 x NaN is NaN) */
            if (jfull < nb && finite_rows(V + (j0 + jfull) * d, nb - jfull, d))
                jfull = nb;
        }
        if (jfull && Vp)
            kern_ukernel_gemm_ex(mb, d, jfull, 1.0f, S, nb, Vp + j0 * 16, lk * 16, 1, Oacc, d);
        else if (jfull)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mb, (int)d, (int)jfull,
                1.0f, S, (int)nb, V + j0 * d, (int)d, 1.0f, Oacc, (int)d);
        for (size_t i = 0; jfull < nb && i < mb; i++) {
            size_t lim = causal_limit(q0 + i, lq, lk);
            size_t vis = lim > j0 ? (lim - j0 < nb ? lim - j0 : nb) : 0;
            for (size_t j = jfull; j < vis; j++) {
                const float pj = S[i * nb + j], *vj = V + (j0 + j) * d;
                float *o = Oacc + i * d;
                for (size_t c = 0; c < d; c++)
                    o[c] += pj * vj[c];
            }
        }
    }
    for (size_t i = 0; i < mb; i++) {
        float *o = O + (q0 + i) * d;
        if (nanf[i] != 0.0f) {
            for (size_t c = 0; c < d; c++)
                o[c] = NAN;
        } else if (l[i] > 0.0f) {
            float inv = 1.0f / l[i]; /* 1/l deferred to the end */
            for (size_t c = 0; c < d; c++)
                o[c] = Oacc[i * d + c] * inv;
        } else {
            memset(o, 0, d * sizeof(float));
        }
    }
}

/* Attention of one query row q over the first n of its head's keys:
 * S = scale K q (GEMV), the softmax of S, o = V^T P / sum (GEMV). Any
 * visible NaN score gives a NaN row, as the blocked path does. */
static void attention_row_gemv(const comet_kernels_params *p, size_t lk, size_t d, const float *q,
    const float *K, const float *V, size_t n, float *o, float *s)
{
    if (n > lk)
        n = lk;
    if (n == 0) {
        memset(o, 0, d * sizeof(float));
        return;
    }
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)d, p->scale, K, (int)d, q, 1, 0.0f, s, 1);
    int nan = 0;
    const float mx = kern_row_max(s, n, &nan);
    if (nan || mx == INFINITY) {
        for (size_t c = 0; c < d; c++)
            o[c] = NAN;
        return;
    }
    const double sum = kern_exp_shift_sum(s, s, n, mx);
    cblas_sgemv(
        CblasRowMajor, CblasTrans, (int)n, (int)d, (float)(1.0 / sum), V, (int)d, s, 1, 0.0f, o, 1);
}

/* One thread's fused attention: its scratch, its own packed K^T and V (NULL:
 * BLAS on the unpacked operands) and which head they hold. */
typedef struct attn_share {
    const comet_kernels_params *p;
    size_t lq, lk, d, tm, nqb;
    const float *Q, *K, *V;
    float *O, *own;
    size_t pkt, packed_h;
    float *S, *Oacc, *m;
} attn_share;

/* Query block b of head h, packing the head first when it is not the one
 * this thread's buffer holds. */
static void attn_share_block(attn_share *a, size_t h, size_t b)
{
    const size_t lq = a->lq, lk = a->lk, d = a->d, q0 = b * a->tm;
    const size_t mb = lq - q0 < a->tm ? lq - q0 : a->tm;
    if (a->own && h != a->packed_h) {
        kern_pack_attn_head(lk, d, a->K + h * lk * d, a->V + h * lk * d, a->own);
        a->packed_h = h;
    }
    attention_block_fused(a->p, lq, lk, d, a->Q + h * lq * d, a->K + h * lk * d, a->V + h * lk * d,
        a->own, a->own ? a->own + a->pkt : NULL, a->O + h * lq * d, q0, mb, a->S, a->Oacc, a->m,
        a->m + a->tm, a->m + 2 * a->tm);
}

/* The same-GEMM attention baseline's P V of one block of query rows over
 * its head's V (packed per thread), chunks of tile_n keys. */
typedef struct same_pv {
    const comet_kernels_params *p;
    const float *S;
    size_t lq, lk, d, tn;
    const float *vv, *Vp;
    int uk;
    float *oh;
} same_pv;

static void same_pv_block(const same_pv *x, size_t q0, size_t mb)
{
    const size_t lq = x->lq, lk = x->lk, d = x->d, tn = x->tn;
    size_t jfull = x->p->causal ? causal_full_keys(q0, lq, lk) : lk;
    /* as the unfused variant: every key the block sees by the GEMM when
     * those values are finite */
    if (x->p->causal) {
        size_t jend = causal_full_keys(q0 + mb - 1, lq, lk);
        if (jend > jfull && finite_rows(x->vv + jfull * d, jend - jfull, d))
            jfull = jend;
    }
    if (!jfull)
        memset(x->oh + q0 * d, 0, mb * d * sizeof(float));
    for (size_t j0 = 0; j0 < jfull; j0 += tn) {
        size_t nb = jfull - j0 < tn ? jfull - j0 : tn;
        if (x->uk)
            kern_ukernel_gemm_ex(mb, d, nb, 1.0f, x->S + q0 * lk + j0, lk, x->Vp + j0 * 16, lk * 16,
                j0 > 0, x->oh + q0 * d, d);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mb, (int)d, (int)nb, 1.0f,
                x->S + q0 * lk + j0, (int)lk, x->vv + j0 * d, (int)d, j0 > 0 ? 1.0f : 0.0f,
                x->oh + q0 * d, (int)d);
    }
    if (x->p->causal)
        causal_pv_rest(x->S, lk, x->vv, d, x->oh, q0, mb, jfull, lq, lk);
}

int comet_kernels_attention(comet_kernels_variant v, const comet_kernels_shape *s, const float *Q,
    const float *K, const float *V, float *O, const comet_kernels_params *in, void *ws,
    size_t ws_bytes)
{
    comet_kernels_params p;
    size_t need = 0;
    int rc;
    if (!s || !Q || !K || !V || !O || !in)
        return -EINVAL;
    if ((rc = comet_kernels_workspace_size(COMET_KERNELS_ATTENTION, v, s, in, &need)) != 0)
        return rc;
    fill_defaults(COMET_KERNELS_ATTENTION, s, in, &p);
    if ((rc = check_params(&p)) != 0)
        return rc;
    if (need > ws_bytes || (need && !ws))
        return -ENOMEM;
    size_t bh = s->batch * s->heads, lq = s->lq, lk = s->lk, d = s->d;
    int saved = openblas_get_num_threads();

    if (v == COMET_KERNELS_UNFUSED) {
        float *S = ws;
        openblas_set_num_threads(1);
        for (size_t h = 0; h < bh; h++) {
            const float *q = Q + h * lq * d, *k = K + h * lk * d, *vv = V + h * lk * d;
            slab_gemm(p.threads, lq, lk, d, p.scale, q, d, 1, k, d, S, lk);
            if (p.causal) {
#pragma omp parallel for num_threads(p.threads) schedule(static)
                for (size_t i = 0; i < lq; i++)
                    for (size_t j = causal_limit(i, lq, lk); j < lk; j++)
                        S[i * lk + j] = -INFINITY;
            }
            /* ordinary stores: P V reads S right after (streaming it out
             * to memory made 2048^2 attention 1.4x slower on the Xeon) */
            kern_softmax_rows_ex(lq, lk, S, lk, S, lk, 1.0f, p.threads, 0);
            if (!p.causal) {
                slab_gemm(p.threads, lq, d, lk, 1.0f, S, lk, 0, vv, d, O + h * lq * d, d);
                continue;
            }
            /* causal: per block of 64 rows, the keys all its rows see by one
             * GEMM, the rest row by row up to each row's limit, so that a
             * masked key's value (NaN included) never enters a row; when
             * those values are finite, one GEMM over every key the block
             * sees (the masked probabilities are exact zeros). Blocks as
             * threads come free: a later block sees more keys (in halves,
             * the second thread had 3/4 of the work) */
            float *oh = O + h * lq * d;
#pragma omp parallel for num_threads(p.threads) schedule(dynamic, 1)
            for (size_t r0 = 0; r0 < lq; r0 += 64) {
                size_t rb = lq - r0 < 64 ? lq - r0 : 64;
                size_t jfull = causal_full_keys(r0, lq, lk),
                       jend = causal_full_keys(r0 + rb - 1, lq, lk);
                if (jend > jfull && finite_rows(vv + jfull * d, jend - jfull, d))
                    jfull = jend;
                if (jfull)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rb, (int)d,
                        (int)jfull, 1.0f, S + r0 * lk, (int)lk, vv, (int)d, 0.0f, oh + r0 * d,
                        (int)d);
                else
                    memset(oh + r0 * d, 0, rb * d * sizeof(float));
                causal_pv_rest(S, lk, vv, d, oh, r0, rb, jfull, lq, lk);
            }
        }
        openblas_set_num_threads(saved);
        return 0;
    }

    if (v == COMET_KERNELS_UNFUSED_SAME_GEMM) {
        /* The fused variant's GEMM engine (K^T and V packed per head, the
         * same query blocks, threads and schedule; KV chunks of tile_n in
         * P V) with S written out whole between the passes. */
        int uk = attn_ukernel(&p, d);
        size_t tm = p.tile_m < lq ? p.tile_m : lq, nqb = (lq + tm - 1) / tm, tn = p.tile_n;
        const size_t pkt = kern_packed_kt_floats(lk, d), pk = pkt + kern_packed_v_floats(lk, d);
        float *S = ws, *packed = S + round16(lq * lk);
        size_t packers = 1; /* threads whose buffers hold the head's K^T and V */
        openblas_set_num_threads(1);
        for (size_t h = 0; h < bh; h++) {
            const float *q = Q + h * lq * d, *k = K + h * lk * d, *vv = V + h * lk * d;
            float *oh = O + h * lq * d;
#pragma omp parallel num_threads(p.threads)
            {
                /* each thread packs the head's K^T and V into its own
                 * buffer, as the fused variant's threads do */
                float *Kp = packed + team_thread() * pk;
                if (uk)
                    kern_pack_attn_head(lk, d, k, vv, Kp);
#pragma omp single nowait
                packers = team_size();
                size_t r0, r1;
                kern_thread_rows(lq, &r0, &r1);
                for (size_t q0 = r0; q0 < r1; q0 += tm) {
                    size_t mb = r1 - q0 < tm ? r1 - q0 : tm;
                    if (uk)
                        kern_ukernel_gemm(mb, lk, d, p.scale, q + q0 * d, d, Kp, S + q0 * lk, lk);
                    else
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mb, (int)lk,
                            (int)d, p.scale, q + q0 * d, (int)d, k, (int)d, 0.0f, S + q0 * lk,
                            (int)lk);
                    if (p.causal)
                        for (size_t i = q0; i < q0 + mb; i++)
                            for (size_t j = causal_limit(i, lq, lk); j < lk; j++)
                                S[i * lk + j] = -INFINITY;
                }
            }
            kern_softmax_rows_ex(lq, lk, S, lk, S, lk, 1.0f, p.threads, 0);
#pragma omp parallel num_threads(p.threads)
            {
                /* its own V, as packed in the region before (a team that
                 * got more threads than that one reads the first's) */
                const size_t t = team_thread();
                same_pv pv = { &p, S, lq, lk, d, tn, vv, packed + (t < packers ? t : 0) * pk + pkt,
                    uk, oh };
                if (!p.causal) { /* the rows this thread's softmax pass wrote */
                    size_t r0, r1;
                    kern_thread_rows(lq, &r0, &r1);
                    for (size_t q0 = r0; q0 < r1; q0 += tm)
                        same_pv_block(&pv, q0, r1 - q0 < tm ? r1 - q0 : tm);
                } else { /* later blocks see more keys: as threads come free,
                          * as the BLAS baseline's causal P V */
#pragma omp for schedule(dynamic, 1)
                    for (size_t b = 0; b < nqb; b++)
                        same_pv_block(&pv, b * tm, lq - b * tm < tm ? lq - b * tm : tm);
                }
            }
        }
        openblas_set_num_threads(saved);
        return 0;
    }

    size_t tm = p.tile_m, nqb = (lq + tm - 1) / tm, per = tm * p.tile_n + tm * d + 3 * tm;
    if (per < lk) /* as the workspace size: room for a one-row head's scores */
        per = lk;
    int uk = attn_ukernel(&p, d);
    size_t pkt = kern_packed_kt_floats(lk, d), pv = kern_packed_v_floats(lk, d);
    float *packed = (float *)ws + (size_t)p.threads * per;
    openblas_set_num_threads(1);
    if (lq == 1) {
        /* One query row a head (a decode step's token): the row streams its
         * head's K and V once each through GEMV, the softmax between, where
         * the blocked path would first copy both into panels for a single
         * row (8 x 4 heads of 257 keys, d 64: 494 us so on the Zen 3 VM,
         * about two passes over K and V) */
#pragma omp parallel num_threads(p.threads)
        {
            /* the row's scores in this thread's scratch (>= lk floats) */
            float *sr = (float *)ws + team_thread() * per;
#pragma omp for schedule(static)
            for (size_t h = 0; h < bh; h++)
                attention_row_gemv(&p, lk, d, Q + h * d, K + h * lk * d, V + h * lk * d,
                    p.causal ? causal_limit(0, 1, lk) : lk, O + h * d, sr);
        }
        openblas_set_num_threads(saved);
        return 0;
    }
#pragma omp parallel num_threads(p.threads)
    {
        /* Each thread packs the K^T and V of each head it reaches into its
         * own buffer: no panel one core wrote is read by another (the core-
         * to-core path a VM host moves between one L3 and two: on the Zen 4
         * VM 2-thread H=4 256^2 took 0.42 ms with the team's shared panels
         * on one L3, 0.60 ms across, 0.38-0.41 ms either way with its own).
         * Without a mask every block costs the same: contiguous shares of
         * the (head, block) list, so a thread packs about heads / T heads
         * (a head split between two shares, by both). Causal: a later block
         * sees more keys, so the blocks go as threads come free, the
         * heaviest of each head first; a thread packs each head it meets. */
        const size_t t = team_thread(), nt = team_size(), nw = bh * nqb;
        float *base = (float *)ws + t * per, *own = packed + t * (pkt + pv);
        attn_share sh = { &p, lq, lk, d, tm, nqb, Q, K, V, O, uk ? own : NULL, pkt, SIZE_MAX, base,
            base + tm * p.tile_n, base + tm * p.tile_n + tm * d };
        if (!p.causal) {
            for (size_t w = nw * t / nt; w < nw * (t + 1) / nt; w++)
                attn_share_block(&sh, w / nqb, w % nqb);
        } else {
#pragma omp for schedule(dynamic, 1) nowait
            for (size_t w = 0; w < nw; w++)
                attn_share_block(&sh, w / nqb, nqb - 1 - w % nqb);
        }
    }
    openblas_set_num_threads(saved);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Analytic counts                                                     */
/* ------------------------------------------------------------------ */

static double visible_pairs(const comet_kernels_shape *s, int causal)
{
    double lq = (double)s->lq, lk = (double)s->lk;
    if (!causal)
        return lq * lk;
    double n = 0;
    for (size_t i = 0; i < s->lq; i++) {
        size_t lim = causal_limit(i, s->lq, s->lk);
        n += (double)(lim < s->lk ? lim : s->lk);
    }
    return n;
}

double comet_kernels_flops(comet_kernels_op op, const comet_kernels_shape *s)
{
    if (!s)
        return 0;
    double M = (double)s->M, N = (double)s->N, K = (double)s->K;
    switch (op) {
    case COMET_KERNELS_GEMM_SOFTMAX:
        return 2 * M * N * K + 5 * M * N; /* max, sub, exp, sum, div */
    case COMET_KERNELS_GEMM_LAYERNORM:
        return 2 * M * N * K + 8 * M * N; /* sum, sub, sq+acc, sub, mul, fma */
    case COMET_KERNELS_ATTENTION: {
        double bh = (double)s->batch * (double)s->heads, d = (double)s->d;
        double pairs = visible_pairs(s, 0);
        return bh * (4 * pairs * d + 5 * pairs);
    }
    }
    return 0;
}

double comet_kernels_bytes(
    comet_kernels_op op, comet_kernels_variant v, const comet_kernels_shape *s)
{
    if (!s)
        return 0;
    double M = (double)s->M, N = (double)s->N, K = (double)s->K, f = sizeof(float);
    switch (op) {
    case COMET_KERNELS_GEMM_SOFTMAX:
    case COMET_KERNELS_GEMM_LAYERNORM: {
        double b = f * (M * K + K * N + M * N);
        if (op == COMET_KERNELS_GEMM_LAYERNORM)
            b += 2 * f * N;
        if (v != COMET_KERNELS_FUSED)
            b += 2 * f * M * N; /* intermediate written by the GEMM, read by the pass */
        return b;
    }
    case COMET_KERNELS_ATTENTION: {
        double bh = (double)s->batch * (double)s->heads, lq = (double)s->lq, lk = (double)s->lk,
               d = (double)s->d;
        double b = bh * f * (2 * lq * d + 2 * lk * d);
        if (v != COMET_KERNELS_FUSED)
            b += bh * f * 4 * lq * lk; /* S written, softmax read+write, PV read */
        return b;
    }
    }
    return 0;
}
