/* comet bench collectives: the parent side.
 *
 * It launches `mpiexec -n N comet bench collectives --worker ...` once per
 * (collective, algorithm, launch): MPICH reads the algorithm-forcing CVARs at
 * MPI_Init, so each forced algorithm needs its own launch, and MPI timings
 * differ between launches (fast and slow groups), so each configuration is
 * launched several times. The whole job runs under one deadline: each
 * mpiexec runs in its own process group, which is killed when the deadline
 * passes, so a rank that dies or hangs ends the job with a clear error.
 * Ranks append to one results file named after the parent's run id. */
#include "coll_internal.h"
#include "comet_probe.h"
#include "comet_util.h"
#include "mpi_end.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef COMET_MPIEXEC
#define COMET_MPIEXEC "mpiexec"
#endif

/* glibc returns MPICH's per-call temporaries to the OS on every free unless
 * trimming and mmap are pushed out of reach (measured on the AMD EPYC VMs: Reduce at 1 MiB
 * costs ~6x more stock); runs use this unless --stock-malloc. */
#define NO_TRIM_TUNABLES                                                                           \
    "glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=4294967295"

/* allgatherv (equal counts, as the distributed unfused kernels call it to
 * join their slices, kernels/dist.c): MPICH runs it by another code path
 * than allgather; on the Zen 5 VM (2 ranks, shm) 1.1-1.3x allgather's time
 * from 64 KiB per rank in this bench's interleaved rounds, up to 2x in a
 * loop of back-to-back calls */
static const char *const colls_all[] = { "pingpong", "allreduce", "allgather", "allgatherv",
    "reduce_scatter", "reduce", "bcast", "alltoall", COLL_DIST, NULL };

/* The MPICH 4.0.2 algorithms that can be forced (src/mpi/coll/cvars.txt at
 * v4.0.2). "ring" for allreduce does not exist before 4.1: it is the
 * nonblocking path with the transport-based ring (nb + tsp_ring). */
static const char *const alg_none[] = { "auto", NULL };
static const char *const alg_allreduce[]
    = { "auto", "recursive_doubling", "reduce_scatter_allgather", "smp", "ring", NULL };
static const char *const alg_allgather[] = { "auto", "ring", "recursive_doubling", "brucks", NULL };
static const char *const alg_rs[]
    = { "auto", "recursive_halving", "pairwise", "recursive_doubling", "noncommutative", NULL };
static const char *const alg_reduce[]
    = { "auto", "binomial", "reduce_scatter_gather", "smp", NULL };
static const char *const alg_bcast[] = { "auto", "binomial", "scatter_recursive_doubling_allgather",
    "scatter_ring_allgather", "smp", NULL };
static const char *const alg_alltoall[] = { "auto", "brucks", "pairwise", "scattered", NULL };

const char *const *comet_bench_coll_algorithms(const char *c)
{
    if (!c)
        return NULL;
    if (!strcmp(c, "pingpong") || !strcmp(c, "exchange") || !strcmp(c, COLL_DIST)
        || !strcmp(c, "allgatherv"))
        return alg_none;
    if (!strcmp(c, "allreduce"))
        return alg_allreduce;
    if (!strcmp(c, "allgather"))
        return alg_allgather;
    if (!strcmp(c, "reduce_scatter"))
        return alg_rs;
    if (!strcmp(c, "reduce"))
        return alg_reduce;
    if (!strcmp(c, "bcast"))
        return alg_bcast;
    if (!strcmp(c, "alltoall"))
        return alg_alltoall;
    return NULL;
}

/* MPICH CVAR of a collective's intra-communicator algorithm. */
static const char *cvar_of(const char *c)
{
    if (!strcmp(c, "allreduce"))
        return "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM";
    if (!strcmp(c, "allgather"))
        return "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM";
    if (!strcmp(c, "reduce_scatter"))
        return "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM";
    if (!strcmp(c, "reduce"))
        return "MPIR_CVAR_REDUCE_INTRA_ALGORITHM";
    if (!strcmp(c, "bcast"))
        return "MPIR_CVAR_BCAST_INTRA_ALGORITHM";
    if (!strcmp(c, "alltoall"))
        return "MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM";
    return NULL;
}

/* Sets the environment that forces alg for coll (MPICH 4.0 CVARs): device
 * collectives off (else CH4 bypasses the MPIR selection), the algorithm,
 * and fallback=error so a forced algorithm that does not apply is an error
 * instead of a silent switch. */
