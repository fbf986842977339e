/* Gather-GEMM-scatter (Efficient-GMS): out[dst] += in[src] x W_seg over
 * segments, in four dataflows, through the packed micro-kernel
 * (kern_pack_b / kern_ukernel_gemm_ex).
 *
 * Determinism: threads own disjoint destination rows of out (blocks of rows,
 * 4-64 KiB of out, dealt round-robin: gms_owner), and every thread
 * walks the segments and their pairs in input order, taking the pairs whose
 * destination it owns. Each output element is therefore accumulated by one
 * thread in the fixed order (segment, pair), and each GEMM row is computed
 * by the same micro-kernel arithmetic whatever rows share its block, so
 * results are bitwise identical for any thread count, and duplicate
 * destinations never race. A large segment is split across threads by its
 * pairs' destinations; small segments share one packing pass and one
 * parallel region (batched), so their per-call overhead is paid once.
 *
 * Why rows, not columns: when threads owned 16-column panels of every out
 * row, two cores read-modify-wrote neighbouring lines of the same rows at
 * the same moment (the fused scatter runs both threads over the same tile
 * in lockstep) and the scatter ran 3-5x slower per row at 2 threads than at
 * 1 (the cores' prefetchers pull the neighbour's lines); every thread also
 * gathered every pair's row. Owned rows are touched by one core only, and
 * each pair is gathered once. */
#include "kernels_internal.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#define GMS_NR 16

const char *comet_kernels_gms_dataflow_name(comet_kernels_gms_dataflow d)
{
    switch (d) {
    case COMET_KERNELS_GMS_UNFUSED:
        return "unfused";
    case COMET_KERNELS_GMS_GATHER_FUSED:
        return "gather_fused";
    case COMET_KERNELS_GMS_SCATTER_FUSED:
        return "scatter_fused";
    case COMET_KERNELS_GMS_FUSED:
        return "fused";
    }
    return "?";
}

int comet_kernels_gms_dataflow_parse(const char *name, comet_kernels_gms_dataflow *d)
{
    for (int i = 1; i <= 4; i++)
        if (name
            && strcmp(name, comet_kernels_gms_dataflow_name((comet_kernels_gms_dataflow)i)) == 0) {
            *d = (comet_kernels_gms_dataflow)i;
            return 0;
        }
    return -EINVAL;
}

static int check_input(const comet_kernels_gms_input *in)
{
    size_t prod;
    if (!in || in->K == 0 || in->N == 0 || (in->nseg > 0 && (!in->seg_ptr || !in->W)))
        return -EINVAL;
    if (kern_check_dims(in->K, in->N, in->nseg ? in->nseg : 1, &prod) != 0)
        return -EOVERFLOW;
    if (in->nseg == 0)
        return 0;
    if (in->seg_ptr[0] != 0)
        return -EINVAL;
    for (size_t s = 0; s < in->nseg; s++)
        if (in->seg_ptr[s + 1] < in->seg_ptr[s])
            return -EINVAL;
    size_t np = in->seg_ptr[in->nseg];
    if (np > 0 && (!in->src || !in->dst || !in->in || !in->out))
        return -EINVAL;
    for (size_t i = 0; i < np; i++)
        if (in->src[i] >= in->rows_in || in->dst[i] >= in->rows_out)
            return -EINVAL;
    return 0;
}

static size_t tile_rows(const comet_kernels_gms_params *p)
{
    return p && p->tile_m ? p->tile_m : 48;
}

static int threads_of(const comet_kernels_gms_params *p)
{
    return p && p->threads > 0 ? p->threads : 1;
}

/* Ownership blocks of out: at least GMS_OWN_PER_THREAD blocks a thread (the
 * round-robin deal stays balanced), within [GMS_OWN_MIN, GMS_OWN_MAX] bytes.
 * Why not one 4 KiB page a block (the first version): at 2 threads the
 * scatter into owned rows cost 2-3x per row what it costs at 1 thread, and
 * the excess falls with the number of edges between two owners' blocks (the
 * likely cause: prefetchers running ahead of one core's ascending stream
 * pull lines of the neighbour's block, which the neighbour takes back). Timed
 * per thread (a copy of this kernel with per-phase timers, tile 48, 2
 * threads, AMD EPYC Zen 5 VM, 2026-11-25), the fused scatter of moe skew 1
 * cost 0.18 Mcycles per thread with 4 KiB blocks, 0.10 with 16 KiB, 0.075
 * with 64 KiB, 0.071 with 256 KiB, against 0.145 for all rows at 1 thread;
 * the separate scatter pass 0.12, 0.066, 0.046, 0.042 ms (0.085 ms at 1
 * thread); spconv skew 1: 0.17 ms at 4 KiB, 0.084 ms at 64 KiB. A
 * page-aligned out changed nothing (not pages shared). Past 64 KiB
 * the gain is within 2%, and larger blocks deal fewer of them. */
