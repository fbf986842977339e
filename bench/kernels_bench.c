/* comet bench kernels: compound ops x variant x shape x threads from a shape
 * set, tile sweeps of the fused variants, and plain sgemm over a log-spaced
 * (M, N, K) grid. Every result is spot-checked against a double-precision
 * reference on a few rows. */
#include "bench_internal.h"
#include "kernels_ops.h"
#include "onednn.h"

#include <cblas.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Plain sgemm (op "sgemm", variant "blas")                           */
/* ------------------------------------------------------------------ */

typedef struct sgemm_ctx {
    int M, N, K;
    float *A, *B, *C;
    /* cold (variant blas_cold): B is one of ncopies K x N copies in turn,
     * laid out in Bc over twice the LLC, so every call reads it from DRAM */
    float *Bc, *Bcur;
    size_t cold_elems, ncopies, next;
} sgemm_ctx;

static int sgemm_fn(void *ctx, size_t reps)
{
    sgemm_ctx *g = ctx;
    for (size_t r = 0; r < reps; r++) {
        g->Bcur = g->ncopies > 1 ? g->Bc + (g->next++ % g->ncopies) * (size_t)g->K * g->N : g->B;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->M, g->N, g->K, 1.0f, g->A, g->K,
            g->Bcur, g->N, 0.0f, g->C, g->N);
    }
    return 0;
}

/* C rows {0, M/2, M-1} against a double reference; tolerance grows with K.
 * The three rows are accumulated in one pass over B's rows (sequential
 * reads): walking B by columns took a cache miss per element, 0.3-0.4 s a
 * pass on a 4096 x 4096 B, more than the point's timed calls. Returns 1
 * valid, 0 invalid, -ENOMEM. */
static int sgemm_valid(const sgemm_ctx *g)
{
    const int rows[3] = { 0, g->M / 2, g->M - 1 };
    const size_t N = (size_t)g->N;
    double *acc = calloc(6 * N, sizeof *acc); /* ref then |terms| of each row */
    if (!acc)
        return -ENOMEM;
    for (int p = 0; p < g->K; p++) {
        const float *b = g->Bcur + (size_t)p * N;
        for (int k = 0; k < 3; k++) {
            const double a = g->A[(size_t)rows[k] * g->K + p];
            double *ref = acc + 2 * k * N, *mag = ref + N;
            for (size_t j = 0; j < N; j++) {
                const double t = a * b[j];
                ref[j] += t;
                mag[j] += fabs(t);
            }
        }
    }
    int ok = 1;
    for (int k = 0; k < 3 && ok; k++) {
        const double *ref = acc + 2 * k * N, *mag = ref + N;
        const float *c = g->C + (size_t)rows[k] * N;
        for (size_t j = 0; j < N && ok; j++)
            ok = fabs(c[j] - ref[j]) <= 2.0 * g->K * FLT_EPSILON * mag[j] + 1e-6;
    }
    free(acc);
    return ok;
}

/* ------------------------------------------------------------------ */
/* Driver: a job list measured in interleaved passes                  */
/* ------------------------------------------------------------------ */

/* One configuration to measure. With several passes each pass adds
 * samples, so a median spans the whole run rather than one short window
 * (slow drift from other tenants then moves every job alike). */
typedef struct kjob {
    int sgemm; /* 1: plain sgemm; 0: compound op */
    int fused_gemm; /* the fused kernel's GEMM alone, recorded as sgemm/fused */
    int cold; /* sgemm: B cold (variant blas_cold) */
    const char *op; /* op name */
    const char *variant; /* variant */
    bench_shape shape; /* problem shape */
    int T; /* threads */
    const char *param; /* swept tile parameter or NULL */
    long pval; /* its value */
    double *samples; /* merged per-call seconds */
    size_t n, cap; /* samples held / capacity */
    size_t reps; /* calls per sample in the last pass */
    int converged; /* every pass met the CI target */
    int valid; /* every pass's result checked out */
    comet_bench_load load; /* worst load seen over passes */
    double flops, bytes; /* analytic, one call */
    double calls; /* calls timed over all passes */
    double clock_sum, clock_n; /* measured clock x samples, and samples, over passes */
    int passes; /* passes that added samples */
    double c2c[COMET_RESULTS_C2C_MAX]; /* core-to-core ns after each pass's samples (T > 1) */
    int nc2c; /* of them measured */
    double wall_s; /* wall time over passes: set-up, warm-up, sampling, check */
    json_t *params; /* params object (owned) */
    bench_kop *kop; /* prepared call kept between passes (NULL: prepared each pass) */
} kjob;