/* The environment that forces alg for coll in every rank (MPICH's CVARs),
 * as NAME=VALUE assignments into env (NULL-ended). */
static void force_env(const char *coll, const char *alg, const char **env)
{
    static char cvar[128];
    const char *cv = cvar_of(coll);
    int n = 0;
    env[0] = NULL;
    if (!strcmp(alg, "auto") || !cv)
        return;
    env[n++] = "MPIR_CVAR_DEVICE_COLLECTIVES=none";
    env[n++] = "MPIR_CVAR_COLLECTIVE_FALLBACK=error";
    if (!strcmp(coll, "allreduce") && !strcmp(alg, "ring")) {
        snprintf(cvar, sizeof cvar, "%s=nb", cv);
        env[n++] = cvar;
        env[n++] = "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM=tsp_ring";
    } else {
        snprintf(cvar, sizeof cvar, "%s=%s", cv, alg);
        env[n++] = cvar;
    }
    env[n] = NULL;
}

/* ------------------------------------------------------------------ */
/* Usage and options                                                   */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* Launching                                                           */
/* ------------------------------------------------------------------ */

enum { L_OK = 0, L_FAIL = 1, L_UNUSABLE = 3, L_DEADLINE = 4, L_INTERRUPTED = 5, L_FINALIZE = 6 };

typedef struct launch_cfg {
    int np;
    char *largv[64]; /* launcher arguments */
    int nlarg;
    const char *sizes, *out, *run_id, *machine_id;
    int full;
    int loop; /* IMB timing: back-to-back calls after one barrier */
    double min_sample_s; /* shortest sample (0: the defaults) */
    double deadline;
    comet_bench_gate gate; /* idle gate before each launch */
    int status; /* raw wait status of the last launch */
    comet_bench_coll_spawn spawn; /* the CLI's: command line and exec */
    void *spawn_ctx;
} launch_cfg;

/* Launches one worker job; returns an L_* code. */
static int launch(launch_cfg *lc, const char *coll, const char *alg, int launch_idx)
{
    comet_bench_coll_job job;
    memset(&job, 0, sizeof job);
    job.coll = coll;
    job.alg = alg;
    job.sizes = lc->sizes;
    job.launch = launch_idx;
    job.outpath = lc->out;
    job.run_id = lc->run_id;
    job.machine_id = lc->machine_id;
    job.full = lc->full;
    job.sample_cap_s = lc->full ? 2.0 : 0.5;
    job.loop = lc->loop;
    job.min_sample_s = lc->min_sample_s;
    job.np = lc->np;
    job.launcher_args = lc->largv;
    job.nlauncher_args = lc->nlarg;
    force_env(coll, alg, job.env);
    /* idle gate: wait (bounded) until others leave the machine alone; the
     * ranks busy-poll, so this can only be done before they start */
    char gerr[COMET_ERRLEN];
    comet_bench_gate g = lc->gate;
    double left = lc->deadline - comet_util_now();
    if (g.timeout_s > left / 4) /* the gate never eats the job's deadline */
        g.timeout_s = left > 0 ? left / 4 : 0;
    if (comet_bench_gate_wait(&g, &job.load, gerr, sizeof gerr) != 0) {
        memset(&job.load, 0, sizeof job.load);
        job.load.skipped = 1;
        job.load.busy_others = -1;
        comet_util_debug("bench collectives: idle gate: %s", gerr);
    }
    /* others' share while the ranks sample is not measured (they busy-poll
     * every core): null in the records, not 0 */
    job.load.busy_during = -1;
    fflush(NULL);
    const long sp = lc->spawn(&job, lc->spawn_ctx);
    if (sp < 0)
        return L_FAIL;
    const pid_t pid = (pid_t)sp;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return L_FAIL;
        if (comet_util_now() > lc->deadline || comet_util_interrupted) {
            /* SIGTERM lets hydra take its proxies down; then no mercy */
            kill(-pid, SIGTERM);
            for (int i = 0; i < 50 && waitpid(pid, &st, WNOHANG) == 0; i++)
                usleep(20000);
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return comet_util_interrupted ? L_INTERRUPTED : L_DEADLINE;
        }
        usleep(10000);
    }
    lc->status = st;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return L_OK;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
        return L_UNUSABLE;
    if (WIFEXITED(st) && WEXITSTATUS(st) == COMET_BENCH_EXIT_FINALIZE)
        return L_FINALIZE;
    return L_FAIL;
}

