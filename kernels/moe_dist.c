/* Mixture-of-experts across ranks (expert parallelism): the experts are
 * split over the ranks in contiguous blocks, each rank routes its own tokens
 * top-k, and two all-to-alls are the explicit collectives:
 *
 *   1. counts: MPI_Alltoall of the rows each rank sends each peer per local
 *      expert of that peer (ceil(E/P) ints per peer);
 *   2. dispatch: MPI_Alltoallv of the routed token rows (K floats each),
 *      ordered by peer, then the peer's local expert, then (token, k); the
 *      rows a rank routes to its own experts are a copy inside MPI, and the
 *      log counts the bytes that leave the rank;
 *   3. the local experts run as one gather-GEMM-scatter (comet_kernels_gms,
 *      one segment per local expert) over the received rows;
 *   4. combine: MPI_Alltoallv of the expert outputs (N floats per row) back
 *      to the ranks that sent them, in the order they were sent;
 *   5. each rank's output y[t] = sum_k gate[t,k] x row, accumulated in the
 *      order of step 2 (peer, expert, token): deterministic, independent of
 *      the thread count and of the other ranks' timing. */
#include "kernels_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void comet_kernels_moe_owner(size_t experts, int ranks, int r, size_t *first, size_t *count)
{
    size_t P = ranks > 0 ? (size_t)ranks : 1, q = experts / P, rem = experts % P;
    size_t R = r > 0 ? (size_t)r : 0;
    if (first)
        *first = R * q + (R < rem ? R : rem);
    if (count)
        *count = R < P ? q + (R < rem ? 1 : 0) : 0;
}

/* Rank owning expert e (the inverse of comet_kernels_moe_owner). */
static int owner_of(size_t e, size_t experts, int P, size_t *local)
{
    size_t q = experts / (size_t)P, rem = experts % (size_t)P, big = rem * (q + 1);
    size_t r = e < big ? e / (q + 1) : rem + (e - big) / q;
    *local = e - (r * q + (r < rem ? r : rem));
    return (int)r;
}

static void log_add(comet_kernels_coll_log *log, const char *op, size_t count, size_t bytes)
{
    if (!log || log->n >= COMET_KERNELS_MAX_COLL)
        return;
    comet_kernels_coll *e = &log->e[log->n++];
    snprintf(e->kind, sizeof e->kind, "%s", "alltoall");
    snprintf(e->op, sizeof e->op, "%s", op);
    e->count = count;
    e->bytes = bytes;
    e->calls = 1;
}