typedef struct kdriver {
    bench_session *s;
    sgemm_ctx g; /* sgemm buffers sized for the largest grid shape */
    int cur_T; /* threads the machine is pinned for (-1 none) */
    size_t kept_bytes; /* buffers of the prepared calls kept between passes */
    int last_pass; /* the pass being run is the last one */
} kdriver;

/* Prepared calls are kept between passes up to this many bytes (counted per
 * call; calls of one op and shape share their buffers, so the memory held
 * is less): the second and later passes then skip allocation, input fill
 * and page faults (the quick set's 4096x4096 shapes spent 0.1-0.16 s per
 * pass there). 512 MiB keeps the quick set's compound calls and most of
 * the fused grid, within the quick job's 1 GiB. */
#define KEEP_BYTES ((size_t)512 << 20)

static int resolve_threads(int t, int ncores)
{
    return t == 0 ? ncores : t;
}

/* Whether the fused GEMM's grid runs at thread entry t of the sgemm list
 * (forced: --threads given, every grid runs at it). */
static int fused_at(const bench_shapeset *set, int t, int forced)
{
    if (forced > 0)
        return 1;
    for (size_t i = 0; i < set->sg_fused_nthreads; i++)
        if (set->sg_fused_threads[i] == t)
            return 1;
    return 0;
}

/* Log-spaced integer grid from lo to hi with n points (deduplicated). */
static size_t log_grid(long lo, long hi, int n, long *out)
{
    size_t m = 0;
    for (int i = 0; i < n; i++) {
        double f = n == 1 ? 0 : (double)i / (n - 1);
        long v = lround(exp(log((double)lo) + f * (log((double)hi) - log((double)lo))));
        if (m == 0 || v != out[m - 1])
            out[m++] = v;
    }
    return m;
}

static int job_add_samples(kjob *j, const comet_bench_result *r)
{
    if (j->n + r->n > j->cap) {
        size_t nc = (j->n + r->n) * 2;
        double *t = realloc(j->samples, nc * sizeof *t);
        if (!t)
            return -ENOMEM;
        j->samples = t;
        j->cap = nc;
    }
    memcpy(j->samples + j->n, r->samples, r->n * sizeof *r->samples);
    j->n += r->n;
    j->reps = r->reps;
    j->calls += r->calls;
    j->passes++;
    j->converged = j->converged && r->converged;
    if (r->load.busy_others > j->load.busy_others)
        j->load.busy_others = r->load.busy_others;
    if (r->load.busy_during > j->load.busy_during)
        j->load.busy_during = r->load.busy_during;
    j->load.reused = j->load.reused || r->load.reused;
    j->load.waited_s += r->load.waited_s;
    j->load.idle = j->load.idle && r->load.idle;
    j->load.skipped = r->load.skipped;
    if (r->clock_mhz > 0) {
        j->clock_sum += r->clock_mhz * (double)r->n;
        j->clock_n += (double)r->n;
    }
    return 0;
}

