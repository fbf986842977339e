/* Distributed compound kernels: ranks are COMET's spatial clusters. GEMM ops
 * split N across ranks and merge row statistics (M-vectors) with
 * all-reduces; attention splits the KV sequence and merges (max, sum,
 * partial O). The unfused baselines all-gather the full intermediate. */
#include "kernels_internal.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void log_add(
    comet_kernels_coll_log *log, const char *kind, const char *op, size_t count, size_t bytes)
{
    if (!log)
        return;
    for (int i = 0; i < log->n; i++)
        if (!strcmp(log->e[i].kind, kind) && !strcmp(log->e[i].op, op)
            && log->e[i].count == count) {
            log->e[i].calls++;
            return;
        }
    if (log->n >= COMET_KERNELS_MAX_COLL)
        return;
    comet_kernels_coll *e = &log->e[log->n++];
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    snprintf(e->op, sizeof e->op, "%s", op);
    e->count = count;
    e->bytes = bytes;
    e->calls = 1;
}

static int mpi_rc(int rc)
{
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* Local GEMM of the rank's slice: C (M x n) = alpha * A B_local, threaded.
 * A rank may hold no columns (n == 0): it still takes part in every
 * collective. */
static void local_gemm(size_t M, size_t n, size_t K, float alpha, const float *A, const float *B,
    float *C, int threads)
{
    if (n == 0)
        return;
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)n, (int)K, alpha, A, (int)K,
        B, (int)n, 0.0f, C, (int)n);
    openblas_set_num_threads(saved);
}

/* Stands in for the slice pointers of a rank with no columns (which may be
 * NULL): never read or written, but pointer arithmetic on NULL is undefined. */
static float no_columns;

static int dist_checks(MPI_Comm comm, size_t M, size_t n, size_t K, const float *A, const float **B,
    float **Y, const comet_kernels_params *p)
{
    size_t prod;
    int rc;
    if (comm == MPI_COMM_NULL || !A || !B || !Y || !p || p->threads <= 0)
        return -EINVAL;
    if (n == 0) {
        *B = &no_columns;
        *Y = &no_columns;
    }
    if (!*B || !*Y)
        return -EINVAL;
    if ((rc = kern_check_dims(M, n ? n : 1, K, NULL)) != 0
        || (rc = kern_check_dims(M, n ? n : 1, 1, &prod)))
        return rc;
    return 0;
}

/* Every rank's slice width and offset (one all-gather of an integer): the
 * unfused baselines gather slices of any widths, equal or not. */
static int slice_layout(MPI_Comm comm, size_t n, size_t per, int **counts, int **displs,
    size_t *total, int *nranks, int *rank, comet_kernels_coll_log *log)
{
    int P, r;
    long long mine = (long long)n, *all = NULL;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    all = malloc((size_t)P * sizeof *all);
    *counts = malloc((size_t)P * sizeof **counts);
    *displs = malloc((size_t)P * sizeof **displs);
    if (!all || !*counts || !*displs) {
        free(all);
        return -ENOMEM; /* the caller frees counts and displs */
    }
    int rc = mpi_rc(MPI_Allgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, comm));
    log_add(log, "allgather", "widths", 1, sizeof mine);
    size_t t = 0;
    for (int q = 0; rc == 0 && q < P; q++) {
        if (all[q] < 0 || (size_t)all[q] > (size_t)INT32_MAX / (per ? per : 1)
            || t * per > (size_t)INT32_MAX - (size_t)all[q] * per) {
            rc = -EOVERFLOW;
            break;
        }
        (*counts)[q] = (int)((size_t)all[q] * per);
        (*displs)[q] = (int)(t * per);
        t += (size_t)all[q];
    }
    free(all);
    if (rc == 0 && t == 0)
        rc = -EINVAL; /* no rank holds a column */
    *total = t;
    *nranks = P;
    *rank = r;
    return rc;
}

/* Unfused baseline: all-gather the slices of the M x n intermediate (any
 * widths) so every rank holds full rows, laid out [rank][M][width]; row i
 * of the whole is assembled by full_row. */
static int gather_full(MPI_Comm comm, size_t M, size_t n, const float *C, float **full,
    int **counts, int **displs, size_t *N, int *rank, comet_kernels_coll_log *log)
{
    int P;
    int rc = slice_layout(comm, n, M, counts, displs, N, &P, rank, log);
    if (rc)
        return rc;
    float *g = malloc(M * *N * sizeof(float));
    if (!g)
        return -ENOMEM;
    rc = mpi_rc(MPI_Allgatherv(C, (int)(M * n), MPI_FLOAT, g, *counts, *displs, MPI_FLOAT, comm));
    log_add(log, "allgatherv", "", M * n, M * n * sizeof(float));
    if (rc) {
        free(g);
        return rc;
    }
    *full = g;
    return 0;
}