#define GMS_OWN_MIN        4096
#define GMS_OWN_MAX        65536
#define GMS_OWN_PER_THREAD 8

/* log2 of the rows of out per ownership block for nt threads: the largest
 * power of two whose rows fit the block's bytes (at least one row). */
static unsigned own_shift(size_t rows_out, size_t N, size_t nt)
{
    const size_t row = N * sizeof(float), per = rows_out / (GMS_OWN_PER_THREAD * (nt ? nt : 1));
    size_t bytes = per > GMS_OWN_MAX / row ? GMS_OWN_MAX : per * row;
    if (bytes < GMS_OWN_MIN)
        bytes = GMS_OWN_MIN;
    unsigned sh = 0;
    while (((size_t)2 << sh) * row <= bytes)
        sh++;
    return ((size_t)1 << sh) * row <= bytes ? sh : 0;
}

size_t comet_kernels_gms_own_rows(size_t rows_out, size_t N, int threads)
{
    return N ? (size_t)1 << own_shift(rows_out, N, threads > 0 ? (size_t)threads : 1) : 0;
}

/* The thread (of nt) that owns destination row d: blocks dealt round-robin
 * (a mask for 2, 4, ... threads: the scans run this per pair). */
static inline uint32_t gms_owner(uint32_t d, unsigned shift, uint32_t nt)
{
    uint32_t b = d >> shift;
    return nt & (nt - 1) ? b % nt : b & (nt - 1);
}

/* Per-thread tile buffers (A rows, the product, the tile's src and dst)
 * sit GMS_THREAD_GAP bytes apart at 2+ threads. Packed back to back, the
 * second thread's buffers began where the first's ended, and its fused
 * gather (writing its A buffer) and GEMM ran 3x and 1.3x slower than the
 * first thread's (moe skew 1, tile 48, 2 threads, per-thread cycle counts in
 * a timed copy of this kernel, AMD EPYC Zen 5 VM, 2026-11-25: gather 0.16
 * against 0.05 Mcycles; fused call 0.36-0.43 ms). The slow thread was the
 * second whichever core it ran on and whichever rows it owned, and an 8 KiB
 * gap halved the excess, 16 KiB removed it (0.035 against 0.040 Mcycles,
 * call 0.25 ms): the same reach across an edge between two cores' written
 * lines as the ownership blocks of out above. */
#define GMS_THREAD_GAP 16384

/* Floats from one thread's tile buffers to the next's (a cache line
 * multiple). */
static double chunk_floats(size_t tm, size_t K, size_t N, size_t nt)
{
    const double c = (double)tm * (double)(K + N + 2);
    return nt > 1 ? ceil(c / 16) * 16 + GMS_THREAD_GAP / sizeof(float) : c;
}

int comet_kernels_gms_workspace_size(const comet_kernels_gms_input *in,
    comet_kernels_gms_dataflow df, const comet_kernels_gms_params *p, size_t *bytes)
{
    int rc;
    if (!bytes || df < COMET_KERNELS_GMS_UNFUSED || df > COMET_KERNELS_GMS_FUSED
        || (p && (p->threads < 0 || p->threads > 4096)))
        return -EINVAL;
    if ((rc = check_input(in)) != 0)
        return rc;
    size_t np = in->nseg ? in->seg_ptr[in->nseg] : 0, tm = tile_rows(p);
    size_t packed = kern_packed_b_floats(in->K, in->N), nt = (size_t)threads_of(p);
    double f = (double)packed * (double)in->nseg;
    if (df == COMET_KERNELS_GMS_UNFUSED || df == COMET_KERNELS_GMS_SCATTER_FUSED)
        f += (double)np * (double)in->K; /* gathered rows */
    if (df == COMET_KERNELS_GMS_UNFUSED || df == COMET_KERNELS_GMS_GATHER_FUSED)
        f += (double)np * (double)in->N; /* GEMM result before the scatter */
    /* per thread: A and C tile buffers, the tile's src and dst (4-byte
     * words), apart by the gap (chunk_floats); its count of owned pairs (a
     * size_t: two words) */
    f += (double)nt * (chunk_floats(tm, in->K, in->N, nt) + 2) + 1;
    if (f * sizeof(float) > (double)SIZE_MAX / 2)
        return -EOVERFLOW;
    *bytes = (size_t)f * sizeof(float) + 64;
    return 0;
}