/* Measures one pass of job j, adding its samples. */
static int job_measure(kdriver *d, kjob *j, char *err, size_t errlen)
{
    bench_session *s = d->s;
    comet_bench_result res = { 0 };
    int rc = 0, valid = 0;
    const double t_job = comet_util_now();
    if (d->cur_T != j->T) {
        bench_session_pin(s, j->T);
        d->cur_T = j->T;
    }
    if (j->sgemm) {
        openblas_set_num_threads(j->T);
        d->g.M = (int)j->shape.M;
        d->g.N = (int)j->shape.N;
        d->g.K = (int)j->shape.K;
        d->g.ncopies = 1;
        if (j->cold) /* as many copies of B as the cold span holds (>= 2) */
            d->g.ncopies = d->g.cold_elems / ((size_t)d->g.K * d->g.N);
        if ((rc = comet_bench_measure(&s->cfg, sgemm_fn, &d->g, &res, err, errlen)))
            goto done;
        if (j->cold && !j->params)
            j->params = json_pack("{s:I}", "cold_bytes",
                (json_int_t)(d->g.ncopies * (size_t)d->g.K * d->g.N * sizeof(float)));
        if ((valid = sgemm_valid(&d->g)) < 0) {
            rc = comet_util_seterr(err, errlen, valid, "bench sgemm: out of memory");
            goto done;
        }
        j->flops = 2.0 * d->g.M * d->g.N * d->g.K;
        j->bytes
            = 4.0 * ((double)d->g.M * d->g.K + (double)d->g.K * d->g.N + (double)d->g.M * d->g.N);
    } else {
        bench_kop local, *kp = j->kop ? j->kop : &local;
        if (!j->kop
            && (rc = bench_kop_init(
                    kp, j->op, j->variant, &j->shape, j->T, j->param, j->pval, err, errlen)))
            goto done;
        bench_kop k = *kp; /* the same buffers (impl is shared) */
        rc = comet_bench_measure(&s->cfg, bench_kop_fn, &k, &res, err, errlen);
        if (!rc && j->fused_gemm) {
            valid = bench_kop_check(&k); /* checks the product alone */
            j->flops = 2.0 * j->shape.M * j->shape.N * j->shape.K;
            j->bytes = 4.0
                * ((double)j->shape.M * j->shape.K + (double)j->shape.K * j->shape.N
                    + (double)j->shape.M * j->shape.N);
            if (!j->params)
                j->params = bench_kop_params(&k);
        } else if (!rc) {
            valid = bench_kop_check(&k);
            j->flops = k.flops;
            j->bytes = k.bytes;
            if (!j->params)
                j->params = bench_kop_params(&k);
        }
        if (!j->kop && !rc && !d->last_pass && d->kept_bytes + bench_kop_footprint(kp) <= KEEP_BYTES
            && (j->kop = malloc(sizeof *j->kop)) != NULL) {
            *j->kop = *kp;
            d->kept_bytes += bench_kop_footprint(kp);
        } else if (kp == &local || rc || d->last_pass) {
            d->kept_bytes -= kp == &local ? 0 : bench_kop_footprint(kp);
            bench_kop_fini(kp);
            if (kp != &local) {
                free(j->kop);
                j->kop = NULL;
            }
        }
        if (rc)
            goto done;
    }
    j->valid = j->valid && valid;
    if (j->T > 1 && j->nc2c < COMET_RESULTS_C2C_MAX) {
        /* which path the threads' shared lines took during these samples */
        double c = comet_bench_core_to_core_ns(2000, 5);
        if (c > 0)
            j->c2c[j->nc2c++] = c;
    }
    if ((rc = job_add_samples(j, &res)))
        comet_util_seterr(err, errlen, rc, "bench kernels: out of memory");
done:
    comet_bench_result_free(&res);
    j->wall_s += comet_util_now() - t_job;
    return rc;
}

