/* The measuring harness: idle gate, warm-up, batched samples until the CI of
 * the median is tight enough, thread pinning and optional PAPI counters. */
#include "comet_bench.h"
#include "comet_probe.h"
#include "comet_util.h"

#include <errno.h>
#include <hwloc.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef COMET_HAVE_PAPI
#include <papi.h>
#endif

const char *comet_bench_version(void)
{
    return COMET_VERSION;
}

/* ------------------------------------------------------------------ */
/* Idle gate                                                          */
/* ------------------------------------------------------------------ */

int comet_bench_cpustat_parse(const char *text, comet_bench_cpustat *out, char *err, size_t errlen)
{
    int found = 0, lineno = 0;
    memset(out, 0, sizeof *out);
    if (!text)
        return comet_util_seterr(err, errlen, -EINVAL, "/proc/stat: no text");
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        lineno++;
        if (len > 3 && !strncmp(p, "cpu", 3)) {
            if (p[3] == ' ') {
                /* user nice system idle iowait irq softirq steal [guest guest_nice];
                 * guest time is already inside user, so it is not added again. */
                unsigned long long v[8] = { 0 };
                char buf[512];
                size_t l = len < sizeof buf - 1 ? len : sizeof buf - 1;
                memcpy(buf, p, l);
                buf[l] = 0;
                int k = sscanf(buf + 3, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                    &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
                if (k < 4)
                    return comet_util_seterr(err, errlen, -EINVAL,
                        "/proc/stat:%d: aggregate cpu line has %d fields, "
                        "need at least 4",
                        lineno, k < 0 ? 0 : k);
                out->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
                out->total = out->busy + v[3] + v[4];
                found = 1;
            } else if (p[3] >= '0' && p[3] <= '9') {
                out->ncpu++;
            }
        }
        p += len + (eol ? 1 : 0);
    }
    if (!found)
        return comet_util_seterr(err, errlen, -EINVAL, "/proc/stat: no aggregate 'cpu' line");
    if (out->ncpu == 0)
        out->ncpu = 1;
    return 0;
}

double comet_bench_cpustat_busy(const comet_bench_cpustat *a, const comet_bench_cpustat *b)
{
    if (b->total <= a->total || b->busy < a->busy)
        return -1;
    double f = (double)(b->busy - a->busy) / (double)(b->total - a->total);
    return f > 1 ? 1 : f;
}

void comet_bench_gate_defaults(comet_bench_gate *g)
{
    g->threshold = COMET_RESULTS_BUSY_MAX;
    g->window_s = 0.1;
    g->timeout_s = 10;
    g->budget_s = 0;
    g->path = "/proc/stat";
}

static int read_stat(const char *path, comet_bench_cpustat *st, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len;
    int rc = comet_util_read_file(path, &text, &len, err, errlen);
    if (rc)
        return rc;
    rc = comet_bench_cpustat_parse(text, st, err, errlen);
    free(text);
    return rc;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !comet_util_interrupted) { }
}

/* Others' busy fraction of all CPUs between two readings, without this
 * process's own CPU time (our lingering OpenMP/OpenBLAS spin-waits are not
 * "others"); -1 when unknown. */
static double others_busy(const comet_bench_cpustat *a, const comet_bench_cpustat *b, double self_s)
{
    double hz = (double)sysconf(_SC_CLK_TCK);
    double f = comet_bench_cpustat_busy(a, b);
    if (f >= 0 && hz > 0) {
        double total_s = (double)(b->total - a->total) / hz;
        if (total_s > 0)
            f -= self_s / total_s;
        if (f < 0)
            f = 0;
    }
    return f;
}

/* The previous sample set of this process: when it ended idle moments ago,
 * the machine was seen quiet during it, so the gate need not wait a window
 * again (back-to-back short sets would otherwise spend most of their time
 * in the gate). */
static double prev_end_t = -1, prev_during = -1;
/* every gate wait of this process, against the gate's budget */
static double waited_total = 0;

double comet_bench_gate_waited_total(void)
{
    return waited_total;
}

