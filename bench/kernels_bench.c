/* comet bench kernels: placeholder until the kernels API lands. */
#include "bench_internal.h"

#include <errno.h>

int comet_bench_kernels_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen)
{
    (void)o;
    (void)machine;
    (void)sum;
    return comet_util_seterr(err, errlen, -ENOSYS, "bench kernels: not built yet");
}
