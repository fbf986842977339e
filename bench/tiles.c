/* The fused kernels' micro-tile rows per ISA, for readers of bench records
 * (calibrate) that may not include the kernels' header (docs/ARCHITECTURE.md:
 * only bench depends on kernels). */
#include "comet_bench.h"

#include "comet_kernels.h"

#include <string.h>

int comet_bench_micro_tile_rows(const char *isa, int *edge)
{
    if (edge)
        *edge = COMET_KERNELS_TILE_ROWS;
    return isa && !strcmp(isa, "avx512") ? COMET_KERNELS_TILE_ROWS_AVX512 : COMET_KERNELS_TILE_ROWS;
}
