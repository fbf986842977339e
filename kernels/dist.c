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

/* Local GEMM of the rank's slice: C (M x n) = alpha * A B_local, threaded. */
static void local_gemm(size_t M, size_t n, size_t K, float alpha, const float *A, const float *B,
    float *C, int threads)
{
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)n, (int)K, alpha, A, (int)K,
        B, (int)n, 0.0f, C, (int)n);
    openblas_set_num_threads(saved);
}

static int dist_checks(MPI_Comm comm, size_t M, size_t n, size_t K, const void *A, const void *B,
    const void *Y, const comet_kernels_params *p)
{
    size_t prod;
    int rc;
    if (comm == MPI_COMM_NULL || !A || !B || !Y || !p || p->threads <= 0)
        return -EINVAL;
    if ((rc = kern_check_dims(M, n, K, NULL)) != 0 || (rc = kern_check_dims(M, n, 1, &prod)))
        return rc;
    if (M > (size_t)INT32_MAX || n > (size_t)INT32_MAX || K > (size_t)INT32_MAX)
        return -EOVERFLOW;
    return 0;
}

/* Unfused baseline: all-gather the N-slices of the intermediate so every
 * rank holds full rows, then run the pass on the rank's own columns with
 * full-row statistics. */
static int gather_full(MPI_Comm comm, size_t M, size_t n, const float *C, float **full, int *nranks,
    int *rank, comet_kernels_coll_log *log)
{
    int P, r, rc;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    size_t cnt = M * n;
    if (cnt > (size_t)INT32_MAX)
        return -EOVERFLOW;
    float *g = malloc(cnt * (size_t)P * sizeof(float));
    if (!g)
        return -ENOMEM;
    rc = MPI_Allgather(C, (int)cnt, MPI_FLOAT, g, (int)cnt, MPI_FLOAT, comm);
    log_add(log, "allgather", "", cnt, cnt * sizeof(float));
    if (rc != MPI_SUCCESS) {
        free(g);
        return -EIO;
    }
    *full = g;
    *nranks = P;
    *rank = r;
    return 0;
}

int comet_kernels_dist_gemm_softmax(MPI_Comm comm, comet_kernels_variant v, size_t M, size_t n,
    size_t K, const float *A, const float *B, float *Y, const comet_kernels_params *p,
    comet_kernels_coll_log *log)
{
    int rc = dist_checks(comm, M, n, K, A, B, Y, p);
    float *stat = NULL, *full = NULL, *row = NULL;
    if (rc)
        return rc;
    float scale = p->scale != 0 ? p->scale : 1.0f;
    if (!isfinite(scale))
        return -EINVAL;
    if (log)
        memset(log, 0, sizeof *log);
    local_gemm(M, n, K, scale, A, B, Y, p->threads);

    if (v == COMET_KERNELS_UNFUSED) {
        int P = 1, r = 0;
        if ((rc = gather_full(comm, M, n, Y, &full, &P, &r, log)) != 0)
            goto fail;
        size_t N = n * (size_t)P;
        row = malloc(N * sizeof(float));
        if (!row) {
            rc = -ENOMEM;
            goto fail;
        }
        for (size_t i = 0; i < M; i++) {
            for (int q = 0; q < P; q++) /* gathered layout is [rank][M][n] */
                memcpy(row + (size_t)q * n, full + ((size_t)q * M + i) * n, n * sizeof(float));
            kern_softmax_row(row, row, N, 1.0f);
            memcpy(Y + i * n, row + (size_t)r * n, n * sizeof(float));
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
    return rc;
}

int comet_kernels_dist_gemm_layernorm(MPI_Comm comm, comet_kernels_variant v, size_t M, size_t n,
    size_t K, const float *A, const float *B, const float *gamma, const float *beta, float *Y,
    const comet_kernels_params *p, comet_kernels_coll_log *log)
{
    int rc = dist_checks(comm, M, n, K, A, B, Y, p);
    double *st = NULL;
    float *full = NULL, *row = NULL, *g = NULL, *bt = NULL;
    if (rc)
        return rc;
    float eps = p->eps != 0 ? p->eps : 1e-5f;
    if (!(eps > 0) || !isfinite(eps))
        return -EINVAL;
    if (log)
        memset(log, 0, sizeof *log);
    local_gemm(M, n, K, 1.0f, A, B, Y, p->threads);
    int P = 1, r = 0;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    size_t N = n * (size_t)P;

    if (v == COMET_KERNELS_UNFUSED) {
        if ((rc = gather_full(comm, M, n, Y, &full, &P, &r, log)) != 0)
            goto fail;
        row = malloc(N * sizeof(float));
        if (!row) {
            rc = -ENOMEM;
            goto fail;
        }
        for (size_t i = 0; i < M; i++) {
            for (int q = 0; q < P; q++)
                memcpy(row + (size_t)q * n, full + ((size_t)q * M + i) * n, n * sizeof(float));
            kern_layernorm_row(row, row, N, NULL, NULL, eps);
            for (size_t j = 0; j < n; j++) {
                float x = row[(size_t)r * n + j];
                Y[i * n + j] = x * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
            }
        }
        goto fail;
    }

    /* Fused, two-pass across ranks: all-reduce the row sums (mean), then the
     * sums of squared deviations from the global mean. Doubles keep the
     * merged statistics as accurate as the local two-pass ones. */
    st = malloc(2 * M * sizeof(double));
    if (!st) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < M; i++)
        st[i] = kern_row_sum(Y + i * n, n);
    rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, st, (int)M, MPI_DOUBLE, MPI_SUM, comm));
    log_add(log, "allreduce", "sum", M, M * sizeof(double));
    if (rc)
        goto fail;
    for (size_t i = 0; i < M; i++) {
        double mean = st[i] / (double)N, s = 0;
        const float *y = Y + i * n;
        for (size_t j = 0; j < n; j++) {
            double dd = (double)y[j] - mean;
            s += dd * dd;
        }
        st[M + i] = s;
        st[i] = mean;
    }
    rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, st + M, (int)M, MPI_DOUBLE, MPI_SUM, comm));
    log_add(log, "allreduce", "sum", M, M * sizeof(double));
    if (rc)
        goto fail;
    for (size_t i = 0; i < M; i++) {
        float mean = (float)st[i], rstd = (float)(1.0 / sqrt(st[M + i] / (double)N + eps));
        float *y = Y + i * n;
        for (size_t j = 0; j < n; j++)
            y[j] = (y[j] - mean) * rstd * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
    }