int comet_kernels_moe_route(size_t tokens, size_t experts, double skew, unsigned long long seed,
    uint32_t *expert, float *gate)
{
    comet_kernels_gms_problem pr;
    if (!expert || !gate)
        return -EINVAL;
    int rc = comet_kernels_gms_generate(COMET_KERNELS_GMS_MOE, tokens, experts, skew, seed, &pr);
    if (rc)
        return rc;
    size_t *fill = calloc(tokens, sizeof *fill);
    if (!fill) {
        comet_kernels_gms_problem_free(&pr);
        return -ENOMEM;
    }
    /* the generator groups pairs by expert: a token's two experts come out
     * in ascending order */
    for (size_t s = 0; s < pr.nseg; s++)
        for (size_t i = pr.seg_ptr[s]; i < pr.seg_ptr[s + 1]; i++) {
            size_t t = pr.src[i];
            if (fill[t] < 2)
                expert[t * 2 + fill[t]++] = (uint32_t)s;
        }
    for (size_t t = 0; t < tokens; t++) {
        /* gates in (0.55, 0.95) and 1 - that, from a hash of the token */
        uint64_t z = (t + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
        float g = 0.55f + 0.4f * (float)((z >> 40) & 0xFFFF) / 65536.0f;
        gate[t * 2] = g;
        gate[t * 2 + 1] = 1.0f - g;
    }
    free(fill);
    comet_kernels_gms_problem_free(&pr);
    return 0;
}

void comet_kernels_moe_ws_free(comet_kernels_moe_ws *w)
{
    if (!w)
        return;
    for (int i = 0; i < COMET_KERNELS_MOE_WS_SLOTS; i++)
        free(w->buf[i]);
    memset(w, 0, sizeof *w);
}

/* Buffer `i` of the workspace, at least `bytes` (grown, never shrunk: a
 * caller's workspace keeps the MPI buffers mapped and warm across calls),
 * zeroed on request. NULL when out of memory. */
static void *ws_get(comet_kernels_moe_ws *w, int i, size_t bytes, int zero)
{
    if (bytes == 0)
        bytes = 64;
    if (w->cap[i] < bytes) {
        free(w->buf[i]);
        w->cap[i] = 0;
        if (!(w->buf[i] = aligned_alloc(64, (bytes + 63) / 64 * 64)))
            return NULL;
        w->cap[i] = bytes;
    }
    if (zero)
        memset(w->buf[i], 0, bytes);
    return w->buf[i];
}

int comet_kernels_dist_moe(MPI_Comm comm, const comet_kernels_moe_input *in,
    comet_kernels_gms_dataflow df, const comet_kernels_gms_params *gp, comet_kernels_moe_ws *wsp,
    comet_kernels_coll_log *log)
{
    int P = 1, r = 0, rc = 0;
    if (comm == MPI_COMM_NULL || !in || !gp || in->K == 0 || in->N == 0 || in->experts == 0
        || in->topk == 0 || df < COMET_KERNELS_GMS_UNFUSED || df > COMET_KERNELS_GMS_FUSED)
        return -EINVAL;
    if (in->tokens && (!in->expert || !in->gate || !in->x || !in->y))
        return -EINVAL;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    size_t first, nloc;
    comet_kernels_moe_owner(in->experts, P, r, &first, &nloc);
    if (nloc && !in->W)
        return -EINVAL;
    const size_t K = in->K, N = in->N, rows = in->tokens * in->topk;
    const size_t cmax = (in->experts + (size_t)P - 1) / (size_t)P;
    if (rows > UINT32_MAX || (size_t)P * cmax > (size_t)INT32_MAX
        || rows * (K > N ? K : N) > INT32_MAX)
        return -EOVERFLOW;
    for (size_t i = 0; i < rows; i++)
        if (in->expert[i] >= in->experts || !isfinite(in->gate[i]))
            return -EINVAL;
    if (log)
        memset(log, 0, sizeof *log);

    comet_kernels_moe_ws local = { { 0 }, { 0 } }, *w = wsp ? wsp : &local;
    int *scnt = ws_get(w, 0, (size_t)P * cmax * sizeof(int), 1),
        *rcnt = ws_get(w, 1, (size_t)P * cmax * sizeof(int), 1);
    int *sc = ws_get(w, 2, 4 * (size_t)P * sizeof(int), 0),
        *rc_ = ws_get(w, 3, 4 * (size_t)P * sizeof(int), 0);
    size_t *pos = ws_get(w, 4, ((size_t)P * cmax + 1) * sizeof(size_t), 0);
    size_t *slot = ws_get(w, 5, rows * sizeof(size_t), 0);
    float *sbuf = ws_get(w, 6, rows * K * sizeof(float), 0);
    float *back = ws_get(w, 7, rows * N * sizeof(float), 0);
    float *rbuf = NULL, *res = NULL;
    size_t *seg_ptr = NULL;
    uint32_t *idx = NULL;
    void *ws = NULL;
    if (!scnt || !rcnt || !sc || !rc_ || !pos || !slot || !sbuf || !back) {
        rc = -ENOMEM;
        goto out;
    }
    /* 1. rows per (peer, peer's local expert), then the send order */
    for (size_t i = 0; i < rows; i++) {
        size_t loc;
        int q = owner_of(in->expert[i], in->experts, P, &loc);
        scnt[(size_t)q * cmax + loc]++;
    }
    pos[0] = 0;
    for (size_t b = 0; b < (size_t)P * cmax; b++)
        pos[b + 1] = pos[b] + (size_t)scnt[b];
    for (size_t i = 0; i < rows; i++) {
        size_t loc;
        int q = owner_of(in->expert[i], in->experts, P, &loc);
        size_t k = pos[(size_t)q * cmax + loc]++;
        slot[k] = i;
        memcpy(sbuf + k * K, in->x + (i / in->topk) * K, K * sizeof(float));
    }
    rc = MPI_Alltoall(scnt, (int)cmax, MPI_INT, rcnt, (int)cmax, MPI_INT, comm) == MPI_SUCCESS
        ? 0
        : -EIO;
    log_add(log, "counts", (size_t)P * cmax, (size_t)P * cmax * sizeof(int));
    if (rc)
        goto out;

    /* 2. dispatch the token rows */
    int *scount = sc, *sdisp = sc + P, *rcount = rc_, *rdisp = rc_ + P;
    int *bcount = sc + 2 * P, *bdisp = sc + 3 * P, *ncount = rc_ + 2 * P, *ndisp = rc_ + 3 * P;
    size_t R = 0, so = 0, off_s = 0, off_g = 0; /* rows to / from other ranks */
    for (int q = 0; q < P; q++) {
        size_t s = 0, g = 0;
        for (size_t e = 0; e < cmax; e++) {
            s += (size_t)scnt[(size_t)q * cmax + e];
            g += (size_t)rcnt[(size_t)q * cmax + e];
        }
        if ((R + g) * (K > N ? K : N) > INT32_MAX) {
            rc = -EOVERFLOW;
            break;
        }
        scount[q] = (int)(s * K), sdisp[q] = (int)(so * K);
        rcount[q] = (int)(g * K), rdisp[q] = (int)(R * K);
        bcount[q] = (int)(s * N), bdisp[q] = (int)(so * N); /* combine: receive what was sent */
        ncount[q] = (int)(g * N), ndisp[q] = (int)(R * N); /* combine: send what was received */
        so += s;
        R += g;
        off_s += q != r ? s : 0;
        off_g += q != r ? g : 0;
    }
    /* every rank reaches the collectives, also after a local error */
    rbuf = ws_get(w, 8, R * K * sizeof(float), 0);
    res = ws_get(w, 9, R * N * sizeof(float), 1);
    seg_ptr = ws_get(w, 10, (cmax + 1) * sizeof *seg_ptr, 1);
    idx = ws_get(w, 11, R * sizeof *idx, 0);
    if (!rc && (!rbuf || !res || !seg_ptr || !idx))
        rc = -ENOMEM;
    if (rc) /* a peer still waits for our rows: send none, keep going */
        for (int q = 0; q < P; q++)
            scount[q] = rcount[q] = bcount[q] = ncount[q] = 0;
    int mrc = MPI_Alltoallv(
        sbuf, scount, sdisp, MPI_FLOAT, rbuf ? rbuf : sbuf, rcount, rdisp, MPI_FLOAT, comm);
    log_add(log, "tokens", off_s * K, off_s * K * sizeof(float));
    rc = rc ? rc : (mrc == MPI_SUCCESS ? 0 : -EIO);

    /* 3. the local experts: received rows grouped by (peer, expert); the
     * problem lists each expert's rows peer by peer (src = dst = the row) */
    if (!rc && R && nloc) {
        for (int q = 0; q < P; q++)
            for (size_t e = 0; e < nloc; e++)
                seg_ptr[e + 1] += (size_t)rcnt[(size_t)q * cmax + e];
        for (size_t e = 0; e < nloc; e++)
            seg_ptr[e + 1] += seg_ptr[e];
        size_t *at = pos; /* reused: next slot per expert */
        memcpy(at, seg_ptr, nloc * sizeof *at);
        size_t row = 0;
        for (int q = 0; q < P; q++)
            for (size_t e = 0; e < cmax; e++)
                for (int c = 0; c < rcnt[(size_t)q * cmax + e]; c++)
                    idx[at[e]++] = (uint32_t)row++;
        comet_kernels_gms_input gi = { .rows_in = R,
            .rows_out = R,
            .K = K,
            .N = N,
            .nseg = nloc,
            .seg_ptr = seg_ptr,
            .src = idx,
            .dst = idx,
            .W = in->W,
            .in = rbuf,
            .out = res };
        size_t wsb = 0;
        rc = comet_kernels_gms_workspace_size(&gi, df, gp, &wsb);
        if (!rc && wsb && !(ws = ws_get(w, 12, wsb, 0)))
            rc = -ENOMEM;
        if (!rc)
            rc = comet_kernels_gms(df, &gi, gp, ws, wsb);
    }
    if (rc)
        for (int q = 0; q < P; q++)
            bcount[q] = ncount[q] = 0;

    /* 4. combine: the outputs go back in the order they came */
    mrc = MPI_Alltoallv(
        res ? res : back, ncount, ndisp, MPI_FLOAT, back, bcount, bdisp, MPI_FLOAT, comm);
    log_add(log, "combine", off_g * N, off_g * N * sizeof(float));
    rc = rc ? rc : (mrc == MPI_SUCCESS ? 0 : -EIO);
    if (rc)
        goto out;

    /* 5. weighted scatter-add into the rank's tokens, in send order */
    if (in->tokens)
        memset(in->y, 0, in->tokens * N * sizeof(float));
    for (size_t k = 0; k < rows; k++) {
        size_t i = slot[k];
        float g = in->gate[i], *restrict y = in->y + (i / in->topk) * N;
        const float *restrict b = back + k * N;
        for (size_t j = 0; j < N; j++)
            y[j] += g * b[j];
    }
out:
    if (!wsp)
        comet_kernels_moe_ws_free(&local);
    return rc;
}