/* Rows the unfused baselines stage at a time: whole rows of N floats, a
 * block of 64 KiB at most (it stays in L2 beside the gathered slices). */
static size_t stage_rows(size_t M, size_t N)
{
    size_t rb = (size_t)16384 / (N ? N : 1);
    rb = rb ? rb : 1;
    return rb < M ? rb : M;
}

/* Row i (of M) of the gathered [rank][M][width] layout, into row[N]. */
static void full_row(const float *full, MPI_Comm comm, const int *counts, const int *displs,
    size_t M, size_t i, float *row)
{
    int P;
    MPI_Comm_size(comm, &P);
    for (int q = 0; q < P; q++) {
        size_t w = (size_t)counts[q] / M, off = (size_t)displs[q] / M;
        memcpy(row + off, full + (size_t)displs[q] + i * w, w * sizeof(float));
    }
}

/* Rows i0..i0+nb-1 of the gathered layout, whole, into block[nb][N]. */
static void stage_block(const float *full, MPI_Comm comm, const int *counts, const int *displs,
    size_t M, size_t N, size_t i0, size_t nb, float *block)
{
    for (size_t i = 0; i < nb; i++)
        full_row(full, comm, counts, displs, M, i0 + i, block + i * N);
}

int comet_kernels_dist_gemm_softmax(MPI_Comm comm, comet_kernels_variant v, size_t M, size_t n,
    size_t K, const float *A, const float *B, float *Y, const comet_kernels_params *p,
    comet_kernels_coll_log *log)
{
    int rc = dist_checks(comm, M, n, K, A, &B, &Y, p);
    float *stat = NULL, *full = NULL, *row = NULL;
    int *counts = NULL, *displs = NULL;
    if (rc)
        return rc;
    float scale = p->scale != 0 ? p->scale : 1.0f;
    if (!isfinite(scale))
        return -EINVAL;
    if (log)
        memset(log, 0, sizeof *log);
    local_gemm(M, n, K, scale, A, B, Y, p->threads);

    if (v == COMET_KERNELS_UNFUSED) {
        int r = 0;
        size_t N = 0;
        if ((rc = gather_full(comm, M, n, Y, &full, &counts, &displs, &N, &r, log)) != 0)
            goto fail;
        /* whole rows staged a block at a time, then the row pass the
         * single-process unfused kernel runs (comet_kernels_softmax_rows):
         * over a block it overlaps one row's output with the next row's
         * exps, and its exps stay in two scratch rows */
        const size_t ldscr = (N + 15) / 16 * 16, rb = stage_rows(M, N);
        const size_t scr = (rb * N + 15) / 16 * 16; /* the scratch rows, 64-byte aligned */
        row = aligned_alloc(64, (scr + 2 * ldscr) * sizeof(float));
        if (!row) {
            rc = -ENOMEM;
            goto fail;
        }
        size_t off = (size_t)displs[r] / M;
        for (size_t i0 = 0; i0 < M; i0 += rb) {
            const size_t nb = M - i0 < rb ? M - i0 : rb;
            stage_block(full, comm, counts, displs, M, N, i0, nb, row);
            kern_softmax_rows_tile(nb, N, row, N, row, N, 1.0f, row + scr, ldscr, 0);
            for (size_t i = 0; i < nb; i++)
                memcpy(Y + (i0 + i) * n, row + i * N + off, n * sizeof(float));
        }
        goto fail; /* rc == 0: shared cleanup */
    }

    /* Fused: local max and local exp-sums while the slice is hot, then two
     * all-reduces of M floats (max; sums rescaled to the global max). */
    stat = malloc(3 * M * sizeof(float));
    if (!stat) {
        rc = -ENOMEM;
        goto fail;
    }
    float *mloc = stat, *mg = stat + M, *sum = stat + 2 * M;
    for (size_t i = 0; i < M; i++) {
        int nan = 0;
        mloc[i] = kern_row_max(Y + i * n, n, &nan);
        if (nan)
            mloc[i] = NAN;
    }
    /* MPI_MAX on floats propagates NaN on this MPICH only by luck, so a NaN
     * row is encoded as +inf and restored below. */
    for (size_t i = 0; i < M; i++)
        mg[i] = isnan(mloc[i]) ? INFINITY : mloc[i];
    rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, mg, (int)M, MPI_FLOAT, MPI_MAX, comm));
    log_add(log, "allreduce", "max", M, M * sizeof(float));
    if (rc)
        goto fail;
    for (size_t i = 0; i < M; i++) {
        float *y = Y + i * n;
        if (mg[i] == -INFINITY || isinf(mg[i]) || isnan(mloc[i])) {
            sum[i] = 0.0f;
            continue;
        }
        sum[i] = (float)kern_exp_shift_sum(y, y, n, mg[i]);
    }
    rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, sum, (int)M, MPI_FLOAT, MPI_SUM, comm));
    log_add(log, "allreduce", "sum", M, M * sizeof(float));
    if (rc)
        goto fail;
    for (size_t i = 0; i < M; i++) {
        float *y = Y + i * n;
        if (mg[i] == INFINITY) {
            /* a NaN (or +inf) somewhere in the global row */
            for (size_t j = 0; j < n; j++)
                y[j] = NAN;
        } else if (mg[i] == -INFINITY) {
            memset(y, 0, n * sizeof(float));
        } else {
            kern_scale(y, n, 1.0f / sum[i]);
        }
    }
