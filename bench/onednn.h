/* Internal: the oneDNN peer of the kernels bench (variant "onednn"). What a
 * user would run instead of a fused kernel: oneDNN's matmul followed by its
 * softmax or layer_normalization primitive; attention as matmul, softmax
 * and matmul over the batched heads. A baseline to beat, never a
 * requirement: without oneDNN at build time every call says so. */
#ifndef COMET_BENCH_ONEDNN_H
#define COMET_BENCH_ONEDNN_H

#include "comet_kernels.h"

#include <stddef.h>

/** One prepared oneDNN pipeline (primitives, memories, intermediates). */
typedef struct bench_dnnl bench_dnnl;

/** 1 when comet was built with oneDNN. */
int bench_dnnl_available(void);

/** "oneDNN X.Y.Z", or "oneDNN not found". */
const char *bench_dnnl_version(void);

/**
 * Builds the pipeline of op on sh with the caller's buffers (row-major,
 * as the kernels library takes them): GEMM ops read a (M x K), b (K x N),
 * gamma and beta (N) and write y (M x N); attention reads q, k, v (heads of
 * lq x d, lk x d) and writes y (lq x d per head). scale multiplies the
 * first product; eps is LayerNorm's. Returns 0, -ENOTSUP (no oneDNN, or
 * causal attention, which the peer does not mask) or another negative
 * errno code, with a one-line reason in err. ws (ws_bytes; may be NULL)
 * holds the intermediate when it is large enough, else d allocates its own.
 */
int bench_dnnl_create(bench_dnnl **out, comet_kernels_op op, const comet_kernels_shape *sh,
    int causal, int threads, float scale, float eps, const float *a, const float *b, const float *c,
    const float *gamma, const float *beta, float *y, float *ws, size_t ws_bytes, char *err,
    size_t errlen);

/** Runs the pipeline once and waits for it (0 or a negative errno code). */
int bench_dnnl_run(bench_dnnl *d);

/** Bytes of the intermediates d holds. */
size_t bench_dnnl_footprint(const bench_dnnl *d);

/** Frees everything (NULL is a no-op). */
void bench_dnnl_free(bench_dnnl *d);

#endif