/* Writes the merged record of a job that has samples. */
static int job_emit(bench_session *s, kjob *j, double *hl, char *err, size_t errlen)
{
    comet_bench_result r = { 0 };
    int rc;
    if (j->n == 0)
        return 0;
    r.samples = j->samples;
    r.n = j->n;
    r.reps = j->reps;
    r.converged = j->converged;
    r.load = j->load;
    r.calls = j->calls;
    r.clock_mhz = j->clock_n > 0 ? j->clock_sum / j->clock_n : 0; /* over the passes */
    if ((rc = comet_bench_stats_compute(j->samples, j->n, &r.stats)))
        return comet_util_seterr(err, errlen, rc, "bench kernels: statistics failed");
    const bench_shape *sh = &j->shape;
    json_t *shape = sh->attn
        ? json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}", "B", (int)sh->B, "H", (int)sh->H, "Lq",
            (int)sh->Lq, "Lk", (int)sh->Lk, "d", (int)sh->d, "causal", sh->causal)
        : json_pack("{s:i,s:i,s:i}", "M", (int)sh->M, "N", (int)sh->N, "K", (int)sh->K);
    json_t *rec = comet_bench_record_new(&s->run, "kernel", j->fused_gemm ? "sgemm" : j->op,
        j->fused_gemm ? "fused" : j->variant, shape, j->T);
    if (!rec)
        return comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
    if (j->params)
        json_object_set(rec, "params", j->params);
    json_object_set_new(rec, "passes", json_integer(j->passes));
    json_object_set_new(rec, "wall_s", json_real(j->wall_s));
    if (j->nc2c > 0) {
        json_t *c = json_array();
        for (int i = 0; i < j->nc2c; i++)
            json_array_append_new(c, json_real(round(j->c2c[i] * 10) / 10));
        json_object_set_new(rec, "c2c_ns", c);
    }
    if ((rc = comet_bench_record_set_result(rec, &r, j->flops, j->bytes)) == 0) {
        json_object_set_new(rec, "valid", json_boolean(j->valid));
        comet_bench_record_set_counters(rec, &s->counters, r.calls);
        rc = bench_session_write(s, rec, j->valid, err, errlen);
    }
    json_decref(rec);
    if (j->sgemm && r.stats.median > 0) {
        double gf = j->flops / r.stats.median / 1e9;
        if (gf > hl[j->T > 1])
            hl[j->T > 1] = gf;
    }
    return rc;
}

/* Builds the job list: compound ops (with tile sweeps of fused variants)
 * per thread count, then the sgemm grid per thread count. */
