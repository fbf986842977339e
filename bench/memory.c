/* comet bench memory: a working-set sweep (read, copy, triad, fill; AVX2 and
 * scalar; 1 thread and all cores) giving per-level bandwidth plateaus, and
 * vector-op throughput (exp, max, sum, sub, div, mul, sqrt) in cache and
 * streaming. Byte counts follow STREAM (no write-allocate traffic). */
#include "bench_internal.h"
#include "comet_kernels.h"

#include <cblas.h>
#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Where reductions put their result so the compiler cannot drop them. */
static volatile double sink_d;
static volatile float sink_f;

#if defined(__GNUC__) && !defined(__clang__)
#define NOVEC __attribute__((optimize("no-tree-vectorize")))
#else
#define NOVEC
#endif
#define AVX2 __attribute__((target("avx2,fma")))

/* ------------------------------------------------------------------ */
/* Stream kernels over [lo, hi) of double arrays                      */
/* ------------------------------------------------------------------ */

/* fill: stores alone, as the BLAS writes them when it clears C for an
 * sgemm with beta = 0 (the pass the model charges an unfused GEMM for): the
 * BLAS's own clearing pass, an sgemm with alpha = 0 and beta = 0 over the
 * array (rows of 16 floats, C contiguous). How it stores is the BLAS's:
 * OpenBLAS's SkylakeX kernels call memset for a contiguous C, whose
 * non-temporal stores past a size near the LLC's skip the read for
 * ownership (a Zen 4 VM, one core, 128 MiB: 77 GB/s, where 64-byte vector
 * stores reach 25 and the triad 30); its Haswell kernels store with
 * ordinary vector stores. */
enum mem_op { OP_READ, OP_COPY, OP_TRIAD, OP_FILL, NOPS };
static const char *const op_name[NOPS] = { "read", "copy", "triad", "fill" };
static const int op_arrays[NOPS] = { 1, 2, 3, 1 };
static const double TRIAD_S = 3.0;

NOVEC static double read_scalar(const double *a, size_t lo, size_t hi)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        s0 += a[i];
        s1 += a[i + 1];
        s2 += a[i + 2];
        s3 += a[i + 3];
    }
    for (; i < hi; i++)
        s0 += a[i];
    return (s0 + s1) + (s2 + s3);
}

NOVEC static void copy_scalar(double *c, const double *a, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        c[i] = a[i];
}

NOVEC static void triad_scalar(double *a, const double *b, const double *c, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        a[i] = b[i] + TRIAD_S * c[i];
}

AVX2 static double read_avx2(const double *a, size_t lo, size_t hi)
{
    /* Four independent accumulators hide the add latency. */
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        s0 = _mm256_add_pd(s0, _mm256_loadu_pd(a + i));
        s1 = _mm256_add_pd(s1, _mm256_loadu_pd(a + i + 4));
        s2 = _mm256_add_pd(s2, _mm256_loadu_pd(a + i + 8));
        s3 = _mm256_add_pd(s3, _mm256_loadu_pd(a + i + 12));
    }
    __m256d s = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
    double t[4];
    _mm256_storeu_pd(t, s);
    double r = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < hi; i++)
        r += a[i];
    return r;
}

AVX2 static void copy_avx2(double *c, const double *a, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        _mm256_storeu_pd(c + i, _mm256_loadu_pd(a + i));
        _mm256_storeu_pd(c + i + 4, _mm256_loadu_pd(a + i + 4));
    }
    for (; i < hi; i++)
        c[i] = a[i];
}

AVX2 static void triad_avx2(double *a, const double *b, const double *c, size_t lo, size_t hi)
{
    const __m256d s = _mm256_set1_pd(TRIAD_S);
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        _mm256_storeu_pd(a + i, _mm256_fmadd_pd(s, _mm256_loadu_pd(c + i), _mm256_loadu_pd(b + i)));
        _mm256_storeu_pd(
            a + i + 4, _mm256_fmadd_pd(s, _mm256_loadu_pd(c + i + 4), _mm256_loadu_pd(b + i + 4)));
    }
    for (; i < hi; i++)
        a[i] = b[i] + TRIAD_S * c[i];
}

