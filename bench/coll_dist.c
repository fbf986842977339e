/* The distributed compound kernels under the collectives bench: ranks are
 * COMET's spatial clusters. GEMM-Softmax and GEMM-LayerNorm split N over the
 * ranks (fused: all-reduces of M-vectors of row statistics; unfused: the
 * intermediate all-gathered), attention splits the KV sequence (fused:
 * merge of max, sum and partial O). Each result is gathered and checked
 * against the single-process kernel on rank 0; each record lists the
 * collectives the call issued. */
#include "coll_internal.h"
#include "comet_kernels.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Deterministic input in [-1, 1) from a global index (so every rank can
 * generate its slice and rank 0 the whole tensor). */
static float gen(uint64_t seed, uint64_t i)
{
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

typedef struct dist_case {
    comet_kernels_op op;
    comet_kernels_variant v;
    size_t M, n, K; /* GEMM ops: n = columns per rank */
    size_t bh, lq, lk, d; /* attention: lk = keys per rank */
} dist_case;

typedef struct dist_buf {
    const dist_case *c;
    comet_kernels_params prm;
    float *A, *B, *g, *b, *Y; /* GEMM ops (rank slices); attention: A=Q, B=K, g=V, Y=O */
    comet_kernels_coll_log log;
    int rc; /* first kernel error */
} dist_buf;

static int dist_call(void *vb)
{
    dist_buf *b = vb;
    const dist_case *c = b->c;
    int rc;
    if (c->op == COMET_KERNELS_GEMM_SOFTMAX)
        rc = comet_kernels_dist_gemm_softmax(
            MPI_COMM_WORLD, c->v, c->M, c->n, c->K, b->A, b->B, b->Y, &b->prm, &b->log);
    else if (c->op == COMET_KERNELS_GEMM_LAYERNORM)
        rc = comet_kernels_dist_gemm_layernorm(
            MPI_COMM_WORLD, c->v, c->M, c->n, c->K, b->A, b->B, b->g, b->b, b->Y, &b->prm, &b->log);
    else {
        comet_kernels_shape s = { 0 };
        s.batch = 1;
        s.heads = c->bh;
        s.lq = c->lq;
        s.lk = c->lk;
        s.d = c->d;
        rc = comet_kernels_dist_attention(
            MPI_COMM_WORLD, c->v, &s, b->A, b->B, b->g, b->Y, &b->prm, &b->log);
    }
    if (rc && !b->rc)
        b->rc = rc;
    return rc ? MPI_ERR_OTHER : MPI_SUCCESS;
}

/* The single-process shape of the whole distributed problem. */
static comet_kernels_shape global_shape(const dist_case *c, int p)
{
    comet_kernels_shape s = { 0 };
    if (c->op == COMET_KERNELS_ATTENTION) {
        s.batch = 1;
        s.heads = c->bh;
        s.lq = c->lq;
        s.lk = c->lk * (size_t)p;
        s.d = c->d;
    } else {
        s.M = c->M;
        s.N = c->n * (size_t)p;
        s.K = c->K;
    }
    return s;
}

/* Fills this rank's inputs (slices of the global tensors). */
static int fill(dist_buf *b, int rank, int p)
{
    const dist_case *c = b->c;
    if (c->op == COMET_KERNELS_ATTENTION) {
        size_t q = c->bh * c->lq * c->d, kv = c->bh * c->lk * c->d, L = c->lk * (size_t)p;
        b->A = malloc(q * 4);
        b->B = malloc(kv * 4);
        b->g = malloc(kv * 4);
        b->Y = malloc(q * 4);
        if (!b->A || !b->B || !b->g || !b->Y)
            return -ENOMEM;
        for (size_t i = 0; i < q; i++)
            b->A[i] = gen(1, i);
        for (size_t h = 0; h < c->bh; h++)
            for (size_t j = 0; j < c->lk; j++)
                for (size_t e = 0; e < c->d; e++) {
                    size_t gi = (h * L + (size_t)rank * c->lk + j) * c->d + e;
                    b->B[(h * c->lk + j) * c->d + e] = gen(2, gi);
                    b->g[(h * c->lk + j) * c->d + e] = gen(3, gi);
                }
        return 0;
    }
    size_t N = c->n * (size_t)p;
    b->A = malloc(c->M * c->K * 4);
    b->B = malloc(c->K * c->n * 4);
    b->g = malloc(c->n * 4);
    b->b = malloc(c->n * 4);
    b->Y = malloc(c->M * c->n * 4);
    if (!b->A || !b->B || !b->g || !b->b || !b->Y)
        return -ENOMEM;
    for (size_t i = 0; i < c->M * c->K; i++)
        b->A[i] = gen(1, i);
    for (size_t k = 0; k < c->K; k++)
        for (size_t j = 0; j < c->n; j++)
            b->B[k * c->n + j] = gen(2, k * N + (size_t)rank * c->n + j);
    for (size_t j = 0; j < c->n; j++) {
        b->g[j] = 1.0f + 0.1f * gen(3, (size_t)rank * c->n + j);
        b->b[j] = 0.1f * gen(4, (size_t)rank * c->n + j);
    }
    return 0;
}

/* Rank 0: runs the single-process unfused kernel on the whole problem and
 * compares with the gathered distributed result. 1 = matches. */
static int verify(const dist_buf *b, const float *got, int p, double *maxerr)
{
    const dist_case *c = b->c;
    comet_kernels_shape s = global_shape(c, p);
    comet_kernels_params prm = b->prm;
    float *A = NULL, *B = NULL, *V = NULL, *g = NULL, *bt = NULL, *ref = NULL;
    void *ws = NULL;
    size_t wsb = 0;
    int ok = 0;
    if (comet_kernels_workspace_size(c->op, COMET_KERNELS_UNFUSED, &s, &prm, &wsb) != 0)
        return 0;
    ws = wsb ? malloc(wsb) : NULL;
    if (c->op == COMET_KERNELS_ATTENTION) {
        size_t q = s.heads * s.lq * s.d, kv = s.heads * s.lk * s.d;
        A = malloc(q * 4);
        B = malloc(kv * 4);
        V = malloc(kv * 4);
        ref = malloc(q * 4);
        if (!A || !B || !V || !ref || (wsb && !ws))
            goto out;
        for (size_t i = 0; i < q; i++)
            A[i] = gen(1, i);
        for (size_t i = 0; i < kv; i++) {
            B[i] = gen(2, i);
            V[i] = gen(3, i);
        }
        if (comet_kernels_attention(COMET_KERNELS_UNFUSED, &s, A, B, V, ref, &prm, ws, wsb) != 0)
            goto out;
        *maxerr = 0;
        ok = 1;
        for (size_t i = 0; i < q; i++) {
            double e = fabs((double)got[i] - ref[i]);
            *maxerr = e > *maxerr ? e : *maxerr;
            if (!(e <= 1e-4 + 1e-3 * fabs(ref[i])))
                ok = 0;
        }
        goto out;
    }
    size_t M = s.M, N = s.N, K = s.K;
    A = malloc(M * K * 4);
    B = malloc(K * N * 4);
    g = malloc(N * 4);
    bt = malloc(N * 4);
    ref = malloc(M * N * 4);
    if (!A || !B || !g || !bt || !ref || (wsb && !ws))
        goto out;
    for (size_t i = 0; i < M * K; i++)
        A[i] = gen(1, i);
    for (size_t i = 0; i < K * N; i++)
        B[i] = gen(2, i);
    for (size_t j = 0; j < N; j++) {
        g[j] = 1.0f + 0.1f * gen(3, j);
        bt[j] = 0.1f * gen(4, j);
    }
    int rc = c->op == COMET_KERNELS_GEMM_SOFTMAX
        ? comet_kernels_gemm_softmax(COMET_KERNELS_UNFUSED, M, N, K, A, B, ref, &prm, ws, wsb)
        : comet_kernels_gemm_layernorm(
            COMET_KERNELS_UNFUSED, M, N, K, A, B, g, bt, ref, &prm, ws, wsb);
    if (rc != 0)
        goto out;
    /* softmax values are ~1/N: a tighter absolute floor */
    double atol = c->op == COMET_KERNELS_GEMM_SOFTMAX ? 1e-6 : 1e-4;
    *maxerr = 0;
    ok = 1;
    for (int r = 0; r < p; r++) /* gathered layout: [rank][M][n] */
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < c->n; j++) {
                double y = got[((size_t)r * M + i) * c->n + j],
                       want = ref[i * N + (size_t)r * c->n + j], e = fabs(y - want);
                *maxerr = e > *maxerr ? e : *maxerr;
                if (!(e <= atol + 1e-3 * fabs(want)))
                    ok = 0;
            }
out:
    free(A);
    free(B);
    free(V);
    free(g);
    free(bt);
    free(ref);
    free(ws);
    return ok;
}

