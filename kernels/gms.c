/* Gather-GEMM-scatter (Efficient-GMS): out[dst] += in[src] x W_seg over
 * segments, in four dataflows, through the packed micro-kernel
 * (kern_pack_b / kern_ukernel_gemm_ex).
 *
 * Determinism: threads own disjoint 16-column panel ranges of the output
 * (destination-owned partitioning by column), and every thread walks the
 * segments and their pairs in input order. Each output element is therefore
 * accumulated by one thread in the fixed order (segment, pair), so results
 * are bitwise identical for any thread count, and duplicate destinations
 * never race. Splitting a large segment across threads is the column split;
 * small segments share one packing pass and one parallel region (batched),
 * so their per-call overhead is paid once. */
#include "kernels_internal.h"

#include <errno.h>
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
    f += (double)nt * (double)tm * (double)(in->K + in->N); /* per-thread chunk buffers */
    if (f * sizeof(float) > (double)SIZE_MAX / 2)
        return -EOVERFLOW;
    *bytes = (size_t)f * sizeof(float) + 64;
    return 0;
}

static void gather_rows(const float *X, size_t K, const uint32_t *src, size_t n, float *G)
{
    for (size_t i = 0; i < n; i++)
        memcpy(G + i * K, X + (size_t)src[i] * K, K * sizeof(float));
}

/* out[dst[i]][0..w) += T[i][0..w) for the chunk's rows, in order (T and out
 * already offset to the thread's first column). */
static void scatter_add(
    const float *T, size_t ldt, const uint32_t *dst, size_t n, size_t w, float *out, size_t N)
{
    for (size_t i = 0; i < n; i++) {
        float *o = out + (size_t)dst[i] * N;
        const float *t = T + i * ldt;
        for (size_t j = 0; j < w; j++)
            o[j] += t[j];
    }
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
    const size_t packed = kern_packed_b_floats(K, N), npan = (N + GMS_NR - 1) / GMS_NR;
    const int nt = threads_of(p);
    float *Bp = (float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63), *cur = Bp + packed * in->nseg;
    float *G = NULL, *T = NULL;
    if (df == COMET_KERNELS_GMS_UNFUSED || df == COMET_KERNELS_GMS_SCATTER_FUSED) {
        G = cur;
        cur += np * K;
    }
    if (df == COMET_KERNELS_GMS_UNFUSED || df == COMET_KERNELS_GMS_GATHER_FUSED) {
        T = cur;
        cur += np * N;
    }
    float *chunks = cur;
    int saved = openblas_get_num_threads();
    openblas_set_num_threads(1); /* the kernel owns the parallelism */
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T_ = omp_get_num_threads();
        /* Panel range of this thread: an even split of the 16-column panels. */
        size_t pa = npan * (size_t)t / (size_t)T_, pb = npan * (size_t)(t + 1) / (size_t)T_;
        size_t j0 = pa * GMS_NR, j1 = pb * GMS_NR < N ? pb * GMS_NR : N;
        float *cg = chunks + (size_t)t * tm * (K + N), *ct = cg + tm * K;
#pragma omp for schedule(static)
        for (size_t s = 0; s < in->nseg; s++)
            if (in->seg_ptr[s + 1] > in->seg_ptr[s])
                kern_pack_b(K, N, in->W + s * K * N, N, Bp + s * packed);
        if (G) {
#pragma omp for schedule(static)
            for (size_t i = 0; i < np; i++)
                memcpy(G + i * K, in->in + (size_t)in->src[i] * K, K * sizeof(float));
        }
        /* the implicit barriers above publish Bp and G */
        if (pb > pa) {
            for (size_t s = 0; s < in->nseg; s++) {
                size_t a = in->seg_ptr[s], b = in->seg_ptr[s + 1];
                const float *bp = Bp + s * packed + pa * K * GMS_NR;
                if (df == COMET_KERNELS_GMS_UNFUSED) {
                    if (b > a)
                        kern_ukernel_gemm_ex(b - a, j1 - j0, K, 1.0f, G + a * K, K, bp, K * GMS_NR,
                            0, T + a * N + j0, N);
                    continue;
                }
                for (size_t c = a; c < b; c += tm) {
                    size_t m = b - c < tm ? b - c : tm;
                    const float *A = G ? G + c * K : cg;
                    if (!G)
                        gather_rows(in->in, K, in->src + c, m, cg); /* into the packing buffer */
                    if (T) {
                        kern_ukernel_gemm_ex(
                            m, j1 - j0, K, 1.0f, A, K, bp, K * GMS_NR, 0, T + c * N + j0, N);
                    } else { /* epilogue: the hot tile is scattered at once */
                        kern_ukernel_gemm_ex(m, j1 - j0, K, 1.0f, A, K, bp, K * GMS_NR, 0, ct, N);
                        scatter_add(ct, N, in->dst + c, m, j1 - j0, in->out + j0, N);
                    }
                }
            }
            if (T) /* separate scatter pass, fixed pair order */
                scatter_add(T + j0, N, in->dst, np, j1 - j0, in->out + j0, N);
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