typedef struct stream_ctx {
    enum mem_op op;
    int vec; /* 1 = AVX2 (fill: always the BLAS's clearing pass) */
    int threads;
    size_t n; /* elements per array */
    double *a, *b, *c;
} stream_ctx;

static void stream_range(const stream_ctx *x, size_t lo, size_t hi, size_t reps)
{
    double acc = 0;
    for (size_t r = 0; r < reps; r++) {
        switch (x->op) {
        case OP_READ:
            acc += x->vec ? read_avx2(x->a, lo, hi) : read_scalar(x->a, lo, hi);
            break;
        case OP_COPY:
            if (x->vec)
                copy_avx2(x->c, x->a, lo, hi);
            else
                copy_scalar(x->c, x->a, lo, hi);
            break;
        case OP_FILL: {
            /* [lo, hi) as rows of 16 floats (part() splits on 8 doubles),
             * any tail of the last thread's part by hand; A and B are only
             * there to be valid (alpha = 0) */
            float *c = (float *)(x->a + lo);
            const size_t nf = 2 * (hi - lo), rows = nf / 16;
            if (rows)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, 16, 1, 0.0f,
                    (const float *)x->b, 1, (const float *)x->c, 16, 0.0f, c, 16);
            for (size_t i = rows * 16; i < nf; i++)
                c[i] = 0.0f;
            break;
        }
        default:
            if (x->vec)
                triad_avx2(x->a, x->b, x->c, lo, hi);
            else
                triad_scalar(x->a, x->b, x->c, lo, hi);
            break;
        }
        /* Keep copy/triad repetitions from being merged into one. */
        __asm__ __volatile__("" ::: "memory");
    }
    if (x->op == OP_READ)
        sink_d = acc;
}

/* Thread t's part of n elements, split on 64-byte boundaries. */
static void part(size_t n, int t, int T, size_t *lo, size_t *hi)
{
    size_t blocks = (n + 7) / 8;
    size_t b0 = blocks * (size_t)t / (size_t)T, b1 = blocks * (size_t)(t + 1) / (size_t)T;
    *lo = b0 * 8 > n ? n : b0 * 8;
    *hi = b1 * 8 > n ? n : b1 * 8;
}