fail:
    free(stat);
    free(full);
    free(row);
    free(counts);
    free(displs);
    return rc;
}

void comet_kernels_dist_ln_sums(size_t M, size_t n, const float *Y, double *sum)
{
    for (size_t i = 0; i < M; i++)
        sum[i] = n ? kern_row_sum(Y + i * n, n) : 0.0;
}

void comet_kernels_dist_ln_sqdev(size_t M, size_t n, const float *Y, const double *mean, double *sq)
{
    for (size_t i = 0; i < M; i++) {
        double s = 0;
        const float *y = Y + i * n;
        for (size_t j = 0; j < n; j++) {
            double dd = (double)y[j] - mean[i];
            s += dd * dd;
        }
        sq[i] = s;
    }
}

void comet_kernels_dist_ln_apply(size_t M, size_t n, float *Y, const double *mean,
    const double *rstd, const float *gamma, const float *beta)
{
    for (size_t i = 0; i < M; i++) {
        float *y = Y + i * n;
        /* in double: a spread beyond FLT_MAX must not overflow x - mean */
        for (size_t j = 0; j < n; j++)
            y[j] = (float)(((double)y[j] - mean[i]) * rstd[i] * (gamma ? gamma[j] : 1.0f)
                + (beta ? beta[j] : 0.0f));
    }
}

int comet_kernels_dist_gemm_layernorm(MPI_Comm comm, comet_kernels_variant v, size_t M, size_t n,
    size_t K, const float *A, const float *B, const float *gamma, const float *beta, float *Y,
    const comet_kernels_params *p, comet_kernels_coll_log *log)
{
    int rc = dist_checks(comm, M, n, K, A, &B, &Y, p);
    double *st = NULL;
    float *full = NULL, *row = NULL;
    int *counts = NULL, *displs = NULL;
    if (rc)
        return rc;
    float eps = p->eps != 0 ? p->eps : 1e-5f;
    if (!(eps > 0) || !isfinite(eps))
        return -EINVAL;
    if (log)
        memset(log, 0, sizeof *log);
    local_gemm(M, n, K, 1.0f, A, B, Y, p->threads);

    if (v == COMET_KERNELS_UNFUSED) {
        int r = 0;
        size_t N = 0;
        if ((rc = gather_full(comm, M, n, Y, &full, &counts, &displs, &N, &r, log)) != 0)
            goto fail;
        /* staged a block of whole rows at a time (as softmax's) */
        const size_t rb = stage_rows(M, N);
        row = malloc(rb * N * sizeof(float));
        if (!row) {
            rc = -ENOMEM;
            goto fail;
        }
        size_t off = (size_t)displs[r] / M;
        for (size_t i0 = 0; i0 < M; i0 += rb) {
            const size_t nb = M - i0 < rb ? M - i0 : rb;
            stage_block(full, comm, counts, displs, M, N, i0, nb, row);
            kern_layernorm_rows_tile(nb, N, row, N, row, N, NULL, NULL, eps, 0);
            for (size_t i = 0; i < nb; i++)
                for (size_t j = 0; j < n; j++) {
                    float x = row[i * N + off + j];
                    Y[(i0 + i) * n + j] = x * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
                }
        }
        goto fail;
    }

    /* Fused, two-pass across ranks: all-reduce the row sums (mean), then the
     * sums of squared deviations from the global mean. Doubles keep the
     * merged statistics as accurate as the local two-pass ones (and never
     * overflow on finite floats). The row width N is the sum of the slice
     * widths, which may differ: it rides in the first all-reduce. */
    st = malloc((2 * M + 1) * sizeof(double));
    if (!st) {
        rc = -ENOMEM;
        goto fail;
    }
    double *sum = st, *sq = st + M + 1;
    comet_kernels_dist_ln_sums(M, n, Y, sum);
    sum[M] = (double)n;
    rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, sum, (int)(M + 1), MPI_DOUBLE, MPI_SUM, comm));
    log_add(log, "allreduce", "sum", M + 1, (M + 1) * sizeof(double));
    if (rc)
        goto fail;
    double N = sum[M];
    if (!(N > 0)) {
        rc = -EINVAL; /* no rank holds a column */
        goto fail;
    }
    for (size_t i = 0; i < M; i++)
        sum[i] /= N; /* the global mean */
    comet_kernels_dist_ln_sqdev(M, n, Y, sum, sq);
    rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, sq, (int)M, MPI_DOUBLE, MPI_SUM, comm));
    log_add(log, "allreduce", "sum", M, M * sizeof(double));
    if (rc)
        goto fail;
    for (size_t i = 0; i < M; i++)
        sq[i] = 1.0 / sqrt(sq[i] / N + eps); /* the global 1 / std */
    comet_kernels_dist_ln_apply(M, n, Y, sum, sq, gamma, beta);