static json_t *shape_json(const dist_case *c, int p)
{
    if (c->op == COMET_KERNELS_ATTENTION)
        return json_pack("{s:i,s:I,s:I,s:I,s:I,s:i}", "B", 1, "H", (json_int_t)c->bh, "Lq",
            (json_int_t)c->lq, "Lk", (json_int_t)(c->lk * (size_t)p), "d", (json_int_t)c->d,
            "causal", 0);
    return json_pack("{s:I,s:I,s:I}", "M", (json_int_t)c->M, "N", (json_int_t)(c->n * (size_t)p),
        "K", (json_int_t)c->K);
}

static json_t *log_json(const comet_kernels_coll_log *log)
{
    json_t *a = json_array();
    for (int i = 0; i < log->n; i++) {
        const comet_kernels_coll *e = &log->e[i];
        json_t *o = json_pack("{s:s,s:I,s:I,s:i}", "kind", e->kind, "count", (json_int_t)e->count,
            "bytes", (json_int_t)e->bytes, "calls", e->calls);
        if (e->op[0])
            json_object_set_new(o, "op", json_string(e->op));
        json_array_append_new(a, o);
    }
    return a;
}

/* Measures one case; returns 0, 1 (wrong result / write error). */
/* The tail every distributed-kernel record shares: its work (FLOP, bytes
 * and their rates at the median), the largest error against the reference
 * (-1: not checked) and the collectives the kernel logged; appended to the
 * results and released. 1 if the append failed (said on stderr). */