int comet_bench_gate_wait(
    const comet_bench_gate *g, comet_bench_load *load, char *err, size_t errlen)
{
    comet_bench_cpustat a, b;
    int rc;
    memset(load, 0, sizeof *load);
    if (g->timeout_s <= 0) {
        load->skipped = 1;
        load->busy_others = -1;
        return 0;
    }
    const char *path = g->path ? g->path : "/proc/stat";
    double t0 = comet_util_now();
    if (!strcmp(path, "/proc/stat") && prev_end_t > 0 && t0 - prev_end_t < 0.5 && prev_during >= 0
        && prev_during < g->threshold) {
        load->busy_others = prev_during;
        load->idle = 1;
        load->reused = 1;
        return 0;
    }
    /* what this wait may take: its timeout, within what is left of the budget */
    double limit = g->timeout_s;
    if (g->budget_s > 0 && g->budget_s - waited_total < limit) {
        limit = g->budget_s - waited_total;
        if (limit <= 0) {
            limit = 0;
            load->spent = 1;
        }
    }
    for (;;) {
        double self0 = process_cpu_s();
        if ((rc = read_stat(path, &a, err, errlen)))
            break;
        sleep_s(g->window_s);
        if ((rc = read_stat(path, &b, err, errlen)))
            break;
        double f = others_busy(&a, &b, process_cpu_s() - self0);
        load->busy_others = f;
        load->waited_s = comet_util_now() - t0;
        if (f >= 0 && f < g->threshold) {
            load->idle = 1;
            break;
        }
        if (load->waited_s >= limit || comet_util_interrupted) {
            load->idle = 0;
            break;
        }
    }
    waited_total += comet_util_now() - t0;
    return rc;
}

/* ------------------------------------------------------------------ */
/* Sampling                                                           */
/* ------------------------------------------------------------------ */

void comet_bench_config_defaults(comet_bench_config *c)
{
    memset(c, 0, sizeof *c);
    c->warmup_s = 0.05;
    c->min_sample_s = 0.002;
    c->min_samples = 10;
    c->max_samples = 200;
    c->target_ci = 0.02;
    c->time_cap_s = 2.0;
    comet_bench_gate_defaults(&c->gate);
    c->stop_on_signal = 1;
}

void comet_bench_result_free(comet_bench_result *res)
{
    if (!res)
        return;
    free(res->samples);
    res->samples = NULL;
    res->n = 0;
}

/* 2^16 x 4 multiplies: ~0.2 ms at 4 GHz, twice per sample set */
#define CLOCK_PROBE_ITERS ((uint64_t)1 << 16)

double comet_bench_core_to_core_ns(int rounds, int sets)
{
    double t[16];
    size_t nt = 0;
    int ok = 1;
    if (rounds < 1 || sets < 1)
        return -1;
    if (sets > 16)
        sets = 16;
    /* the line both threads spin on; thread 0 writes odd values, thread 1
     * even ones, each waiting for the other's. Two threads on one CPU hand
     * over once per time slice: a set stops after 20 ms whatever it did. */
    static _Alignas(64) volatile long line;
    static _Alignas(64) volatile int stop;
    for (int s = 0; s < sets && ok; s++) {
        line = 0;
        stop = 0;
        double dt = -1;
        long done = 0;
#pragma omp parallel num_threads(2) shared(ok, dt, done)
        {
            if (omp_get_num_threads() < 2) {
#pragma omp single
                ok = 0;
            } else {
                const int id = omp_get_thread_num();
#pragma omp barrier
                const double t0 = comet_util_now();
                long r = 0;
                for (; r < rounds && !stop; r++) {
                    if (id == 0) {
                        while (line != 2 * r && !stop) { }
                        line = 2 * r + 1;
                        if ((r & 63) == 63 && comet_util_now() - t0 > 0.02)
                            stop = 1;
                    } else {
                        while (line != 2 * r + 1 && !stop) { }
                        line = 2 * r + 2;
                    }
                }
                if (id == 0) {
                    dt = comet_util_now() - t0;
                    done = r;
                }
            }
        }
        if (done > 0)
            t[nt++] = dt / (2.0 * (double)done) * 1e9; /* two hand-overs a round */
    }
    comet_bench_stats st;
    if (!ok || comet_bench_stats_compute(t, nt, &st) != 0)
        return -1;
    return st.median;
}