static int build_jobs(const comet_bench_opts *o, const bench_shapeset *set, int ncores,
    kjob **jobs_out, size_t *njobs_out, long *maxd, char *err, size_t errlen)
{
    size_t cap = 64, n = 0;
    kjob *jobs = calloc(cap, sizeof *jobs);
    *maxd = 1;
    if (!jobs)
        return comet_util_seterr(err, errlen, -ENOMEM, "bench kernels: out of memory");
#define ADD_JOB()                                                                                  \
    do {                                                                                           \
        if (n == cap) {                                                                            \
            kjob *t_ = realloc(jobs, 2 * cap * sizeof *jobs);                                      \
            if (!t_)                                                                               \
                goto nomem;                                                                        \
            jobs = t_;                                                                             \
            memset(jobs + cap, 0, cap * sizeof *jobs);                                             \
            cap *= 2;                                                                              \
        }                                                                                          \
        jobs[n].converged = 1;                                                                     \
        jobs[n].valid = 1;                                                                         \
        jobs[n].load.idle = 1;                                                                     \
        n++;                                                                                       \
    } while (0)
    size_t nthr = o->threads > 0 ? 1 : set->nthreads;
    for (size_t ti = 0; ti < nthr; ti++) {
        int T = o->threads > 0 ? o->threads : resolve_threads(set->threads[ti], ncores);
        if (T > ncores) {
            comet_util_info("bench kernels: skipping %d threads (only %d cores)", T, ncores);
            continue;
        }
        for (size_t i = 0; i < set->nops; i++) {
            const bench_opset *os = &set->ops[i];
            if (!bench_kop_available(os->op)) {
                if (ti == 0)
                    comet_util_info(
                        "bench kernels: %s is not in the kernels library yet; skipped", os->op);
                continue;
            }
            for (size_t h = 0; h < os->nshapes; h++)
                for (size_t v = 0; v < os->nvariants; v++) {
                    if (!strcmp(os->variants[v], "onednn")
                        && (!bench_dnnl_available() || os->shapes[h].causal)) {
                        /* a peer to beat where present, never a requirement */
                        if (!bench_dnnl_available() && ti == 0 && h == 0)
                            comet_util_info("bench kernels: %s: oneDNN not found; variant "
                                            "onednn skipped",
                                os->op);
                        else if (bench_dnnl_available() && ti == 0)
                            comet_util_info("bench kernels: %s line %d: the oneDNN peer runs "
                                            "unmasked attention only; causal shape skipped",
                                os->op, os->shapes[h].line);
                        continue;
                    }
                    ADD_JOB();
                    kjob *j = &jobs[n - 1];
                    j->op = os->op;
                    j->variant = os->variants[v];
                    j->shape = os->shapes[h];
                    j->T = T;
                    if (strcmp(os->variants[v], "fused"))
                        continue;
                    for (size_t w = 0; w < set->nsweeps; w++) {
                        const bench_tilesweep *ts = &set->sweeps[w];
                        if (strcmp(ts->op, os->op))
                            continue;
                        for (size_t q = 0; q < ts->nvalues; q++) {
                            ADD_JOB();
                            kjob *t = &jobs[n - 1];
                            t->op = os->op;
                            t->variant = "fused";
                            t->shape = os->shapes[h];
                            t->T = T;
                            t->param = ts->param;
                            t->pval = ts->values[q];
                        }
                    }
                }
        }
    }
    /* a decode step's attention, K and V cold, at one thread */
    for (size_t h = 0; h < set->ndecode; h++) {
        ADD_JOB();
        kjob *j = &jobs[n - 1];
        j->op = "attention";
        j->variant = "fused_cold";
        j->shape = set->decode[h];
        j->T = 1;
    }
    if (set->have_sgemm) {
        long grid[16], ms[20];
        size_t ng = log_grid(set->sg_min, set->sg_max, set->sg_points, grid);
        *maxd = grid[ng - 1];
        /* the M axis: the small rows below the cube, then the cube's */
        const size_t nsm = (size_t)set->sg_n_small_m, nm = nsm + ng;
        for (size_t i = 0; i < nm; i++)
            ms[i] = i < nsm ? set->sg_small_m[i] : grid[i - nsm];
        size_t nthr2 = o->threads > 0 ? 1 : set->sg_nthreads;
        for (size_t ti = 0; ti < nthr2; ti++) {
            int T = o->threads > 0 ? o->threads : resolve_threads(set->sg_threads[ti], ncores);
            if (T > ncores) {
                comet_util_info("bench sgemm: skipping %d threads (only %d cores)", T, ncores);
                continue;
            }
            for (size_t a = 0; a < nm; a++)
                for (size_t b = 0; b < ng; b++)
                    for (size_t c = 0; c < ng; c++) {
                        /* small rows at one thread only: a rank's threads
                         * split such a GEMM by columns, each at one thread
                         * (bench llm); calibrate scales them to T threads */
                        if (a < nsm && T != 1)
                            continue;
                        /* ... nor over the cube's far corner: packing a
                         * 64 MiB operand for 8 rows took a second of the
                         * quick job's 4; calibration fills it from the
                         * largest rows measured below it */
                        if (a < nsm && (double)grid[b] * grid[c] > (double)(1 << 23))
                            continue;
                        if (set->sg_max_gflop > 0
                            && 2.0 * ms[a] * grid[b] * grid[c] > set->sg_max_gflop * 1e9)
                            continue;
                        ADD_JOB();
                        kjob *j = &jobs[n - 1];
                        j->sgemm = 1;
                        j->op = "sgemm";
                        j->variant = "blas";
                        j->shape.M = ms[a];
                        j->shape.N = grid[b];
                        j->shape.K = grid[c];
                        j->T = T;
                        if (a < nsm && set->sg_small_m_cold) { /* its twin, B cold */
                            ADD_JOB();
                            kjob *cj = &jobs[n - 1];
                            *cj = jobs[n - 2];
                            cj->variant = "blas_cold";
                            cj->cold = 1;
                        }
                        if (!set->sg_fused || a < nsm
                            || (set->sg_fused_max_k > 0 && grid[c] > set->sg_fused_max_k)
                            || !fused_at(set, set->sg_threads[ti], o->threads))
                            continue;
                        ADD_JOB();
                        kjob *f = &jobs[n - 1];
                        *f = jobs[n - 2];
                        f->sgemm = 0;
                        f->fused_gemm = 1;
                        f->op = "gemm_softmax";
                        f->variant = "fused";
                        f->param = "gemm_only";
                        f->pval = 1;
                    }
        }
    }
#undef ADD_JOB
    *jobs_out = jobs;
    *njobs_out = n;
    return 0;
nomem:
    free(jobs);
    return comet_util_seterr(err, errlen, -ENOMEM, "bench kernels: out of memory");
}