static int finish_record(coll_ctx *cx, json_t *rec, double fl, double by, double median,
    double maxerr, const comet_kernels_coll_log *log)
{
    char err[COMET_ERRLEN];
    json_object_set_new(rec, "flops", json_real(fl));
    json_object_set_new(rec, "bytes", json_real(by));
    json_object_set_new(rec, "gflops", json_real(fl / median * 1e-9));
    json_object_set_new(rec, "gbs", json_real(by / median * 1e-9));
    json_object_set_new(rec, "max_abs_err", json_real(isfinite(maxerr) ? maxerr : -1));
    json_object_set_new(rec, "collectives", log_json(log));
    const int bad = comet_results_writer_append(&cx->w, rec, err, sizeof err) != 0;
    if (bad)
        fprintf(stderr, "comet: bench collectives: %s\n", err);
    json_decref(rec);
    return bad;
}

/* Six warm-up calls, then the timed samples the job's set asks for (the
 * collectives' own sampler: each sample at least min_sample_s); the ranks'
 * rc agreed. */
static int time_kernel(
    coll_ctx *cx, int (*call)(void *), void *b, const int *brc, double *samples, int *n, int *iters)
{
    for (int i = 0; i < 6; i++)
        call(b);
    const int nmax = cx->job->full ? 15 : 7, nmin = cx->job->full ? 5 : 3;
    *n = 0;
    *iters = 1;
    int mrc = comet_bench__coll_measure(call, b, 1,
        cx->job->min_sample_s > 0 ? cx->job->min_sample_s : 5e-3, nmin, nmax, cx->job->sample_cap_s,
        samples, NULL, n, iters);
    return comet_bench__coll_allmin(mrc == MPI_SUCCESS && *brc == 0);
}