int comet_kernels_gms_tiles(
    const comet_kernels_gms_problem *pr, size_t N, const comet_kernels_gms_params *p, size_t *tiles)
{
    if (!pr || !tiles || N == 0 || (p && (p->threads < 0 || p->threads > 4096))
        || (pr->nseg && (!pr->seg_ptr || pr->seg_ptr[0] != 0)))
        return -EINVAL;
    const size_t nt = (size_t)threads_of(p), tm = tile_rows(p);
    const unsigned sh = own_shift(pr->rows_out, N, nt);
    size_t n = 0, cnt[64];
    for (size_t s = 0; s < pr->nseg; s++) {
        if (pr->seg_ptr[s + 1] < pr->seg_ptr[s] || (pr->seg_ptr[s + 1] > 0 && !pr->dst))
            return -EINVAL;
        for (size_t t0 = 0; t0 < nt; t0 += 64) { /* threads 64 at a time: counts on the stack */
            size_t t1 = nt - t0 < 64 ? nt : t0 + 64;
            memset(cnt, 0, sizeof cnt);
            for (size_t i = pr->seg_ptr[s]; i < pr->seg_ptr[s + 1]; i++) {
                size_t o = gms_owner(pr->dst[i], sh, (uint32_t)nt);
                if (o >= t0 && o < t1)
                    cnt[o - t0]++;
            }
            for (size_t t = 0; t < t1 - t0; t++)
                n += (cnt[t] + tm - 1) / tm;
        }
    }
    *tiles = n;
    return 0;
}

/* out[dst[i]][0..N) += T[i][0..N) for a block's rows, in order. */
static void scatter_add(const float *T, const uint32_t *dst, size_t n, float *out, size_t N)
{
    for (size_t i = 0; i < n; i++) {
        float *o = out + (size_t)dst[i] * N;
        const float *t = T + i * N;
        for (size_t j = 0; j < N; j++)
            o[j] += t[j];
    }
}

/* One tile of m owned pairs of a segment (packed weights bp): A is the
 * gathered rows (separate gather) or NULL (fused: gathered here into cg by
 * tsrc); C receives the product (separate scatter) or is NULL (fused: the
 * product goes to the hot buffer ct and is added into out by tdst at once). */
static void gms_tile(const comet_kernels_gms_input *in, const float *bp, size_t m, const float *A,
    float *C, const uint32_t *tsrc, const uint32_t *tdst, float *cg, float *ct)
{
    const size_t K = in->K, N = in->N;
    if (!A) {
        for (size_t r = 0; r < m; r++)
            memcpy(cg + r * K, in->in + (size_t)tsrc[r] * K, K * sizeof(float));
        A = cg;
    }
    kern_ukernel_gemm_ex(m, N, K, 1.0f, A, K, bp, K * GMS_NR, 0, C ? C : ct, N);
    if (!C)
        scatter_add(ct, tdst, m, in->out, N);
}