/* ------------------------------------------------------------------ */
/* Summary                                                             */
/* ------------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Reads the results back: counts records and wrong results, and builds a
 * per (op, variant) table of the smallest-size latency and largest-size
 * busbw (medians over launches). */
static json_t *summarize(const char *path, size_t *nrec, size_t *ninvalid, char *err, size_t errlen)
{
    comet_results_set set = { 0 };
    *nrec = *ninvalid = 0;
    if (comet_results_load(path, NULL, &set, NULL, err, errlen) != 0)
        return NULL;
    const comet_results_record *recs = set.recs;
    size_t n = set.n;
    json_t *table = json_array();
    double *v = malloc((n + 1) * sizeof(double));
    for (size_t i = 0; i < n && v; i++) {
        const comet_results_kind kd = recs[i].kind;
        const char *k = comet_results_kind_name(kd);
        if (kd == COMET_RESULTS_RUN)
            continue;
        (*nrec)++;
        *ninvalid += recs[i].valid != 1;
        const char *op = recs[i].op, *var = recs[i].variant;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = recs[j].kind == kd && !strcmp(recs[j].op, op) && !strcmp(recs[j].variant, var);
        if (seen)
            continue;
        /* first record of this (kind, op, variant): gather its rows */
        double bmin = INFINITY, bmax = -INFINITY;
        for (size_t j = i; j < n; j++) {
            const comet_results_record *r = &recs[j];
            if (r->kind != kd || strcmp(r->op, op) || strcmp(r->variant, var))
                continue;
            double b = r->shape.bytes;
            if (isfinite(b)) {
                bmin = b < bmin ? b : bmin;
                bmax = b > bmax ? b : bmax;
            }
        }
        json_t *row = json_pack("{s:s,s:s,s:s}", "kind", k, "op", op, "variant", var);
        if (kd == COMET_RESULTS_DIST_KERNEL) {
            /* one row per kernel variant: median over its shapes is not
             * meaningful, so report the first shape's median time */
            json_object_set_new(row, "shape", json_loads(recs[i].shape.text, 0, NULL));
            json_object_set_new(row, "median_us", json_real(1e6 * recs[i].stats.median_s));
            json_object_set_new(row, "gflops", json_real(recs[i].gflops));
        } else {
            for (int side = 0; side < 2; side++) {
                double want = side ? bmax : bmin;
                size_t m = 0;
                for (size_t j = i; j < n; j++) {
                    const comet_results_record *r = &recs[j];
                    if (r->kind != kd || strcmp(r->op, op) || strcmp(r->variant, var)
                        || r->shape.bytes != want)
                        continue;
                    v[m++] = side ? r->busbw_GBs : r->latency_us;
                }
                if (!m)
                    continue;
                double med = median_of(v, m);
                if (side) {
                    json_object_set_new(row, "max_bytes", json_real(want));
                    json_object_set_new(row, "busbw_GBs", json_real(med));
                } else {
                    json_object_set_new(row, "min_bytes", json_real(want));
                    json_object_set_new(row, "latency_us", json_real(med));
                }
                json_object_set_new(row, "launches", json_integer((json_int_t)m));
            }
        }
        json_array_append_new(table, row);
    }
    free(v);
    comet_results_set_free(&set);
    return table;
}

