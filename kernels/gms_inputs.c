/* Gather-GEMM-scatter inputs: generators for RGCN, SpConv and MoE with a
 * skew knob, deterministic for a seed, and a reader for user inputs.
 *
 * Statistics (documented in comet_kernels.h):
 *  - rgcn: rows nodes, nseg relations, 8*rows edges; relation r receives a
 *    share proportional to 1/(r+1)^skew (Zipf), endpoints uniform.
 *  - spconv: rows occupied voxels placed uniformly in a cube of density
 *    0.5/(1+4*skew); 27 segments, one per 3x3x3 offset, pair (neighbour,
 *    voxel) when the neighbour is occupied (the centre offset has all rows).
 *  - moe: rows tokens routed top-2 to nseg experts with popularity
 *    proportional to 1/(e+1)^skew (two distinct experts per token). */
#include "comet_kernels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

void comet_kernels_gms_problem_free(comet_kernels_gms_problem *pr)
{
    if (!pr)
        return;
    free(pr->seg_ptr);
    free(pr->src);
    free(pr->dst);
    memset(pr, 0, sizeof *pr);
}

/* Groups (seg, src, dst) triples by segment (stable counting sort). */
static int group(size_t nseg, size_t n, const uint32_t *seg, const uint32_t *src,
    const uint32_t *dst, comet_kernels_gms_problem *pr)
{
    pr->nseg = nseg;
    pr->seg_ptr = calloc(nseg + 1, sizeof *pr->seg_ptr);
    pr->src = malloc((n ? n : 1) * sizeof(uint32_t));
    pr->dst = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!pr->seg_ptr || !pr->src || !pr->dst)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        pr->seg_ptr[seg[i] + 1]++;
    for (size_t s = 0; s < nseg; s++)
        pr->seg_ptr[s + 1] += pr->seg_ptr[s];
    size_t *pos = malloc((nseg ? nseg : 1) * sizeof *pos);
    if (!pos)
        return -ENOMEM;
    memcpy(pos, pr->seg_ptr, nseg * sizeof *pos);
    for (size_t i = 0; i < n; i++) {
        size_t k = pos[seg[i]]++;
        pr->src[k] = src[i];
        pr->dst[k] = dst[i];
    }
    free(pos);
    return 0;
}