int comet_bench_measure(const comet_bench_config *cfg, comet_bench_fn fn, void *ctx,
    comet_bench_result *res, char *err, size_t errlen)
{
    int rc = 0;
    memset(res, 0, sizeof *res);
    if (!cfg || !fn || cfg->max_samples == 0 || cfg->min_sample_s < 0)
        return comet_util_seterr(err, errlen, -EINVAL, "bench: bad sampling settings");
    double t_begin = comet_util_now();
    if ((rc = comet_bench_gate_wait(&cfg->gate, &res->load, err, errlen)))
        goto fail;
    /* others' load while this set runs, recorded beside the gate's figure */
    const char *stat_path = cfg->gate.path ? cfg->gate.path : "/proc/stat";
    comet_bench_cpustat st0, st1;
    char serr[8];
    int have_st0 = read_stat(stat_path, &st0, serr, sizeof serr) == 0;
    double self0 = process_cpu_s();
    res->load.busy_during = -1;
    double t_start = comet_util_now();

    /* Warm-up: at least one call; batches double so cheap calls do not pay
     * the timer on every call. The last batch gives the per-call estimate. */
    /* A settled set whose earlier set's reps are known warms up with one
     * batch of them: one sample's worth of the very calls, which is what
     * the caches and the clock need, and its per-call time sizes the
     * samples; the time floor is for calls met for the first time (the
     * quick kernels set spent 10-20 ms a set on it, 4-8 s in all). */
    const int one_batch = cfg->settled && cfg->settled_reps > 0;
    size_t r = one_batch ? cfg->settled_reps : 1, batches = 0;
    double per_call = 0;
    for (;; batches++) {
        double t0 = comet_util_now();
        if ((rc = fn(ctx, r))) {
            comet_util_seterr(
                err, errlen, rc, "bench: measured call failed: %s", comet_util_strerror(rc));
            goto fail;
        }
        double dt = comet_util_now() - t0;
        per_call = dt / (double)r;
        /* At least three batches: the first call pays page faults and
         * thread start-up, the next ones settle caches and clocks; a call
         * of 10 ms or more is settled after two, a settled call (its
         * buffers faulted in by an earlier set) after one. */
        size_t need = cfg->settled ? 1 : (dt >= 0.01 ? 2 : 3);
        if (one_batch || (batches + 1 >= need && comet_util_now() - t_start >= cfg->warmup_s))
            break;
        if (dt < cfg->min_sample_s)
            r *= 2;
    }
    if (per_call <= 0)
        per_call = 1e-9;
    /* the clock after warm-up (the idle gate slept, so the core may have
     * clocked down before it) and again after the samples */
    const double clock0 = comet_probe_clock_mhz(CLOCK_PROBE_ITERS);
    double want = ceil(cfg->min_sample_s / per_call);
    res->reps = want < 1 ? 1 : (want > 1e9 ? (size_t)1e9 : (size_t)want);

    /* Expensive calls: do not let min_samples blow the time cap by far,
     * but keep at least 5 samples for a median. */
    size_t min_n = cfg->min_samples ? cfg->min_samples : 1;
    double sample_s = per_call * (double)res->reps;
    if (cfg->time_cap_s > 0 && sample_s * (double)min_n > cfg->time_cap_s) {
        size_t fit = (size_t)(cfg->time_cap_s / sample_s);
        min_n = fit < 5 ? 5 : fit;
        if (min_n > cfg->min_samples && cfg->min_samples)
            min_n = cfg->min_samples;
    }
    if (min_n > cfg->max_samples)
        min_n = cfg->max_samples;

    res->samples = malloc(cfg->max_samples * sizeof *res->samples);
    if (!res->samples) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
        goto fail;
    }
    if (cfg->counters)
        comet_bench_counters_start(cfg->counters);
    double t_samp = comet_util_now();
    while (res->n < cfg->max_samples) {
        double t0 = comet_util_now();
        if ((rc = fn(ctx, res->reps))) {
            comet_util_seterr(
                err, errlen, rc, "bench: measured call failed: %s", comet_util_strerror(rc));
            goto fail;
        }
        double t1 = comet_util_now();
        res->samples[res->n++] = (t1 - t0) / (double)res->reps;
        if (res->n < min_n)
            continue;
        if ((rc = comet_bench_stats_compute(res->samples, res->n, &res->stats))) {
            comet_util_seterr(err, errlen, rc, "bench: statistics failed");
            goto fail;
        }
        double half = 0.5 * (res->stats.ci_hi - res->stats.ci_lo);
        if (res->stats.median > 0 && half / res->stats.median <= cfg->target_ci
            && res->stats.ci_level >= 0.95) {
            res->converged = 1;
            break;
        }
        if (cfg->time_cap_s > 0 && t1 - t_samp >= cfg->time_cap_s)
            break;
        if (cfg->stop_on_signal && comet_util_interrupted)
            break;
    }
    if (cfg->counters)
        comet_bench_counters_stop(cfg->counters);
    res->calls = (double)res->n * (double)res->reps;
    {
        const double clock1 = comet_probe_clock_mhz(CLOCK_PROBE_ITERS);
        res->clock_mhz = clock0 > 0 && clock1 > 0 ? 0.5 * (clock0 + clock1) : fmax(clock0, clock1);
    }
    if ((rc = comet_bench_stats_compute(res->samples, res->n, &res->stats))) {
        comet_util_seterr(err, errlen, rc, "bench: statistics failed");
        goto fail;
    }
    res->elapsed_s = comet_util_now() - t_begin;
    if (have_st0 && read_stat(stat_path, &st1, serr, sizeof serr) == 0)
        res->load.busy_during = others_busy(&st0, &st1, process_cpu_s() - self0);
    prev_end_t = comet_util_now();
    prev_during = res->load.busy_during;
    return 0;