int comet_kernels_gms(comet_kernels_gms_dataflow df, const comet_kernels_gms_input *in,
    const comet_kernels_gms_params *p, void *ws, size_t ws_bytes)
{
    size_t need;
    int rc = comet_kernels_gms_workspace_size(in, df, p, &need);
    if (rc != 0)
        return rc;
    if (ws_bytes < need || !ws)
        return -ENOMEM;
    if (in->nseg == 0 || in->seg_ptr[in->nseg] == 0)
        return 0;
    const size_t K = in->K, N = in->N, np = in->seg_ptr[in->nseg], tm = tile_rows(p);
    const size_t packed = kern_packed_b_floats(K, N);
    const unsigned osh = own_shift(in->rows_out, N, (size_t)threads_of(p));
    const int nt = threads_of(p);
    const int gather_sep = df == COMET_KERNELS_GMS_UNFUSED || df == COMET_KERNELS_GMS_SCATTER_FUSED;
    const int scatter_sep = df == COMET_KERNELS_GMS_UNFUSED || df == COMET_KERNELS_GMS_GATHER_FUSED;
    float *Bp = (float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63), *cur = Bp + packed * in->nseg;
    float *G = NULL, *T = NULL;
    if (gather_sep) {
        G = cur;
        cur += np * K;
    }
    if (scatter_sep) {
        T = cur;
        cur += np * N;
    }
    float *chunks = cur;
    const size_t cs = (size_t)chunk_floats(tm, K, N, (size_t)nt);
    /* counts of owned pairs after the tile buffers, the address rounded up
     * to a size_t (the buffers before may end on an odd float; the workspace
     * has a float of room for the padding) */
    size_t *owned = (size_t *)(((uintptr_t)(chunks + (size_t)nt * cs) + (sizeof(size_t) - 1))
        & ~(uintptr_t)(sizeof(size_t) - 1));
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(1); /* the kernel owns the parallelism */
#pragma omp parallel num_threads(nt)
    {
        const uint32_t t = (uint32_t)omp_get_thread_num(), T_ = (uint32_t)omp_get_num_threads();
        float *cg = chunks + (size_t)t * cs, *ct = cg + tm * K;
        uint32_t *tsrc = (uint32_t *)(ct + tm * N), *tdst = tsrc + tm;
        /* pairs this thread owns: their gathered rows and products sit
         * contiguously after the rows of the threads before it */
        size_t mine = 0;
        if ((gather_sep || scatter_sep) && T_ > 1) {
            for (size_t i = 0; i < np; i++)
                mine += gms_owner(in->dst[i], osh, T_) == t;
            owned[t] = mine;
        }
#pragma omp for schedule(static)
        for (size_t s = 0; s < in->nseg; s++)
            if (in->seg_ptr[s + 1] > in->seg_ptr[s])
                kern_pack_b(K, N, in->W + s * K * N, N, Bp + s * packed);
        /* the implicit barrier above publishes Bp and owned[] */
        size_t base = 0;
        if (gather_sep || scatter_sep) /* t > 0: T_ > 1 and owned[] counted */
            for (uint32_t u = 0; u < t; u++)
                base += owned[u];
        float *Gt = G ? G + base * K : NULL, *Tt = T ? T + base * N : NULL;
        if (G) { /* separate gather: the owned rows in pair order */
            size_t k = 0;
            for (size_t i = 0; i < np; i++)
                if (gms_owner(in->dst[i], osh, T_) == t)
                    memcpy(Gt + k++ * K, in->in + (size_t)in->src[i] * K, K * sizeof(float));
        }
        size_t row = 0; /* owned pairs done so far: the next row of Gt and Tt */
        for (size_t s = 0; s < in->nseg; s++) {
            const size_t a = in->seg_ptr[s], b = in->seg_ptr[s + 1];
            const float *bp = Bp + s * packed;
            if (df == COMET_KERNELS_GMS_UNFUSED) { /* whole segment: one GEMM */
                size_t m = 0;
                for (size_t i = a; i < b; i++)
                    m += gms_owner(in->dst[i], osh, T_) == t;
                if (m)
                    kern_ukernel_gemm_ex(
                        m, N, K, 1.0f, Gt + row * K, K, bp, K * GMS_NR, 0, Tt + row * N, N);
                row += m;
                continue;
            }
            size_t m = 0;
            for (size_t i = a; i < b; i++)
                if (gms_owner(in->dst[i], osh, T_) == t) {
                    tsrc[m] = in->src[i];
                    tdst[m++] = in->dst[i];
                    if (m == tm) {
                        gms_tile(in, bp, m, G ? Gt + row * K : NULL, T ? Tt + row * N : NULL, tsrc,
                            tdst, cg, ct);
                        row += m, m = 0;
                    }
                }
            if (m) { /* the segment's short last tile */
                gms_tile(in, bp, m, G ? Gt + row * K : NULL, T ? Tt + row * N : NULL, tsrc, tdst,
                    cg, ct);
                row += m;
            }
        }
        if (T) { /* separate scatter pass over the owned products, pair order */
            size_t k = 0;
            for (size_t i = 0; i < np; i++)
                if (gms_owner(in->dst[i], osh, T_) == t)
                    scatter_add(Tt + k++ * N, in->dst + i, 1, in->out, N);
        }
    }
    openblas_set_num_threads(saved);
    return 0;
}

double comet_kernels_gms_flops(const comet_kernels_gms_input *in)
{
    if (!in || !in->nseg || !in->seg_ptr)
        return 0;
    return 2.0 * (double)in->seg_ptr[in->nseg] * (double)in->K * (double)in->N;
}
