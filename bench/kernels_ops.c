/* Adapter to the kernels library's compound ops: waiting for its API. */
#include "kernels_ops.h"

#include <errno.h>
#include <string.h>

const char *const bench_kop_names[] = { "gemm_softmax", "gemm_layernorm", "attention", NULL };

int bench_kop_available(const char *op)
{
    (void)op;
    return 0;
}

int bench_kop_init(bench_kop *k, const char *op, const char *variant, const bench_shape *sh,
    int threads, const char *param, long pval, char *err, size_t errlen)
{
    (void)variant;
    (void)sh;
    (void)threads;
    (void)param;
    (void)pval;
    memset(k, 0, sizeof *k);
    return comet_util_seterr(err, errlen, -ENOSYS, "bench kernels: %s not available", op);
}

int bench_kop_fn(void *ctx, size_t reps)
{
    (void)ctx;
    (void)reps;
    return -ENOSYS;
}

int bench_kop_check(const bench_kop *k)
{
    (void)k;
    return 0;
}

json_t *bench_kop_params(const bench_kop *k)
{
    (void)k;
    return json_object();
}

void bench_kop_fini(bench_kop *k)
{
    (void)k;
}