static int stream_fn(void *ctx, size_t reps)
{
    const stream_ctx *x = ctx;
    if (x->threads <= 1) {
        stream_range(x, 0, x->n, reps);
        return 0;
    }
    /* One parallel region per sample and no barrier between repetitions
     * (as ERT does), so fork/join cost does not pollute small sets. */
#pragma omp parallel num_threads(x->threads)
    {
        size_t lo, hi;
        part(x->n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        stream_range(x, lo, hi, reps);
    }
    return 0;
}

static void stream_init(double *a, double *b, double *c, size_t n, int threads)
{
    /* First touch by the thread that will use each part. */
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
    {
        size_t lo, hi;
        part(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            a[i] = 1.0;
            b[i] = 2.0;
            c[i] = 0.5;
        }
    }
}

/* STREAM-style check of the last call's effect on a few places. */
static int stream_valid(const stream_ctx *x)
{
    size_t idx[4] = { 0, x->n / 3, x->n / 2, x->n - 1 };
    for (int k = 0; k < 4; k++) {
        size_t i = idx[k];
        if (x->op == OP_COPY && x->c[i] != x->a[i])
            return 0;
        if (x->op == OP_TRIAD && x->a[i] != x->b[i] + TRIAD_S * x->c[i])
            return 0;
        if (x->op == OP_FILL && x->a[i] != 0.0)
            return 0;
    }
    if (x->op == OP_READ) {
        /* a[] was set by the last triad or init; recompute the sum directly. */
        double ref = read_scalar(x->a, 0, x->n);
        double got = 0;
        for (int t = 0; t < (x->threads > 1 ? x->threads : 1); t++) {
            size_t lo, hi;
            part(x->n, t, x->threads > 1 ? x->threads : 1, &lo, &hi);
            got += x->vec ? read_avx2(x->a, lo, hi) : read_scalar(x->a, lo, hi);
        }
        return fabs(got - ref) <= 1e-12 * fabs(ref) + 1e-9;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Vector ops over float32                                            */
/* ------------------------------------------------------------------ */

enum vec_op { V_EXP, V_MAX, V_SUM, V_SUB, V_DIV, V_MUL, V_SQRT, NVOPS };
static const char *const vop_name[NVOPS] = { "exp", "max", "sum", "sub", "div", "mul", "sqrt" };

typedef struct vec_ctx {
    enum vec_op op;
    size_t n;
    float *x, *y;
    float s;
} vec_ctx;

static int vec_fn(void *ctx, size_t reps)
{
    const vec_ctx *v = ctx;
    for (size_t r = 0; r < reps; r++) {
        float red = 0;
        int rc = bench_vecop((int)v->op, v->x, v->y, v->n, v->s, &red);
        if (rc)
            return rc;
        sink_f = red;
        __asm__ __volatile__("" ::: "memory");
    }
    return 0;
}

/* Checks y (or the reduction) against double-precision references on a few elements. */
static int vec_valid(const vec_ctx *v)
{
    float r;
    if (bench_vecop((int)v->op, v->x, v->y, v->n, v->s, &r))
        return 0;
    if (v->op == V_MAX || v->op == V_SUM) {
        double ref = v->op == V_MAX ? -INFINITY : 0;
        for (size_t i = 0; i < v->n; i++)
            ref = v->op == V_MAX ? (v->x[i] > ref ? v->x[i] : ref) : ref + v->x[i];
        return fabs(r - ref) <= 1e-4 * fabs(ref) + 1e-6 * (double)v->n;
    }
    size_t idx[4] = { 0, v->n / 3, v->n / 2, v->n - 1 };
    for (int k = 0; k < 4; k++) {
        size_t i = idx[k];
        double x = v->x[i], ref;
        switch (v->op) {
        case V_EXP: /* the softmax form: exp(x - s) */
            ref = exp((double)(float)(v->x[i] - v->s));
            break;
        case V_SUB:
            ref = x - v->s;
            break;
        case V_DIV:
            ref = x / v->s;
            break;
        case V_MUL:
            ref = x * v->s;
            break;
        default:
            ref = sqrt(x);
            break;
        }
        if (fabs(v->y[i] - ref) > 4e-6 * fabs(ref) + 1e-30)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Driver                                                             */
/* ------------------------------------------------------------------ */

static int emit(bench_session *s, json_t *rec, const comet_bench_result *r, double flops,
    double bytes, int valid, char *err, size_t errlen)
{
    int rc = 0;
    if (!rec)
        return comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
    if ((rc = comet_bench_record_set_result(rec, r, flops, bytes)))
        goto fail;
    json_object_set_new(rec, "valid", json_boolean(valid));
    comet_bench_record_set_counters(rec, &s->counters, r->calls);
    rc = bench_session_write(s, rec, valid, err, errlen);
fail:
    json_decref(rec);
    return rc;
}

/* Softmax and LayerNorm rows of a given width through the kernels' own row
 * passes, one thread, in cache: time per row against width gives the fixed
 * cost of a row (calls, horizontal reductions, 1/sum) that per-element costs
 * miss, and the per-element cost of the whole fused row loop (its ops share
 * loads and stores, which per-op streams do not); the fused attention pays
 * the fixed cost once per row per KV tile. */
#define ROW_WIDTHS 3
static const size_t row_width[ROW_WIDTHS] = { 16, 64, 256 };

typedef struct row_ctx {
    size_t rows, width;
    int layernorm; /* 1: the LayerNorm rows; 2: the distributed LayerNorm's local passes */
    const float *x, *gamma, *beta;
    float *y;
    double *mean, *rstd; /* layernorm 2: per row */
} row_ctx;

/* The fused distributed LayerNorm's local passes on one rank's slice (its
 * all-reduces left out: one rank's statistics are the row's), in place. */
static void dist_ln_rows(const row_ctx *r)
{
    comet_kernels_dist_ln_sums(r->rows, r->width, r->y, r->mean);
    for (size_t i = 0; i < r->rows; i++)
        r->mean[i] /= (double)r->width;
    comet_kernels_dist_ln_sqdev(r->rows, r->width, r->y, r->mean, r->rstd);
    for (size_t i = 0; i < r->rows; i++)
        r->rstd[i] = 1.0 / sqrt(r->rstd[i] / (double)r->width + 1e-5f);
    comet_kernels_dist_ln_apply(r->rows, r->width, r->y, r->mean, r->rstd, r->gamma, r->beta);
}

static int row_fn(void *ctx, size_t reps)
{
    const row_ctx *r = ctx;
    for (size_t k = 0; k < reps; k++) {
        if (r->layernorm == 2) {
            dist_ln_rows(r);
            __asm__ __volatile__("" ::: "memory");
            continue;
        }
        int rc = r->layernorm ? comet_kernels_layernorm_rows(
                     r->rows, r->width, r->x, r->width, r->y, r->width, r->gamma, r->beta, 1e-5f, 1)
                              : comet_kernels_softmax_rows(
                                  r->rows, r->width, r->x, r->width, r->y, r->width, 1.0f, 1);
        if (rc)
            return rc;
        __asm__ __volatile__("" ::: "memory");
    }
    return 0;
}

/* First, middle and last rows: a softmax row sums to 1; a LayerNorm row
 * (gamma 1, beta 0) has mean 0 and variance var / (var + eps) of its input. */
static int row_valid(const row_ctx *r)
{
    size_t idx[3] = { 0, r->rows / 2, r->rows - 1 };
    for (int k = 0; k < 3; k++) {
        /* the distributed passes normalise y in place, again every call:
         * check the row they last normalised (its input was y itself, an
         * already normalised row, so the variance rule holds against it) */
        const float *x = (r->layernorm == 2 ? r->y : r->x) + idx[k] * r->width,
                    *y = r->y + idx[k] * r->width;
        double sum = 0, sq = 0, mx = 0, vx = 0;
        for (size_t j = 0; j < r->width; j++) {
            sum += y[j];
            sq += (double)y[j] * y[j];
            mx += x[j];
        }
        mx /= (double)r->width;
        for (size_t j = 0; j < r->width; j++)
            vx += (x[j] - mx) * (x[j] - mx);
        vx /= (double)r->width;
        if (!r->layernorm && !(fabs(sum - 1) <= 1e-5))
            return 0;
        if (r->layernorm
            && !(fabs(sum) <= 1e-3 * (double)r->width
                && fabs(sq / (double)r->width - vx / (vx + 1e-5)) <= 1e-2))
            return 0;
    }
    return 1;
}

#define QUICK_MAX_ARRAY (512ull << 20)

/* The fused kernels' epilogue: rows read from an L2-resident tile and their
 * results written either into a second L2-resident tile (cache) or streamed
 * out with non-temporal stores to a buffer beyond the LLC (stream), one tile
 * after another. The difference per row is the part of the stores' time the
 * row loop waits for (calibration: vector.store_stall). */
#define STORE_WIDTHS 2
static const size_t store_width[STORE_WIDTHS] = { 1024, 4096 };

typedef struct store_ctx {
    int layernorm, stream;
    size_t width, tile_rows, tiles;
    const float *x, *gamma, *beta;
    float *y; /* cache: one tile; stream: tiles x tile_rows rows */
} store_ctx;

static float *store_tile_out(const store_ctx *c, size_t t)
{
    return c->stream ? c->y + t * c->tile_rows * c->width : c->y;
}

static int store_fn(void *ctx, size_t reps)
{
    const store_ctx *c = ctx;
    const comet_kernels_stores st
        = c->stream ? COMET_KERNELS_STORES_STREAM : COMET_KERNELS_STORES_CACHED;
    for (size_t k = 0; k < reps; k++) {
        for (size_t t = 0; t < c->tiles; t++) {
            float *y = store_tile_out(c, t);
            int rc = c->layernorm ? comet_kernels_layernorm_rows_ex(c->tile_rows, c->width, c->x,
                         c->width, y, c->width, c->gamma, c->beta, 1e-5f, 1, st)
                                  : comet_kernels_softmax_rows_ex(c->tile_rows, c->width, c->x,
                                      c->width, y, c->width, 1.0f, 1, st);
            if (rc)
                return rc;
        }
        __asm__ __volatile__("" ::: "memory");
    }
    return 0;
}

int comet_bench_memory_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen)
{
    bench_session s;
    double *a = NULL, *b = NULL, *c = NULL;
    float *vx = NULL, *vy = NULL;
    comet_bench_result res = { 0 };
    int rc, blas_threads = 0; /* > 0: the BLAS's thread count to restore */
    if ((rc = bench_session_open(&s, o, "memory", machine, sum, err, errlen)))
        return rc;

    uint64_t llc = s.llc ? s.llc : 32ull << 20;
    /* Largest working set: by default every array of the op is 4x the LLC
     * (STREAM's rule), so the last point is DRAM; --max-bytes caps the
     * total instead. */
    uint64_t max_ws = o->max_bytes ? o->max_bytes : 4 * llc;
    /* Quick: at most 512 MiB an array. Cloud VMs report the host socket's
     * L3 (480 MiB on one Xeon here, 1.9 GB arrays, 57 s) while their DRAM
     * plateau starts far lower (from 256 MiB there); --full keeps 4x LLC. */
    if (!o->full && !o->max_bytes && max_ws > QUICK_MAX_ARRAY) {
        comet_util_debug("bench memory: quick: arrays capped at %.0f MiB (4x LLC = %.0f MiB; "
                         "--full or --max-bytes for more)",
            (double)QUICK_MAX_ARRAY / (1 << 20), (double)max_ws / (1 << 20));
        max_ws = QUICK_MAX_ARRAY;
    }
    if (max_ws < 4096)
        max_ws = 4096;
    uint64_t op_max[NOPS];
    for (int op = 0; op < NOPS; op++)
        op_max[op] = o->max_bytes ? max_ws : max_ws * (uint64_t)op_arrays[op];
    /* Points: 4 KiB growing by x2 (quick) or x sqrt(2) (full), or as asked,
     * then the op's max. Fewer than one per doubling leaves the plateau fit
     * no neighbours to hold out. */
    double per_oct = o->per_octave > 0 ? o->per_octave : o->full ? 2.0 : 1.0;
    double step = pow(2.0, 1.0 / per_oct);
    size_t npts_op[NOPS], npts_all = 0;
    uint64_t pts[NOPS][96];
    for (int op = 0; op < NOPS; op++) {
        size_t k = 0;
        /* Quick: the sweeps the model reads, triad (every level's bandwidth,
         * STREAM's convention) and fill (the store rates); read and copy
         * feed no fit the model or validate uses (calibrate only reports
         * their plateaus) and were 40% of the quick sweep: --full has them. */
        if (!o->full && (op == OP_READ || op == OP_COPY)) {
            npts_op[op] = 0;
            continue;
        }
        for (double w = 4096; w < (double)op_max[op] && k < 95; w *= step)
            pts[op][k++] = ((uint64_t)w + 63) & ~63ull;
        pts[op][k++] = op_max[op] & ~63ull;
        npts_op[op] = k;
        npts_all += k;
    }

    int ncores = comet_bench_ncores();
    int tlist[2] = { 1, ncores };
    int nt = ncores > 1 ? 2 : 1;
    if (o->threads > 0) {
        tlist[0] = o->threads;
        nt = 1;
    }
    int vlist[2] = { 1, 0 };
    int nv = o->full ? 2 : 1;
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!avx2) {
        vlist[0] = 0;
        nv = 1;
    }

    size_t maxn = (size_t)(max_ws / 8);
    size_t bytes_arr = maxn * sizeof(double);
    a = aligned_alloc(64, (bytes_arr + 63) & ~(size_t)63);
    b = aligned_alloc(64, (bytes_arr + 63) & ~(size_t)63);
    c = aligned_alloc(64, (bytes_arr + 63) & ~(size_t)63);
    if (!a || !b || !c) {
        rc = comet_util_seterr(
            err, errlen, -ENOMEM, "bench memory: cannot allocate 3 x %zu bytes", bytes_arr);
        goto fail;
    }

    /* Vector-op sizes: in+out within L2 (cache), and >= 4x LLC (stream). */
    uint64_t l2 = s.l2 ? s.l2 : 512 * 1024;
    size_t n_cache = (size_t)(l2 / 4 / sizeof(float));
    size_t n_stream = (size_t)(max_ws / 2 / sizeof(float));
    if (n_stream < n_cache)
        n_stream = n_cache;
    vx = aligned_alloc(64, ((n_stream * sizeof(float)) + 63) & ~(size_t)63);
    vy = aligned_alloc(64, ((n_stream * sizeof(float)) + 63) & ~(size_t)63);
    if (!vx || !vy) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench memory: cannot allocate vectors");
        goto fail;
    }

    /* the fill is the BLAS's pass, the same whatever the loops' ISA: once */
    size_t total = (npts_all * (size_t)nv - npts_op[OP_FILL] * (size_t)(nv - 1)) * (size_t)nt
        + 2 * NVOPS + 3 * ROW_WIDTHS + 4 * STORE_WIDTHS;
    bench_session_progress(&s, "bench memory", total);
    double best_triad[2] = { 0, 0 };
    /* the fill's BLAS call runs on the thread that makes it, as the unfused
     * kernels' slabs do: no BLAS pool beside the sweep's threads */
    blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);

    for (int ti = 0; ti < nt && !s.stop; ti++) {
        int T = tlist[ti];
        bench_session_pin(&s, T);
        stream_init(a, b, c, maxn, T);
        for (int vi = 0; vi < nv && !s.stop; vi++) {
            for (int op = 0; op < NOPS && !s.stop; op++) {
                if (op == OP_FILL && vi > 0) /* the BLAS's pass: one ISA */
                    continue;
                for (size_t p = 0; p < npts_op[op] && !s.stop; p++) {
                    stream_ctx x = { (enum mem_op)op, vlist[vi], T, 0, a, b, c };
                    x.n = (size_t)(pts[op][p] / 8 / (uint64_t)op_arrays[op]);
                    if (x.n < 16)
                        x.n = 16;
                    double bytes = 8.0 * (double)op_arrays[op] * (double)x.n;
                    if ((rc = comet_bench_measure(&s.cfg, stream_fn, &x, &res, err, errlen)))
                        goto fail;
                    int valid = stream_valid(&x);
                    json_t *rec = comet_bench_record_new(&s.run, "memory", op_name[op],
                        op == OP_FILL ? "blas"
                            : x.vec   ? "avx2"
                                      : "scalar",
                        json_pack("{s:I}", "bytes", (json_int_t)(bytes)), T);
                    if (rec)
                        json_object_set_new(rec, "params",
                            json_pack("{s:I,s:s}", "elements", (json_int_t)x.n, "dtype", "f64"));
                    double gbs = res.stats.median > 0 ? bytes / res.stats.median / 1e9 : 0;
                    if (op == OP_TRIAD && vlist[vi] && p + 1 == npts_op[op])
                        best_triad[ti ? 1 : 0] = gbs;
                    rc = emit(&s, rec, &res, op == OP_TRIAD ? 2.0 * (double)x.n : 0, bytes, valid,
                        err, errlen);
                    comet_bench_result_free(&res);
                    if (rc)
                        goto fail;
                    char note[96];
                    snprintf(note, sizeof note, "%s T=%d %.0f KiB: %.1f GB/s", op_name[op], T,
                        bytes / 1024, gbs);
                    bench_session_step(&s, note);
                }
            }
        }
    }

    openblas_set_num_threads(blas_threads);
    blas_threads = 0;

    /* Vector ops, one thread: cost per element in cache and streaming. */
    bench_session_pin(&s, 1);
    for (size_t i = 0; i < n_stream; i++)
        vx[i] = 0.25f + (float)(i % 1000) * 0.001f;
    for (int reg = 0; reg < 2 && !s.stop; reg++) {
        size_t n = reg ? n_stream : n_cache;
        for (int op = 0; op < NVOPS && !s.stop; op++) {
            vec_ctx v = { (enum vec_op)op, n, vx, vy, 1.5f };
            if ((rc = comet_bench_measure(&s.cfg, vec_fn, &v, &res, err, errlen)))
                goto fail;
            int valid = vec_valid(&v);
            int reduce = op == V_MAX || op == V_SUM;
            double bytes = (reduce ? 4.0 : 8.0) * (double)n;
            json_t *rec = comet_bench_record_new(&s.run, "vecop", vop_name[op], bench_vecop_impl(),
                json_pack("{s:I}", "n", (json_int_t)n), 1);
            if (rec) {
                json_object_set_new(rec, "params",
                    json_pack("{s:s,s:s}", "regime", reg ? "stream" : "cache", "dtype", "f32"));
                json_object_set_new(
                    rec, "ns_per_elem", json_real(res.stats.median * 1e9 / (double)n));
            }
            char note[96];
            snprintf(note, sizeof note, "%s %s: %.3f ns/elem", vop_name[op],
                reg ? "stream" : "cache", res.stats.median * 1e9 / (double)n);
            rc = emit(&s, rec, &res, (double)n, bytes, valid, err, errlen);
            comet_bench_result_free(&res);
            if (rc)
                goto fail;
            bench_session_step(&s, note);
        }
    }
    /* Row passes: softmax and LayerNorm rows of 16, 64 and 256 floats, in
     * cache, and the distributed LayerNorm's local passes (kernels/dist.c). */
    float gamma[256], beta[256];
    for (int j = 0; j < 256; j++)
        gamma[j] = 1.0f, beta[j] = 0.0f;
    for (int w = 0; w < 3 * ROW_WIDTHS && !s.stop; w++) {
        const int ln = w / ROW_WIDTHS;
        const size_t width = row_width[w % ROW_WIDTHS];
        const char *name = ln == 2 ? "dist_layernorm_row" : ln ? "layernorm_row" : "softmax_row";
        row_ctx r = { n_cache / width, width, ln, vx, gamma, beta, vy, NULL, NULL };
        if (r.rows < 1)
            r.rows = 1;
        if (ln == 2) {
            r.mean = malloc(2 * r.rows * sizeof(double));
            if (!r.mean) {
                rc = comet_util_seterr(err, errlen, -ENOMEM, "bench memory: out of memory");
                goto fail;
            }
            r.rstd = r.mean + r.rows;
            memcpy(vy, vx, r.rows * r.width * sizeof(float));
        }
        rc = comet_bench_measure(&s.cfg, row_fn, &r, &res, err, errlen);
        int valid = rc ? 0 : row_valid(&r);
        free(r.mean);
        if (rc)
            goto fail;
        double n = (double)(r.rows * r.width);
        json_t *rec = comet_bench_record_new(&s.run, "vecop", name, bench_vecop_impl(),
            json_pack("{s:I,s:I}", "n", (json_int_t)n, "width", (json_int_t)r.width), 1);
        if (rec) {
            json_object_set_new(
                rec, "params", json_pack("{s:s,s:s}", "regime", "cache", "dtype", "f32"));
            json_object_set_new(rec, "ns_per_elem", json_real(res.stats.median * 1e9 / n));
            json_object_set_new(
                rec, "ns_per_row", json_real(res.stats.median * 1e9 / (double)r.rows));
        }
        char note[96];
        snprintf(note, sizeof note, "%s rows of %zu: %.1f ns/row", name, r.width,
            res.stats.median * 1e9 / (double)r.rows);
        /* flops as comet_kernels_flops counts the epilogues */
        rc = emit(&s, rec, &res, (ln ? 8.0 : 5.0) * n, 8.0 * n, valid, err, errlen);
        comet_bench_result_free(&res);
        if (rc)
            goto fail;
        bench_session_step(&s, note);
    }
    /* The epilogue's stores: softmax and LayerNorm rows of 1024 and 4096
     * from a tile of at most a quarter of L2, cached against streamed. */
    const size_t tile_bytes = (size_t)(l2 / 4 < (256u << 10) ? l2 / 4 : (256u << 10));
    for (int w = 0; w < 2 * STORE_WIDTHS * 2 && !s.stop; w++) {
        const int ln = w / (2 * STORE_WIDTHS), stream = w % 2;
        const size_t width = store_width[(w / 2) % STORE_WIDTHS];
        store_ctx c
            = { ln, stream, width, tile_bytes / (width * sizeof(float)), 0, vx, NULL, NULL, NULL };
        if (c.tile_rows < 1)
            c.tile_rows = 1;
        c.tiles = n_stream / (c.tile_rows * width);
        if (c.tiles < 1 || 2 * c.tile_rows * width > n_stream)
            continue; /* a buffer below two tiles: nothing to stream to */
        float *g = malloc(2 * width * sizeof(float));
        if (!g) {
            rc = comet_util_seterr(err, errlen, -ENOMEM, "bench memory: out of memory");
            goto fail;
        }
        for (size_t j = 0; j < width; j++)
            g[j] = 1.0f, g[width + j] = 0.0f;
        c.gamma = g;
        c.beta = g + width;
        /* cache: the output tile right after the input tile */
        c.y = stream ? vy : vx + c.tile_rows * width;
        rc = comet_bench_measure(&s.cfg, store_fn, &c, &res, err, errlen);
        row_ctx chk = { c.tile_rows, width, ln, vx, c.gamma, c.beta,
            store_tile_out(&c, c.tiles - 1), NULL, NULL };
        int valid = rc ? 0 : row_valid(&chk);
        free(g);
        if (rc)
            goto fail;
        const double rows = (double)(c.tiles * c.tile_rows), n = rows * (double)width;
        const char *name = ln ? "layernorm_row_store" : "softmax_row_store";
        json_t *rec = comet_bench_record_new(&s.run, "vecop", name, bench_vecop_impl(),
            json_pack("{s:I,s:I}", "n", (json_int_t)n, "width", (json_int_t)width), 1);
        if (rec) {
            json_object_set_new(rec, "params",
                json_pack("{s:s,s:s,s:I}", "regime", stream ? "stream" : "cache", "dtype", "f32",
                    "tile_m", (json_int_t)c.tile_rows));
            json_object_set_new(rec, "ns_per_elem", json_real(res.stats.median * 1e9 / n));
            json_object_set_new(rec, "ns_per_row", json_real(res.stats.median * 1e9 / rows));
        }
        char note[96];
        snprintf(note, sizeof note, "%s rows of %zu %s: %.1f ns/row", name, width,
            stream ? "streamed" : "cached", res.stats.median * 1e9 / rows);
        rc = emit(&s, rec, &res, (ln ? 8.0 : 5.0) * n, 8.0 * n, valid, err, errlen);
        comet_bench_result_free(&res);
        if (rc)
            goto fail;
        bench_session_step(&s, note);
    }
    json_t *hl = json_pack("{s:f,s:f}", "triad_gbs_1thread_largest", best_triad[0],
        "triad_gbs_allcores_largest", best_triad[1]);
    rc = bench_session_close(&s, hl, err, errlen);
    free(a);
    free(b);
    free(c);
    free(vx);
    free(vy);
    return rc;
fail:
    if (blas_threads > 0)
        openblas_set_num_threads(blas_threads);
    comet_bench_result_free(&res);
    bench_session_abort(&s);
    free(a);
    free(b);
    free(c);
    free(vx);
    free(vy);
    return rc;
}