static void jobs_free(kjob *jobs, size_t n)
{
    for (size_t i = 0; jobs && i < n; i++) {
        free(jobs[i].samples);
        json_decref(jobs[i].params);
        if (jobs[i].kop) {
            bench_kop_fini(jobs[i].kop);
            free(jobs[i].kop);
        }
    }
    free(jobs);
}

int comet_bench_kernels_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen)
{
    bench_shapeset set;
    bench_session s;
    kdriver d;
    kjob *jobs = NULL;
    size_t njobs = 0;
    long maxd = 1;
    bench_arena garena = { NULL, 0 }; /* the sgemm grid's A, B, C */
    bench_arena carena = { NULL, 0 }; /* the cold rows' copies of B */
    char path[4096];
    int rc;
    const char *sp = o->shapes_path;
    if (!sp) {
        (void)comet_util_config_path("shapes", o->full ? "full" : "quick", path, sizeof path);
        sp = path; /* a missing set is named by the loader */
    }
    if ((rc = bench_shapeset_load(sp, bench_kop_names, &set, err, errlen)))
        return rc == -ENOMEM ? rc : (rc == -ENOENT ? rc : -EINVAL);
    if ((rc = bench_session_open(&s, o, "kernels", machine, sum, err, errlen))) {
        bench_shapeset_free(&set);
        return rc;
    }
    memset(&d, 0, sizeof d);
    d.s = &s;
    d.cur_T = -1;
    /* Freed buffers stay in the heap for the next set: a fresh 64 MiB
     * mapping costs ~0.1 s of page faults and zeroing on this kind of VM,
     * paid again by every set that allocates one. */
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    bench_kop_set_caches(s.l1, s.l2, s.llc);
    int ncores = comet_bench_ncores();
    if ((rc = build_jobs(o, &set, ncores, &jobs, &njobs, &maxd, err, errlen)))
        goto fail;
    size_t md = (size_t)maxd;
    {
        const size_t gsz = md * md * sizeof(float), sizes[3] = { gsz, gsz, gsz };
        void *g[3] = { NULL, NULL, NULL };
        if (bench_arena_carve(&garena, sizes, g, 3) == 0)
            d.g.A = g[0], d.g.B = g[1], d.g.C = g[2];
    }
    if (!d.g.A || !d.g.B || !d.g.C) {
        rc = comet_util_seterr(
            err, errlen, -ENOMEM, "bench sgemm: cannot allocate %zux%zu", md, md);
        goto fail;
    }
    bench_fill(d.g.A, md * md, 1);
    bench_fill(d.g.B, md * md, 2);
    {
        /* the cold rows' span: twice the LLC (64 MiB unknown), at least two
         * copies of the largest B */
        size_t kn = 0;
        for (size_t i = 0; i < njobs; i++)
            if (jobs[i].cold && jobs[i].sgemm && (size_t)(jobs[i].shape.K * jobs[i].shape.N) > kn)
                kn = (size_t)(jobs[i].shape.K * jobs[i].shape.N);
        if (kn > 0) {
            const size_t span = (s.llc > 0 ? 2 * (size_t)s.llc : (size_t)64 << 20) / sizeof(float);
            d.g.cold_elems = span > 2 * kn ? span : 2 * kn;
            const size_t csz[1] = { d.g.cold_elems * sizeof(float) };
            void *c[1] = { NULL };
            if (bench_arena_carve(&carena, csz, c, 1) != 0) {
                rc = comet_util_seterr(
                    err, errlen, -ENOMEM, "bench sgemm: cannot allocate the cold span");
                goto fail;
            }
            d.g.Bc = c[0];
            bench_fill(d.g.Bc, d.g.cold_elems, 3);
        }
    }

    /* Each pass gets its share of the sampling budget. */
    int passes = o->passes > 0 ? o->passes : 1;
    double pass_cap = o->cfg.time_cap_s / passes;
    s.cfg.time_cap_s = pass_cap;
    size_t mins = (o->cfg.min_samples + (size_t)passes - 1) / (size_t)passes;
    /* >= 4 per pass, so three passes still merge >= 12 samples */
    s.cfg.min_samples = mins < 4 ? 4 : mins;
    /* a grid point is one of a smooth surface read by interpolation between
     * points 4x apart: 2 samples a pass (>= 6 over three passes, the median
     * of the passes' states) carry what its neighbours cannot; its long calls
     * (10-55 ms at 1-2 GFLOP) spent half the quick set on the 3rd and 4th */
    const size_t grid_mins = s.cfg.min_samples / 2 < 2 ? 2 : s.cfg.min_samples / 2;
    const size_t job_mins = s.cfg.min_samples;
    /* Every job, the sgemm grid (calibration input) included, runs in every
     * pass with its share of the budget, so that its samples span the run:
     * a VM's second vCPU can run slow for a second or two, unseen by the
     * idle gate (a host SMT sibling busy: no steal time), and a grid
     * measured in one window took that window's state (Zen 4 VM, quick
     * set: every 2-thread grid point 15-25% slow in one run, while the
     * compound kernels measured after it ran at full speed; the fitted
     * fork-and-join cost became 20 us, 2-thread predictions 30% slow). */
    bench_session_progress(&s, "bench kernels", njobs * (size_t)passes);
    for (int p = 0; p < passes && !s.stop; p++) {
        d.last_pass = p == passes - 1;
        for (size_t i = 0; i < njobs && !s.stop; i++) {
            kjob *j = &jobs[i];
            int grid = j->sgemm || j->fused_gemm;
            /* a grid set's cap (full: one pass's) shared by the passes */
            s.cfg.time_cap_s = grid
                ? (o->grid_time_cap_s > 0 ? o->grid_time_cap_s : pass_cap) / passes
                : pass_cap;
            /* the grid's short steady calls settle in half the warm-up; a
             * set kept from the previous pass is settled after one batch */
            s.cfg.warmup_s = grid ? o->cfg.warmup_s / 2 : o->cfg.warmup_s;
            /* settled after one batch: a call kept from the previous pass,
             * or an sgemm grid point after the first pass (its buffers are
             * the grid's, faulted in and filled before the first point) */
            s.cfg.settled = j->kop != NULL || (j->sgemm && p > 0);
            s.cfg.settled_reps = s.cfg.settled && j->n > 0 ? j->reps : 0;
            s.cfg.min_samples = grid ? grid_mins : job_mins;
            if ((rc = job_measure(&d, j, err, errlen)))
                goto fail;
            char note[128];
            double med = j->samples[j->n - 1];
            snprintf(note, sizeof note, "pass %d/%d %s %s T=%d%s%s: %.1f GFLOP/s%s", p + 1, passes,
                j->op, j->variant, j->T, j->param ? " " : "", j->param ? j->param : "",
                med > 0 ? j->flops / med / 1e9 : 0, j->valid ? "" : " INVALID");
            bench_session_step(&s, note);
        }
    }
    /* Records are written once every pass is done (or on interruption). */
    double hl[2] = { 0, 0 };
    for (size_t i = 0; i < njobs; i++)
        if ((rc = job_emit(&s, &jobs[i], hl, err, errlen)))
            goto fail;
    openblas_set_num_threads(ncores);
    bench_arena_free(&garena);
    bench_arena_free(&carena);
    jobs_free(jobs, njobs);
    bench_shapeset_free(&set);
    return bench_session_close(&s,
        json_pack("{s:f,s:f}", "sgemm_best_gflops_1thread", hl[0], "sgemm_best_gflops_multithread",
            hl[1]),
        err, errlen);
fail:
    openblas_set_num_threads(ncores);
    bench_arena_free(&garena);
    bench_arena_free(&carena);
    jobs_free(jobs, njobs);
    bench_session_abort(&s);
    bench_shapeset_free(&set);
    return rc;
}