/* Samples an index from the cumulative weights cdf[0..n). */
static size_t sample(const double *cdf, size_t n, double u)
{
    size_t lo = 0, hi = n - 1;
    u *= cdf[n - 1];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

int comet_kernels_gms_generate(comet_kernels_gms_workload w, size_t rows, size_t nseg, double skew,
    unsigned long long seed, comet_kernels_gms_problem *pr)
{
    int rc = -ENOMEM;
    uint32_t *seg = NULL, *src = NULL, *dst = NULL;
    double *cdf = NULL;
    int32_t *grid = NULL;
    uint64_t st = seed * 0x2545F4914F6CDD1Dull + 1;
    if (!pr)
        return -EINVAL;
    memset(pr, 0, sizeof *pr);
    if (rows == 0 || rows > UINT32_MAX / 64 || !(skew >= 0) || skew > 16)
        return -EINVAL;
    if (w == COMET_KERNELS_GMS_SPCONV)
        nseg = 27;
    if (nseg == 0 || nseg > 1u << 20)
        return -EINVAL;
    size_t cap = w == COMET_KERNELS_GMS_RGCN ? 8 * rows
        : w == COMET_KERNELS_GMS_MOE         ? 2 * rows
                                             : 27 * rows;
    if (w == COMET_KERNELS_GMS_MOE && nseg < 2)
        return -EINVAL;
    seg = malloc(cap * sizeof *seg);
    src = malloc(cap * sizeof *src);
    dst = malloc(cap * sizeof *dst);
    cdf = malloc(nseg * sizeof *cdf);
    if (!seg || !src || !dst || !cdf)
        goto out;
    double acc = 0;
    for (size_t s = 0; s < nseg; s++)
        cdf[s] = (acc += pow((double)(s + 1), -skew));
    size_t n = 0;
    pr->rows_in = pr->rows_out = rows;
    switch (w) {
    case COMET_KERNELS_GMS_RGCN:
        for (; n < cap; n++) {
            seg[n] = (uint32_t)sample(cdf, nseg, rng_unit(&st));
            src[n] = (uint32_t)(rng_next(&st) % rows);
            dst[n] = (uint32_t)(rng_next(&st) % rows);
        }
        break;
    case COMET_KERNELS_GMS_MOE:
        for (size_t t = 0; t < rows; t++) {
            size_t e1 = sample(cdf, nseg, rng_unit(&st)), e2;
            do
                e2 = sample(cdf, nseg, rng_unit(&st));
            while (e2 == e1);
            seg[n] = (uint32_t)e1, src[n] = dst[n] = (uint32_t)t, n++;
            seg[n] = (uint32_t)e2, src[n] = dst[n] = (uint32_t)t, n++;
        }
        break;
    case COMET_KERNELS_GMS_SPCONV: {
        double density = 0.5 / (1.0 + 4.0 * skew);
        size_t L = (size_t)ceil(cbrt((double)rows / density));
        if (L < 2)
            L = 2;
        while (L * L * L < rows)
            L++;
        size_t cells = L * L * L;
        uint32_t *coord = malloc(rows * sizeof *coord);
        grid = malloc(cells * sizeof *grid);
        if (!grid || !coord) {
            free(coord);
            goto out;
        }
        for (size_t c = 0; c < cells; c++)
            grid[c] = -1;
        for (size_t v = 0; v < rows;) {
            size_t c = (size_t)(rng_next(&st) % cells);
            if (grid[c] < 0) {
                grid[c] = (int32_t)v;
                coord[v++] = (uint32_t)c;
            }
        }
        for (int o = 0; o < 27; o++) {
            long dx = o % 3 - 1, dy = o / 3 % 3 - 1, dz = o / 9 - 1;
            for (size_t v = 0; v < rows; v++) {
                long x = (long)(coord[v] % L) + dx, y = (long)(coord[v] / L % L) + dy,
                     z = (long)(coord[v] / L / L) + dz;
                if (x < 0 || y < 0 || z < 0 || x >= (long)L || y >= (long)L || z >= (long)L)
                    continue;
                int32_t u = grid[(size_t)x + L * ((size_t)y + L * (size_t)z)];
                if (u >= 0)
                    seg[n] = (uint32_t)o, src[n] = (uint32_t)u, dst[n] = (uint32_t)v, n++;
            }
        }
        free(coord);
        break;
    }
    default:
        rc = -EINVAL;
        goto out;
    }
    rc = group(nseg, n, seg, src, dst, pr);
out:
    free(seg);
    free(src);
    free(dst);
    free(cdf);
    free(grid);
    if (rc != 0)
        comet_kernels_gms_problem_free(pr);
    return rc;
}

void comet_kernels_gms_stats_of(const comet_kernels_gms_problem *pr, comet_kernels_gms_stats *st)
{
    memset(st, 0, sizeof *st);
    st->segments = pr->nseg;
    st->pairs = pr->nseg ? pr->seg_ptr[pr->nseg] : 0;
    st->rows = pr->rows_out;
    for (size_t s = 0; s < pr->nseg; s++) {
        size_t c = pr->seg_ptr[s + 1] - pr->seg_ptr[s];
        if (c > st->max_seg)
            st->max_seg = c;
        if (c > 0)
            st->nonempty++;
    }
    st->mean_seg = pr->nseg ? (double)st->pairs / (double)pr->nseg : 0;
}

int comet_kernels_gms_read(
    const char *path, comet_kernels_gms_problem *pr, char *err, size_t errlen)
{
    int rc = -EINVAL;
    FILE *f = NULL;
    uint32_t *seg = NULL, *src = NULL, *dst = NULL;
    size_t n = 0, cap = 0, line = 0, rin = 0, rout = 0, nseg = 0;
    char buf[256];
    int have_header = 0;
    if (!pr || !path)
        return -EINVAL;
    memset(pr, 0, sizeof *pr);
    if (!(f = fopen(path, "r"))) {
        rc = -errno;
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return rc;
    }
    while (fgets(buf, sizeof buf, f)) {
        line++;
        char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        if (!have_header) {
            long long a, b, c;
            char tail;
            if (sscanf(p, "gms %lld %lld %lld %c", &a, &b, &c, &tail) != 3 || a <= 0 || b <= 0
                || c <= 0 || a > UINT32_MAX || b > UINT32_MAX || c > (1 << 20)) {
                snprintf(err, errlen,
                    "%s:%zu: expected header 'gms ROWS_IN ROWS_OUT SEGMENTS' (positive)", path,
                    line);
                goto out;
            }
            rin = (size_t)a, rout = (size_t)b, nseg = (size_t)c;
            have_header = 1;
            continue;
        }
        long long s, a, b;
        char tail;
        if (sscanf(p, "%lld %lld %lld %c", &s, &a, &b, &tail) != 3) {
            snprintf(err, errlen, "%s:%zu: expected 'SEGMENT SRC DST' integers", path, line);
            goto out;
        }
        if (s < 0 || (size_t)s >= nseg || a < 0 || (size_t)a >= rin || b < 0 || (size_t)b >= rout) {
            snprintf(err, errlen,
                "%s:%zu: index out of range (segment %lld of %zu, src %lld of %zu, dst %lld of "
                "%zu)",
                path, line, s, nseg, a, rin, b, rout);
            goto out;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 1024;
            uint32_t *x = realloc(seg, nc * 4), *y, *z;
            if (x)
                seg = x;
            y = x ? realloc(src, nc * 4) : NULL;
            if (y)
                src = y;
            z = y ? realloc(dst, nc * 4) : NULL;
            if (!z) {
                rc = -ENOMEM;
                snprintf(err, errlen, "%s:%zu: out of memory", path, line);
                goto out;
            }
            dst = z;
            cap = nc;
        }
        seg[n] = (uint32_t)s, src[n] = (uint32_t)a, dst[n] = (uint32_t)b, n++;
    }
    if (!have_header) {
        snprintf(err, errlen, "%s:%zu: no 'gms ROWS_IN ROWS_OUT SEGMENTS' header", path, line);
        goto out;
    }
    rc = group(nseg, n, seg, src, dst, pr);
    pr->rows_in = rin;
    pr->rows_out = rout;
    if (rc != 0)
        snprintf(err, errlen, "%s: out of memory", path);
out:
    if (f)
        fclose(f);
    free(seg);
    free(src);
    free(dst);
    if (rc != 0)
        comet_kernels_gms_problem_free(pr);
    return rc;
}

const char *comet_kernels_gms_workload_name(comet_kernels_gms_workload w)
{
    return w == COMET_KERNELS_GMS_RGCN  ? "rgcn"
        : w == COMET_KERNELS_GMS_SPCONV ? "spconv"
        : w == COMET_KERNELS_GMS_MOE    ? "moe"
                                        : "?";
}

int comet_kernels_gms_workload_parse(const char *name, comet_kernels_gms_workload *w)
{
    for (int i = 0; i < 3; i++)
        if (name
            && strcmp(name, comet_kernels_gms_workload_name((comet_kernels_gms_workload)i)) == 0) {
            *w = (comet_kernels_gms_workload)i;
            return 0;
        }
    return -EINVAL;
}