fail:
    if (cfg && cfg->counters)
        comet_bench_counters_stop(cfg->counters);
    comet_bench_result_free(res);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Pinning                                                            */
/* ------------------------------------------------------------------ */

static hwloc_topology_t topo;
static int topo_state; /* 0 not loaded, 1 loaded, -1 failed */
static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;

static hwloc_topology_t get_topo(void)
{
    pthread_mutex_lock(&topo_lock);
    if (topo_state == 0) {
        if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
            topo_state = 1;
        } else {
            topo_state = -1;
        }
    }
    pthread_mutex_unlock(&topo_lock);
    return topo_state == 1 ? topo : NULL;
}

int comet_bench_ncores(void)
{
    hwloc_topology_t t = get_topo();
    int n = t ? hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) : 0;
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    return n;
}

int comet_bench_pin(int nthreads, char *err, size_t errlen)
{
    hwloc_topology_t t = get_topo();
    if (!t)
        return comet_util_seterr(err, errlen, -ENOSYS, "pin: hwloc topology could not be loaded");
    int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    if (ncores <= 0)
        return comet_util_seterr(err, errlen, -ENOSYS, "pin: hwloc sees no cores");
    int failed = 0, failed_errno = 0;
    if (nthreads <= 0) {
        /* Unbind: every thread of the pool and the caller may use the machine. */
        hwloc_const_cpuset_t all = hwloc_topology_get_complete_cpuset(t);
#pragma omp parallel num_threads(comet_bench_ncores())
        {
            if (hwloc_set_cpubind(t, all, HWLOC_CPUBIND_THREAD)) {
#pragma omp atomic write
                failed = 1;
            }
        }
        return failed ? comet_util_seterr(err, errlen, -EPERM, "pin: unbinding failed") : 0;
    }
#pragma omp parallel num_threads(nthreads)
    {
        int i = omp_get_thread_num() % ncores;
        hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)i);
        if (core) {
            /* One PU of the core, so SMT siblings do not swap the thread. */
            hwloc_bitmap_t set = hwloc_bitmap_dup(core->cpuset);
            if (set) {
                hwloc_bitmap_singlify(set);
                if (hwloc_set_cpubind(t, set, HWLOC_CPUBIND_THREAD)) {
                    int e = errno;
#pragma omp critical(comet_bench_pin)
                    {
                        failed = 1;
                        failed_errno = e;
                    }
                }
                hwloc_bitmap_free(set);
            }
        }
    }
    if (failed)
        return comet_util_seterr(err, errlen, -(failed_errno ? failed_errno : EPERM),
            "pin: hwloc_set_cpubind failed: %s", strerror(failed_errno));
    return 0;
}