fail:
    free(st);
    free(full);
    free(row);
    free(counts);
    free(displs);
    return rc;
}

int comet_kernels_dist_attention(MPI_Comm comm, comet_kernels_variant v,
    const comet_kernels_shape *s, const float *Q, const float *K, const float *V, float *O,
    const comet_kernels_params *p, comet_kernels_coll_log *log)
{
    float *S = NULL, *buf = NULL, *full = NULL;
    int *counts = NULL, *displs = NULL;
    int rc = 0, P = 1, r = 0;
    if (comm == MPI_COMM_NULL || !s || !Q || !O || !p || p->threads <= 0)
        return -EINVAL;
    if (s->lk == 0) { /* a rank with no keys still takes part */
        K = &no_columns;
        V = &no_columns;
    }
    if (!K || !V)
        return -EINVAL;
    if (p->causal)
        return -ENOTSUP;
    size_t prod, lk1 = s->lk ? s->lk : 1;
    if ((rc = kern_check_dims(s->batch, s->heads, s->lq, NULL)) != 0
        || (rc = kern_check_dims(lk1, s->d, 1, NULL)) != 0
        || (rc = kern_check_dims(s->lq, lk1, 1, &prod)) != 0)
        return rc;
    if (log)
        memset(log, 0, sizeof *log);
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    size_t bh = s->batch * s->heads, lq = s->lq, lk = s->lk, d = s->d;
    float scale = p->scale != 0 ? p->scale : (float)(1.0 / sqrt((double)d));
    if (bh * lq * (d + 2) > (size_t)INT32_MAX || lq * lk1 > (size_t)INT32_MAX)
        return -EOVERFLOW;
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(p->threads);

    if (v == COMET_KERNELS_UNFUSED) {
        /* Gather the score slices (any widths) into full rows, softmax
         * them, multiply the rank's probability columns with its V slice,
         * all-reduce O. */
        size_t L = 0;
        if ((rc = slice_layout(comm, lk, lq, &counts, &displs, &L, &P, &r, log)) != 0)
            goto out;
        S = malloc(lq * lk1 * sizeof(float));
        buf = malloc(lq * L * sizeof(float));
        full = malloc(lq * L * sizeof(float));
        if (!S || !buf || !full) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t h = 0; h < bh; h++) {
            if (lk)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)lq, (int)lk, (int)d,
                    scale, Q + h * lq * d, (int)d, K + h * lk * d, (int)d, 0.0f, S, (int)lk);
            rc = mpi_rc(
                MPI_Allgatherv(S, (int)(lq * lk), MPI_FLOAT, buf, counts, displs, MPI_FLOAT, comm));
            log_add(log, "allgatherv", "", lq * lk, lq * lk * sizeof(float));
            if (rc)
                goto out;
            stage_block(buf, comm, counts, displs, lq, L, 0, lq, full);
            comet_kernels_softmax_rows(lq, L, full, L, full, L, 1.0f, p->threads);
            if (lk)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)lq, (int)d, (int)lk,
                    1.0f, full + (size_t)displs[r] / lq, (int)L, V + h * lk * d, (int)d, 0.0f,
                    O + h * lq * d, (int)d);
            else
                memset(O + h * lq * d, 0, lq * d * sizeof(float));
        }
        rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, O, (int)(bh * lq * d), MPI_FLOAT, MPI_SUM, comm));
        log_add(log, "allreduce", "sum", bh * lq * d, bh * lq * d * sizeof(float));
        goto out;
    }

    /* Fused: local online softmax over the rank's keys (unnormalised O, row
     * max m, row sum l), then merge: all-reduce max of m, rescale l and O by
     * exp(m_local - m), one all-reduce sum of [O | l]. */
    {
        S = malloc(lq * lk1 * sizeof(float));
        buf = malloc(bh * lq * (d + 1) * sizeof(float));
        full = malloc(bh * lq * sizeof(float));
        if (!S || !buf || !full) {
            rc = -ENOMEM;
            goto out;
        }
        float *mg = full;
        for (size_t h = 0; h < bh; h++) {
            if (lk == 0) { /* no keys here: nothing to add (max -inf, sum 0) */
                for (size_t i = 0; i < lq; i++) {
                    mg[h * lq + i] = -INFINITY;
                    buf[(h * lq + i) * (d + 1) + d] = 0.0f;
                }
                memset(O + h * lq * d, 0, lq * d * sizeof(float));
                continue;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)lq, (int)lk, (int)d, scale,
                Q + h * lq * d, (int)d, K + h * lk * d, (int)d, 0.0f, S, (int)lk);
            for (size_t i = 0; i < lq; i++) {
                int nan = 0;
                float m = kern_row_max(S + i * lk, lk, &nan);
                mg[h * lq + i] = nan ? INFINITY : m;
            }
            /* keep the unnormalised local O in the output for now */
            for (size_t i = 0; i < lq; i++) {
                float m = mg[h * lq + i];
                float *srow = S + i * lk;
                double l = 0;
                if (isinf(m))
                    memset(srow, 0, lk * sizeof(float));
                else
                    l = kern_exp_shift_sum(srow, srow, lk, m);
                buf[(h * lq + i) * (d + 1) + d] = (float)l;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)lq, (int)d, (int)lk, 1.0f,
                S, (int)lk, V + h * lk * d, (int)d, 0.0f, O + h * lq * d, (int)d);
        }
        /* local maxima kept in S's first bh*lq slots for the rescale */
        float *mloc = malloc(bh * lq * sizeof(float));
        if (!mloc) {
            rc = -ENOMEM;
            goto out;
        }
        memcpy(mloc, mg, bh * lq * sizeof(float));
        rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, mg, (int)(bh * lq), MPI_FLOAT, MPI_MAX, comm));
        log_add(log, "allreduce", "max", bh * lq, bh * lq * sizeof(float));
        if (rc) {
            free(mloc);
            goto out;
        }
        for (size_t x = 0; x < bh * lq; x++) {
            float *row = buf + x * (d + 1);
            float f = (isinf(mloc[x]) || isinf(mg[x])) ? 0.0f : expf(mloc[x] - mg[x]);
            for (size_t c = 0; c < d; c++)
                row[c] = O[x * d + c] * f;
            row[d] *= f;
        }
        free(mloc);
        rc = mpi_rc(
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)(bh * lq * (d + 1)), MPI_FLOAT, MPI_SUM, comm));
        log_add(log, "allreduce", "sum", bh * lq * (d + 1), bh * lq * (d + 1) * sizeof(float));
        if (rc)
            goto out;
        for (size_t x = 0; x < bh * lq; x++) {
            const float *row = buf + x * (d + 1);
            float *o = O + x * d;
            if (mg[x] == INFINITY)
                for (size_t c = 0; c < d; c++)
                    o[c] = NAN;
            else if (row[d] > 0)
                for (size_t c = 0; c < d; c++)
                    o[c] = row[c] / row[d];
            else
                memset(o, 0, d * sizeof(float));
        }
    }
out:
    openblas_set_num_threads(saved);
    free(S);
    free(buf);
    free(full);
    free(counts);
    free(displs);
    return rc;
}