fail:
    free(st);
    free(full);
    free(row);
    free(g);
    free(bt);
    return rc;
}

int comet_kernels_dist_attention(MPI_Comm comm, comet_kernels_variant v,
    const comet_kernels_shape *s, const float *Q, const float *K, const float *V, float *O,
    const comet_kernels_params *p, comet_kernels_coll_log *log)
{
    float *S = NULL, *buf = NULL, *full = NULL;
    int rc = 0, P = 1, r = 0;
    if (comm == MPI_COMM_NULL || !s || !Q || !K || !V || !O || !p || p->threads <= 0)
        return -EINVAL;
    if (p->causal)
        return -ENOTSUP;
    size_t prod;
    if ((rc = kern_check_dims(s->batch, s->heads, s->lq, NULL)) != 0
        || (rc = kern_check_dims(s->lk, s->d, 1, NULL)) != 0
        || (rc = kern_check_dims(s->lq, s->lk, 1, &prod)) != 0)
        return rc;
    if (log)
        memset(log, 0, sizeof *log);
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    size_t bh = s->batch * s->heads, lq = s->lq, lk = s->lk, d = s->d;
    float scale = p->scale != 0 ? p->scale : (float)(1.0 / sqrt((double)d));
    if (bh * lq * (d + 2) > (size_t)INT32_MAX || lq * lk * (size_t)P > (size_t)INT32_MAX)
        return -EOVERFLOW;
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(p->threads);

    if (v == COMET_KERNELS_UNFUSED) {
        /* Gather the score slices into full rows, softmax them, multiply the
         * rank's probability columns with its V slice, all-reduce O. */
        S = malloc(lq * lk * sizeof(float));
        buf = malloc(lq * lk * (size_t)P * sizeof(float));
        full = malloc(lq * lk * (size_t)P * sizeof(float));
        if (!S || !buf || !full) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t h = 0; h < bh; h++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)lq, (int)lk, (int)d, scale,
                Q + h * lq * d, (int)d, K + h * lk * d, (int)d, 0.0f, S, (int)lk);
            rc = mpi_rc(
                MPI_Allgather(S, (int)(lq * lk), MPI_FLOAT, buf, (int)(lq * lk), MPI_FLOAT, comm));
            log_add(log, "allgather", "", lq * lk, lq * lk * sizeof(float));
            if (rc)
                goto out;
            size_t L = lk * (size_t)P;
            for (size_t i = 0; i < lq; i++)
                for (int q = 0; q < P; q++)
                    memcpy(full + i * L + (size_t)q * lk, buf + ((size_t)q * lq + i) * lk,
                        lk * sizeof(float));
            comet_kernels_softmax_rows(lq, L, full, L, full, L, 1.0f, p->threads);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)lq, (int)d, (int)lk, 1.0f,
                full + (size_t)r * lk, (int)L, V + h * lk * d, (int)d, 0.0f, O + h * lq * d,
                (int)d);
        }
        rc = mpi_rc(MPI_Allreduce(MPI_IN_PLACE, O, (int)(bh * lq * d), MPI_FLOAT, MPI_SUM, comm));
        log_add(log, "allreduce", "sum", bh * lq * d, bh * lq * d * sizeof(float));
        goto out;
    }

    /* Fused: local online softmax over the rank's keys (unnormalised O, row
     * max m, row sum l), then merge: all-reduce max of m, rescale l and O by
     * exp(m_local - m), one all-reduce sum of [O | l]. */
    {
        comet_kernels_shape ls = *s;
        comet_kernels_params lp = *p;
        lp.scale = scale;
        lp.causal = 0;
        size_t ws = 0;
        if ((rc = comet_kernels_workspace_size(
                 COMET_KERNELS_ATTENTION, COMET_KERNELS_UNFUSED, &ls, &lp, &ws))
            != 0)
            goto out;
        S = malloc(lq * lk * sizeof(float));
        buf = malloc(bh * lq * (d + 1) * sizeof(float));
        full = malloc(bh * lq * sizeof(float));
        if (!S || !buf || !full) {
            rc = -ENOMEM;
            goto out;
        }
        float *mg = full;
        for (size_t h = 0; h < bh; h++) {
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
    return rc;
}