static void print_table(const json_t *t)
{
    printf("%-12s %-16s %-38s %12s %12s %10s\n", "kind", "op", "variant", "lat_us@min", "busbw@max",
        "launches");
    for (size_t i = 0; i < json_array_size(t); i++) {
        const json_t *r = json_array_get(t, i);
        if (!strcmp(comet_util_jstr(r, "kind"), "dist_kernel")) {
            printf("%-12s %-16s %-38s %12.1f %9.2f GF %10s\n", "dist_kernel",
                comet_util_jstr(r, "op"), comet_util_jstr(r, "variant"),
                comet_util_jnum(r, "median_us"), comet_util_jnum(r, "gflops"), "-");
            continue;
        }
        printf("%-12s %-16s %-38s %12.2f %9.3f GB %10.0f\n", comet_util_jstr(r, "kind"),
            comet_util_jstr(r, "op"), comet_util_jstr(r, "variant"),
            comet_util_jnum(r, "latency_us"), comet_util_jnum(r, "busbw_GBs"),
            comet_util_jnum(r, "launches"));
    }
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

static int usage_err(const char *fmt, const char *arg)
{
    fprintf(stderr, "comet: bench collectives: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

/* Does alg belong to the --algs selection? */
static int alg_selected(const char *coll, const char *alg, int idx, const char *sel, int full)
{
    if (!sel) /* default: full = all; quick = auto, plus allreduce's forced ones */
        return full || idx == 0 || !strcmp(coll, "allreduce");
    if (!strcmp(sel, "all"))
        return 1;
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", sel);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, alg))
            return 1;
    return 0;
}

int comet_bench_coll_worker(const comet_bench_coll_job *job)
{
    if (!job || !job->coll || !job->alg || !job->sizes || !job->outpath || !job->run_id
        || !job->machine_id) {
        fprintf(stderr, "comet: bench collectives: worker: incomplete job\n");
        return 2;
    }
    return comet_bench__coll_worker(job);
}

void comet_bench_coll_defaults(comet_bench_coll_opts *o)
{
    memset(o, 0, sizeof *o);
    o->np = 2;
    o->gate_timeout_s = -1;
    o->out = "comet-out";
}

int comet_bench_coll_run(const comet_bench_coll_opts *o)
{
    int full = o->full, np = o->np, launches = o->launches, over = o->oversubscribe,
        json_out = o->json, stock = o->stock_malloc, loop = o->loop;
    double timeout = o->timeout_s, gate_timeout = o->gate_timeout_s;
    const char *sizes = o->sizes, *colls = o->colls, *algs_sel = o->algs, *largs = o->launcher_args,
               *out = o->out ? o->out : "comet-out";
    if (!o->spawn) {
        fprintf(stderr, "comet: bench collectives: no way to start ranks (spawn not set)\n");
        return 1;
    }
    if (timeout == 0)
        timeout = full ? 3600 : 300;
    if (!launches)
        launches = full ? 3 : 1;
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    if (np > ncores && !over && !largs) {
        fprintf(stderr,
            "comet: bench collectives: --np %d exceeds the %ld cores (MPICH busy-polls; "
            "use --oversubscribe to insist)\n",
            np, ncores);
        return 2;
    }

    /* sizes: normalised to bytes */
    char sizebuf[1024];
    if (!sizes) {
        size_t o = 0;
        long max = full ? 64L << 20 : 1L << 20;
        for (long b = 4; b <= max; b *= full ? 2 : 4) /* quick: 10 sizes, enough to hold
                                                         some out of a fit */
            o += (size_t)snprintf(sizebuf + o, sizeof sizebuf - o, "%s%ld", o ? "," : "", b);
    } else {
        char tmp[1024];
        size_t o = 0;
        int k = 0;
        snprintf(tmp, sizeof tmp, "%s", sizes);
        char *save = NULL;
        for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            uint64_t v;
            if (comet_util_parse_u64(t, &v) || v == 0 || v > (1ull << 30) || ++k > 64)
                return usage_err("--sizes '%s': bad size (1 B .. 1 GiB, at most 64 sizes)", t);
            o += (size_t)snprintf(
                sizebuf + o, sizeof sizebuf - o, "%s%llu", o ? "," : "", (unsigned long long)v);
        }
        if (!k)
            return usage_err("--sizes '%s': no size given", sizes);
    }
    /* collectives, and the algorithms asked for must exist somewhere */
    const char *list[16];
    int nc = 0;
    char cbuf[512];
    if (colls) {
        snprintf(cbuf, sizeof cbuf, "%s", colls);
        char *save = NULL;
        for (char *t = strtok_r(cbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (!comet_bench_coll_algorithms(t))
                return usage_err("--colls: unknown collective '%s' (see --help)", t);
            if (nc < 16)
                list[nc++] = t;
        }
        if (!nc)
            return usage_err("--colls '%s': none given", colls);
    } else {
        for (int i = 0; colls_all[i]; i++)
            list[nc++] = colls_all[i];
    }
    if (algs_sel && strcmp(algs_sel, "all")) {
        char abuf[512], *save = NULL;
        snprintf(abuf, sizeof abuf, "%s", algs_sel);
        for (char *t = strtok_r(abuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int known = 0;
            for (int i = 0; colls_all[i] && !known; i++) {
                const char *const *al = comet_bench_coll_algorithms(colls_all[i]);
                for (int a = 0; al[a] && !known; a++)
                    known = !strcmp(al[a], t);
            }
            if (!known)
                return usage_err("--algs: unknown MPICH algorithm '%s' (see --help)", t);
        }
    }
    /* ping-pong and the exchange need two ranks: asked for, that is a usage
     * error; by default ping-pong is left out (the exchange is only run when
     * asked for) */
    for (int i = 0; i < nc && np < 2; i++)
        if (!strcmp(list[i], "pingpong") || !strcmp(list[i], "exchange")) {
            if (colls)
                return usage_err("--colls %s needs --np 2 or more (got 1)", list[i]);
            memmove(list + i, list + i + 1, (size_t)(nc - i - 1) * sizeof *list);
            nc--;
            i--;
        }
    launch_cfg lc;
    memset(&lc, 0, sizeof lc);
    char lbuf[2048];
    if (largs) {
        snprintf(lbuf, sizeof lbuf, "%s", largs);
        lc.nlarg = comet_util_split_words(lbuf, lc.largv, 60);
        if (lc.nlarg < 0)
            return usage_err("--launcher-args '%s': unbalanced quote or too many words", largs);
    }

    /* the allocator setting is part of the environment every rank inherits
     * and the run record reports */
    if (!stock)
        setenv("GLIBC_TUNABLES", NO_TRIM_TUNABLES, 0);

    /* the run: one probe, one run id, one results file */
    char err[COMET_ERRLEN], rdir[4096], path[4400];
    comet_probe_machine m;
    comet_probe_opts po = { .skip_papi = 1 };
    comet_bench_run run;
    comet_results_writer w;
    int rc;
    memset(&w, 0, sizeof w);
    if (comet_probe_run(&po, &m, err, sizeof err) != 0) {
        fprintf(stderr, "comet: bench collectives: %s\n", err);
        return 1;
    }
    json_t *mj = comet_probe_to_json(&m);
    rc = comet_bench_run_init(&run, "collectives", mj, err, sizeof err);
    json_decref(mj); /* the run holds its own reference */
    if (rc != 0) {
        fprintf(stderr, "comet: bench collectives: %s\n", err);
        return 1;
    }
    snprintf(rdir, sizeof rdir, "%s/results", out);
    snprintf(path, sizeof path, "%s/collectives-%s.jsonl", rdir, run.run_id);
    char cmdline[4096];
    snprintf(cmdline, sizeof cmdline, "%s",
        o->command_line ? o->command_line : "comet bench collectives");
    json_t *settings = json_pack("{s:s,s:i,s:s,s:i,s:f,s:b,s:s,s:s}", "mpiexec", COMET_MPIEXEC,
        "np", np, "sizes", sizebuf, "launches", launches, "timeout_s", timeout, "full", full,
        "algs", algs_sel ? algs_sel : (full ? "all" : "auto+allreduce"), "launcher_args",
        largs ? largs : "");
    json_object_set_new(
        settings, "min_sample_s", o->min_sample_s > 0 ? json_real(o->min_sample_s) : json_null());
    json_object_set_new(settings, "gate_timeout_s",
        json_real(gate_timeout >= 0 ? gate_timeout
                : full              ? 10
                                    : 2));
    json_t *envs = json_object();
    extern char **environ;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "UCX_", 4) || !strncmp(*e, "MPIR_CVAR_", 10)
            || !strncmp(*e, "HYDRA_", 6)) {
            const char *eq = strchr(*e, '=');
            if (eq) {
                char key[256];
                snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
                json_object_set_new(envs, key, json_string(eq + 1));
            }
        }
    json_object_set_new(settings, "mpi_env", envs);
    json_object_set_new(settings, "malloc", json_string(stock ? "stock" : "no_trim"));
    json_t *rr = comet_bench_run_record(&run, cmdline, settings);
    rc = comet_results_writer_open(&w, path, err, sizeof err);
    if (rc == 0)
        rc = comet_results_writer_append(&w, rr, err, sizeof err);
    json_decref(rr);
    comet_results_writer_close(&w, NULL, 0);
    if (rc != 0) {
        fprintf(stderr, "comet: bench collectives: %s\n", err);
        comet_bench_run_fini(&run);
        return 1;
    }

    comet_util_install_signals();
    double t0 = comet_util_now();
    lc.np = np;
    lc.spawn = o->spawn;
    lc.spawn_ctx = o->spawn_ctx;
    lc.sizes = sizebuf;
    lc.out = path;
    lc.run_id = run.run_id;
    lc.machine_id = run.machine_id;
    lc.full = full;
    lc.loop = loop;
    lc.min_sample_s = o->min_sample_s;
    lc.deadline = t0 + timeout;
    comet_bench_gate_defaults(&lc.gate);
    lc.gate.timeout_s = gate_timeout >= 0 ? gate_timeout : full ? 10 : 2;

    /* the configurations; launches are interleaved across them (A0 B0 A1
     * B1 ...) so that a slow phase of the machine hits every configuration
     * alike instead of all launches of one */
    struct cfg {
        const char *coll, *alg;
        int unusable;
    } cfgs[128];
    int ncfg = 0;
    for (int i = 0; i < nc; i++) {
        const char *const *al = comet_bench_coll_algorithms(list[i]);
        for (int a = 0; al[a] && ncfg < 128; a++)
            if (alg_selected(list[i], al[a], a, algs_sel, full))
                cfgs[ncfg++] = (struct cfg) { list[i], al[a], 0 };
    }
    if (ncfg == 0) {
        comet_bench_run_fini(&run);
        return usage_err(
            "--algs '%s' selects no algorithm of the chosen collectives", algs_sel ? algs_sel : "");
    }
    comet_util_progress prog;
    comet_util_progress_start(&prog, "bench collectives", (size_t)ncfg * (size_t)launches);
    int failed = 0, unusable = 0, stop = 0;
    for (int l = 0; l < launches && !stop; l++)
        for (int i = 0; i < ncfg && !stop; i++) {
            const char *coll = cfgs[i].coll, *alg = cfgs[i].alg;
            char note[128];
            snprintf(note, sizeof note, "%s/%s #%d", coll, alg, l);
            if (cfgs[i].unusable) {
                comet_util_progress_step(&prog, 1, note);
                continue;
            }
            int r = launch(&lc, coll, alg, l);
            comet_util_progress_step(&prog, 1, note);
            if (r == L_UNUSABLE) {
                /* no size applies: the other launches would not either */
                comet_util_debug(
                    "bench collectives: %s/%s is not usable here (skipped)", coll, alg);
                cfgs[i].unusable = 1;
                unusable++;
                continue;
            }
            if (r == L_OK)
                continue;
            comet_util_progress_end(&prog);
            if (r == L_DEADLINE)
                fprintf(stderr,
                    "comet: bench collectives: %s/%s launch %d: the job exceeded its %.0f s "
                    "deadline (a rank hung or died); killed it\n",
                    coll, alg, l, timeout);
            else if (r == L_FINALIZE)
                fprintf(stderr,
                    "comet: bench collectives: %s/%s launch %d: MPI_Finalize did not return "
                    "within %.0f s on a rank (its records are kept); stopped\n",
                    coll, alg, l, comet_bench__finalize_grace_s());
            else if (r == L_INTERRUPTED)
                fprintf(stderr, "comet: bench collectives: interrupted during %s/%s\n", coll, alg);
            else if (WIFSIGNALED(lc.status))
                fprintf(stderr,
                    "comet: bench collectives: %s/%s launch %d: mpiexec killed by signal %d\n",
                    coll, alg, l, WTERMSIG(lc.status));
            else
                fprintf(stderr,
                    "comet: bench collectives: %s/%s launch %d: mpiexec exited with status %d "
                    "(a rank died or failed; see the messages above)\n",
                    coll, alg, l, WIFEXITED(lc.status) ? WEXITSTATUS(lc.status) : -1);
            failed = 1;
            stop = 1;
        }
    if (!stop)
        comet_util_progress_end(&prog);
    size_t nrec = 0, ninv = 0;
    err[0] = '\0';
    json_t *table = summarize(path, &nrec, &ninv, err, sizeof err);
    if (!table) {
        fprintf(stderr, "comet: bench collectives: %s\n", err);
        failed = 1;
    } else if (err[0])
        fprintf(stderr, "comet: bench collectives: %s\n", err);
    if (ninv) {
        fprintf(stderr,
            "comet: bench collectives: %zu of %zu results failed validation (see \"valid\" in "
            "%s)\n",
            ninv, nrec, path);
        failed = 1;
    }
    double el = comet_util_now() - t0;
    if (json_out) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:b,s:b,s:I,s:f,s:o}", "kind", "collectives",
            "results", path, "run_id", run.run_id, "records", (json_int_t)nrec, "invalid",
            (json_int_t)ninv, "interrupted", comet_util_interrupted != 0, "failed", failed,
            "unusable_algorithms", (json_int_t)unusable, "elapsed_s", el, "table",
            table ? json_incref(table) : json_array());
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(o);
    } else if (table && comet_util_verbosity >= 0) {
        print_table(table);
    }
    json_decref(table);
    comet_util_info("bench collectives: %zu records in %s (%.1f s)%s", nrec, path, el,
        failed ? "; partial" : "");
    comet_bench_run_fini(&run);
    return failed ? 1 : 0;
}