static int one_case(coll_ctx *cx, const dist_case *c)
{
    int rank = cx->rank, p = cx->p, rc = 0;
    dist_buf b;
    memset(&b, 0, sizeof b);
    b.c = c;
    comet_kernels_shape ls = global_shape(c, 1); /* the rank's local problem */
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
         l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    comet_kernels_default_params(c->op, &ls, l1 > 0 ? (size_t)l1 : 0, l2 > 0 ? (size_t)l2 : 0,
        l3 > 0 ? (size_t)l3 : 0, 1, &b.prm);
    float *got = NULL;
    if (!comet_bench__coll_allmin(fill(&b, rank, p) == 0)) {
        if (rank == 0)
            fprintf(stderr, "comet: bench collectives: %s: out of memory\n",
                comet_kernels_op_name(c->op));
        rc = 1;
        goto out;
    }
    /* one call for the check, then > 5 warm-up calls (MPICH's shm switch) */
    int krc = dist_call(&b);
    size_t ylen = c->op == COMET_KERNELS_ATTENTION ? c->bh * c->lq * c->d : c->M * c->n;
    if (rank == 0)
        got = malloc(ylen * (c->op == COMET_KERNELS_ATTENTION ? 1 : (size_t)p) * 4);
    if (c->op == COMET_KERNELS_ATTENTION) {
        if (got)
            memcpy(got, b.Y, ylen * 4); /* every rank ends with the full O */
    } else {
        MPI_Gather(b.Y, (int)ylen, MPI_FLOAT, got, (int)ylen, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
    int ok = krc == MPI_SUCCESS;
    double maxerr = NAN;
    if (rank == 0)
        ok = ok && got && verify(&b, got, p, &maxerr);
    ok = comet_bench__coll_bcast0(ok);
    double samples[32], rd[2];
    int n = 0, iters = 1;
    rd[0] = comet_bench__coll_c2c_ns(cx); /* the placement the samples ran in */
    ok = time_kernel(cx, dist_call, &b, &b.rc, samples, &n, &iters) && ok;
    rd[1] = comet_bench__coll_c2c_ns(cx);
    if (rank == 0 && n > 0) {
        comet_bench_stats st;
        comet_bench_stats_compute(samples, (size_t)n, &st);
        comet_kernels_shape gs = global_shape(c, p);
        double fl = comet_kernels_flops(c->op, &gs), by = comet_kernels_bytes(c->op, c->v, &gs);
        json_t *rec = comet_bench_record_new(&cx->run, "dist_kernel", comet_kernels_op_name(c->op),
            comet_kernels_variant_name(c->v), shape_json(c, p), 1);
        json_t *pa = c->op == COMET_KERNELS_ATTENTION
            ? json_pack("{s:s,s:I,s:I}", "split", "Lk", "lk_local", (json_int_t)c->lk, "tile_n",
                (json_int_t)b.prm.tile_n)
            : json_pack("{s:s,s:I}", "split", "N", "n_local", (json_int_t)c->n);
        json_object_set_new(pa, "tile_m", json_integer((json_int_t)b.prm.tile_m));
        comet_bench__coll_common(cx, rec, pa, samples, (size_t)n, &st, ok, iters);
        comet_bench__coll_c2c_json(rec, rd, 2);
        if (finish_record(cx, rec, fl, by, st.median, maxerr, &b.log))
            rc = 1;
        if (!ok) {
            fprintf(stderr,
                "comet: bench collectives: distributed %s/%s returned a wrong result "
                "(kernel code %d, max abs error %g)\n",
                comet_kernels_op_name(c->op), comet_kernels_variant_name(c->v), b.rc, maxerr);
            rc = 1;
        }
    }
out:
    free(got);
    free(b.A);
    free(b.B);
    free(b.g);
    free(b.b);
    free(b.Y);
    return comet_bench__coll_bcast0(rc);
}

/* ------------------------------------------------------------------ */
/* Distributed MoE (expert parallelism): op "gms", workload "moe"       */
/* ------------------------------------------------------------------ */

typedef struct moe_case {
    size_t tokens, experts, K, N; /* tokens and experts over all ranks */
    double skew;
    comet_kernels_gms_dataflow df;
} moe_case;

typedef struct moe_buf {
    comet_kernels_moe_input in;
    comet_kernels_gms_dataflow df;
    comet_kernels_gms_params prm;
    comet_kernels_moe_ws ws;
    comet_kernels_coll_log log;
    int rc;
} moe_buf;

static int moe_call(void *vb)
{
    moe_buf *b = vb;
    int rc = comet_kernels_dist_moe(MPI_COMM_WORLD, &b->in, b->df, &b->prm, &b->ws, &b->log);
    if (rc && !b->rc)
        b->rc = rc;
    return rc ? MPI_ERR_OTHER : MPI_SUCCESS;
}

/* Measures one MoE case: every rank builds the global routing (the moe
 * generator), takes its token block and its experts, checks its output
 * against a double-precision reference of its tokens; rank 0 writes the
 * record with every rank's load and the all-to-alls (bytes: the largest
 * rank's). Returns 0, 1 (wrong result / write error). */
static int one_moe(coll_ctx *cx, const moe_case *c)
{
    const int rank = cx->rank, p = cx->p;
    const size_t T = c->tokens, E = c->experts, K = c->K, N = c->N;
    int rc = 0, ok = 1;
    uint32_t *ex = malloc(T * 2 * sizeof *ex);
    float *gate = malloc(T * 2 * sizeof *gate), *x = malloc(T * K * 4), *W = malloc(E * K * N * 4),
          *y = malloc(T * N * 4);
    size_t *per = calloc(E, sizeof *per);
    moe_buf b;
    memset(&b, 0, sizeof b);
    ok = ex && gate && x && W && y && per
        && comet_kernels_moe_route(T, E, c->skew, 42, ex, gate) == 0;
    if (!comet_bench__coll_allmin(ok)) {
        if (rank == 0)
            fprintf(stderr, "comet: bench collectives: gms moe: out of memory\n");
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < T * K; i++)
        x[i] = gen(5, i);
    for (size_t i = 0; i < E * K * N; i++)
        W[i] = 0.125f * gen(6, i);
    size_t t0 = T * (size_t)rank / (size_t)p, t1 = T * (size_t)(rank + 1) / (size_t)p, e0, ne;
    comet_kernels_moe_owner(E, p, rank, &e0, &ne);
    b.in = (comet_kernels_moe_input) { .tokens = t1 - t0,
        .K = K,
        .N = N,
        .experts = E,
        .topk = 2,
        .expert = ex + t0 * 2,
        .gate = gate + t0 * 2,
        .x = x + t0 * K,
        .W = ne ? W + e0 * K * N : NULL,
        .y = y };
    b.df = c->df;
    b.prm.threads = 1;
    b.prm.tile_m = 48;
    int krc = moe_call(&b);
    double maxerr = 0;
    for (size_t t = t0; krc == MPI_SUCCESS && t < t1; t++)
        for (size_t j = 0; j < N; j++) {
            double want = 0;
            for (int s = 0; s < 2; s++) {
                const float *w = W + ex[t * 2 + s] * K * N;
                double d = 0;
                for (size_t k = 0; k < K; k++)
                    d += (double)x[t * K + k] * w[k * N + j];
                want += gate[t * 2 + s] * d;
            }
            double e = fabs(y[(t - t0) * N + j] - want);
            maxerr = e > maxerr ? e : maxerr;
            if (!(e <= 1e-4 + 1e-3 * fabs(want)))
                ok = 0;
        }
    ok = comet_bench__coll_allmin(ok && krc == MPI_SUCCESS);
    MPI_Allreduce(MPI_IN_PLACE, &maxerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* the record's all-to-alls: the largest rank's bytes */
    unsigned long long lb[COMET_KERNELS_MAX_COLL] = { 0 };
    for (int i = 0; i < b.log.n; i++)
        lb[i] = b.log.e[i].bytes;
    MPI_Allreduce(
        MPI_IN_PLACE, lb, COMET_KERNELS_MAX_COLL, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    comet_kernels_coll_log lg = b.log;
    for (int i = 0; i < lg.n; i++) {
        lg.e[i].bytes = (size_t)lb[i];
        lg.e[i].count = (size_t)lb[i] / 4;
    }
    double samples[32], rd[2];
    int n = 0, iters = 1;
    rd[0] = comet_bench__coll_c2c_ns(cx);
    ok = time_kernel(cx, moe_call, &b, &b.rc, samples, &n, &iters) && ok;
    rd[1] = comet_bench__coll_c2c_ns(cx);
    if (rank == 0 && n > 0) {
        comet_bench_stats st;
        comet_bench_stats_compute(samples, (size_t)n, &st);
        size_t maxseg = 0;
        for (size_t i = 0; i < T * 2; i++)
            per[ex[i]]++;
        for (size_t e = 0; e < E; e++)
            maxseg = per[e] > maxseg ? per[e] : maxseg;
        size_t *rs = calloc((size_t)p * 2, sizeof *rs); /* remote sent, received */
        for (size_t i = 0; rs && i < T * 2; i++) {
            size_t loc;
            int from = 0, to = 0;
            while ((size_t)(from + 1) < (size_t)p && T * (size_t)(from + 1) / (size_t)p <= i / 2)
                from++;
            for (; to < p; to++) {
                comet_kernels_moe_owner(E, p, to, &loc, &e0);
                if (ex[i] >= loc && ex[i] < loc + e0)
                    break;
            }
            if (from != to)
                rs[2 * from]++, rs[2 * to + 1]++;
        }
        json_t *loads = json_array();
        for (int q = 0; q < p; q++) {
            size_t a = T * (size_t)q / (size_t)p, z = T * (size_t)(q + 1) / (size_t)p, f, m;
            size_t pairs = 0, segs = 0, mx = 0;
            comet_kernels_moe_owner(E, p, q, &f, &m);
            for (size_t e = f; e < f + m; e++) {
                pairs += per[e];
                segs += per[e] > 0;
                mx = per[e] > mx ? per[e] : mx;
            }
            json_array_append_new(loads,
                json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "tokens", (json_int_t)(z - a), "sent",
                    (json_int_t)((z - a) * 2), "pairs", (json_int_t)pairs, "segments",
                    (json_int_t)segs, "max_seg", (json_int_t)mx, "remote_sent",
                    (json_int_t)(rs ? rs[2 * q] : 0), "remote_recv",
                    (json_int_t)(rs ? rs[2 * q + 1] : 0)));
        }
        free(rs);
        json_t *shape = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "rows", (json_int_t)T,
            "segments", (json_int_t)E, "pairs", (json_int_t)(T * 2), "max_seg", (json_int_t)maxseg,
            "K", (json_int_t)K, "N", (json_int_t)N, "skew", c->skew);
        json_t *rec = comet_bench_record_new(
            &cx->run, "dist_kernel", "gms", comet_kernels_gms_dataflow_name(c->df), shape, 1);
        json_object_set_new(rec, "dataflow", json_string(comet_kernels_gms_dataflow_name(c->df)));
        json_object_set_new(rec, "workload", json_string("moe"));
        json_t *pa = json_pack("{s:s,s:I}", "split", "experts", "tile_m", (json_int_t)b.prm.tile_m);
        comet_bench__coll_common(cx, rec, pa, samples, (size_t)n, &st, ok, iters);
        comet_bench__coll_c2c_json(rec, rd, 2);
        double fl = 2.0 * (double)(T * 2) * (double)K * (double)N,
               by = 4.0 * ((double)T * (K + N) + (double)E * K * N);
        json_object_set_new(rec, "rank_loads", loads);
        if (finish_record(cx, rec, fl, by, st.median, maxerr, &lg))
            rc = 1;
        if (!ok) {
            fprintf(stderr,
                "comet: bench collectives: distributed gms/moe %s returned a wrong result "
                "(kernel code %d, max abs error %g)\n",
                comet_kernels_gms_dataflow_name(c->df), b.rc, maxerr);
            rc = 1;
        }
    }
out:
    free(ex);
    free(gate);
    free(x);
    free(W);
    free(y);
    free(per);
    comet_kernels_moe_ws_free(&b.ws);
    return comet_bench__coll_bcast0(rc);
}

int comet_bench__coll_dist(coll_ctx *cx)
{
    /* quick: small shapes (the row-statistics all-reduces are a visible
     * share); full: shapes where the GEMM dominates as well */
    static const dist_case quick[] = {
        { COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, 128, 256, 64, 0, 0, 0, 0 },
        { COMET_KERNELS_GEMM_LAYERNORM, COMET_KERNELS_FUSED, 128, 256, 64, 0, 0, 0, 0 },
        { COMET_KERNELS_ATTENTION, COMET_KERNELS_FUSED, 0, 0, 0, 2, 128, 256, 64 },
    };
    static const dist_case full[] = {
        { COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, 256, 1024, 64, 0, 0, 0, 0 },
        { COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, 512, 2048, 256, 0, 0, 0, 0 },
        { COMET_KERNELS_GEMM_LAYERNORM, COMET_KERNELS_FUSED, 256, 1024, 64, 0, 0, 0, 0 },
        { COMET_KERNELS_GEMM_LAYERNORM, COMET_KERNELS_FUSED, 512, 2048, 256, 0, 0, 0, 0 },
        { COMET_KERNELS_ATTENTION, COMET_KERNELS_FUSED, 0, 0, 0, 4, 256, 1024, 64 },
        { COMET_KERNELS_ATTENTION, COMET_KERNELS_FUSED, 0, 0, 0, 8, 512, 1024, 64 },
    };
    const dist_case *set = cx->job->full ? full : quick;
    size_t n = cx->job->full ? sizeof full / sizeof *full : sizeof quick / sizeof *quick;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        for (int v = 0; v < 2 && rc == 0; v++) {
            dist_case c = set[i];
            c.v = v ? COMET_KERNELS_FUSED : COMET_KERNELS_UNFUSED;
            rc = one_case(cx, &c);
        }
    /* MoE over the ranks: tokens top-2 over experts (skewed popularity),
     * the unfused and the fused local dataflow; full: all four, two skews */
    static const moe_case mq[] = { { 4096, 8, 64, 64, 1.0, COMET_KERNELS_GMS_UNFUSED } };
    static const moe_case mf[] = { { 16384, 8, 64, 64, 0.0, COMET_KERNELS_GMS_UNFUSED },
        { 16384, 8, 64, 64, 2.0, COMET_KERNELS_GMS_UNFUSED } };
    const moe_case *ms = cx->job->full ? mf : mq;
    size_t nm = cx->job->full ? sizeof mf / sizeof *mf : sizeof mq / sizeof *mq;
    for (size_t i = 0; i < nm && rc == 0; i++)
        for (int df = 1; df <= 4 && rc == 0; df++) {
            if (!cx->job->full && df != COMET_KERNELS_GMS_UNFUSED && df != COMET_KERNELS_GMS_FUSED)
                continue;
            moe_case c = ms[i];
            c.df = (comet_kernels_gms_dataflow)df;
            rc = one_moe(cx, &c);
        }
    return rc;
}
