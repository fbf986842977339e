/* Internal: the adapter between the kernels bench and the kernels library's
 * compound ops (buffers, calls, analytic flops/bytes, result checks). */
#ifndef COMET_BENCH_KERNELS_OPS_H
#define COMET_BENCH_KERNELS_OPS_H

#include "bench_internal.h"

/** Compound op names a shape set may use (NULL-terminated). */
extern const char *const bench_kop_names[];

/** One prepared compound-op call. */
typedef struct bench_kop {
    char op[32];
    char variant[24];
    bench_shape shape;
    int threads;
    char param[32]; /* swept tile parameter, or "" */
    long pval; /* its value */
    double flops; /* analytic, one call */
    double bytes; /* analytic compulsory traffic, one call */
    void *impl; /* op-specific state */
} bench_kop;

/** Cache sizes (bytes, 0 unknown) the default tiles derive from. */
void bench_kop_set_caches(uint64_t l1, uint64_t l2, uint64_t l3);
/** 1 if the kernels library provides op (else the bench skips it, saying so). */
int bench_kop_available(const char *op);
/** Allocates and fills inputs; param may be NULL. */
int bench_kop_init(bench_kop *k, const char *op, const char *variant, const bench_shape *sh,
    int threads, const char *param, long pval, char *err, size_t errlen);
/** comet_bench_fn: runs the op reps times. */
int bench_kop_fn(void *ctx, size_t reps);
/** Checks the last result on a few rows against a double reference (1 = valid). */
int bench_kop_check(const bench_kop *k);
/** The "params" object (tile sizes used). */
json_t *bench_kop_params(const bench_kop *k);
/** Bytes of buffers and workspace k holds. */
size_t bench_kop_footprint(const bench_kop *k);
/** Frees buffers. */
void bench_kop_fini(bench_kop *k);

/** Reproducible pseudo-random fill in [-1, 1). */
void bench_fill(float *x, size_t n, unsigned seed);

#endif