/* ------------------------------------------------------------------ */
/* PAPI counters                                                      */
/* ------------------------------------------------------------------ */

void comet_bench_counters_init(comet_bench_counters *c, const char *const *events)
{
    static const char *const dflt[] = { "PAPI_TOT_CYC", "PAPI_TOT_INS", NULL };
    memset(c, 0, sizeof *c);
#ifdef COMET_HAVE_PAPI
    c->eventset = PAPI_NULL;
    if (!events)
        events = dflt;
    if (!PAPI_is_initialized()) {
        int v = PAPI_library_init(PAPI_VER_CURRENT);
        if (v != PAPI_VER_CURRENT) {
            snprintf(c->reason, sizeof c->reason, "PAPI_library_init: %s",
                v < 0 ? PAPI_strerror(v) : "version mismatch");
            return;
        }
    }
    int rc = PAPI_create_eventset(&c->eventset);
    if (rc != PAPI_OK) {
        snprintf(c->reason, sizeof c->reason, "PAPI_create_eventset: %s", PAPI_strerror(rc));
        c->eventset = PAPI_NULL;
        return;
    }
    for (size_t i = 0; events[i] && c->nevents < 4; i++) {
        rc = PAPI_add_named_event(c->eventset, events[i]);
        if (rc != PAPI_OK) {
            snprintf(c->reason, sizeof c->reason, "PAPI_add_event(%s): %s (%d)", events[i],
                PAPI_strerror(rc), rc);
            goto disable;
        }
        snprintf(c->names[c->nevents++], sizeof c->names[0], "%s", events[i]);
    }
    /* Listing is not counting (see reference/measurement.md): start once. */
    rc = PAPI_start(c->eventset);
    if (rc != PAPI_OK) {
        snprintf(c->reason, sizeof c->reason, "PAPI_start: %s (%d)", PAPI_strerror(rc), rc);
        goto disable;
    }
    PAPI_stop(c->eventset, c->values);
    c->enabled = 1;
    return;
disable:
    PAPI_cleanup_eventset(c->eventset);
    PAPI_destroy_eventset(&c->eventset);
    c->eventset = PAPI_NULL;
    c->nevents = 0;
#else
    (void)events;
    (void)dflt;
    snprintf(c->reason, sizeof c->reason, "built without PAPI (COMET_PAPI=OFF)");
#endif
}

void comet_bench_counters_start(comet_bench_counters *c)
{
#ifdef COMET_HAVE_PAPI
    if (c->enabled && PAPI_start(c->eventset) != PAPI_OK) {
        c->enabled = 0;
        snprintf(c->reason, sizeof c->reason, "PAPI_start failed during the run");
    }
#else
    (void)c;
#endif
}

void comet_bench_counters_stop(comet_bench_counters *c)
{
#ifdef COMET_HAVE_PAPI
    if (c->enabled && PAPI_stop(c->eventset, c->values) != PAPI_OK) {
        c->enabled = 0;
        snprintf(c->reason, sizeof c->reason, "PAPI_stop failed during the run");
    }
#else
    (void)c;
#endif
}

void comet_bench_counters_fini(comet_bench_counters *c)
{
#ifdef COMET_HAVE_PAPI
    if (c->eventset != PAPI_NULL && c->nevents) {
        PAPI_cleanup_eventset(c->eventset);
        PAPI_destroy_eventset(&c->eventset);
    }
#endif
    c->enabled = 0;
    c->nevents = 0;
}
