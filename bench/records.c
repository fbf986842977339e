/* Records: what the benches measure, built into records of the results
 * library's schema (comet_results.h: the field names, the check, the writer
 * and the reader live there), and this machine's identity. Format:
 * docs/FORMATS.md. */
#include "comet_bench.h"
#include "comet_probe.h"
#include "comet_results.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Building                                                           */
/* ------------------------------------------------------------------ */

int comet_bench_run_init(
    comet_bench_run *run, const char *kind, json_t *machine, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    if (!json_is_object(machine))
        return comet_util_seterr(
            err, errlen, -EINVAL, "bench: machine description is not an object");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(run->run_id, sizeof run->run_id, "%s-%ld", ts, (long)getpid());
    snprintf(run->kind, sizeof run->kind, "%s", kind ? kind : "bench");
    comet_results_machine m;
    comet_results_machine_from_json(machine, &m);
    snprintf(run->machine_id, sizeof run->machine_id, "%s", m.id[0] ? m.id : "unknown");
    run->machine = json_incref(machine);
    return 0;
}

void comet_bench_run_fini(comet_bench_run *run)
{
    if (run && run->machine) {
        json_decref(run->machine);
        run->machine = NULL;
    }
}

json_t *comet_bench_run_record(const comet_bench_run *run, const char *cmdline, json_t *extra)
{
    char t[32];
    const char *tun = getenv("GLIBC_TUNABLES");
    const char *obt = getenv("OPENBLAS_NUM_THREADS");
    const char *omp = getenv("OMP_NUM_THREADS");
    json_t *env = json_pack("{s:s?,s:s?,s:s?,s:s}", "glibc_tunables", tun, "openblas_num_threads",
        obt, "omp_num_threads", omp, "timer", "CLOCK_MONOTONIC");
    json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s},s:O,s:o}", "schema",
        COMET_BENCH_SCHEMA, "kind", "run", "run_id", run->run_id, "bench", run->kind, "time",
        comet_util_iso_time(t, sizeof t), "cmdline", cmdline ? cmdline : "", "comet", "version",
        COMET_VERSION, "commit", comet_util_git_commit(), "machine", run->machine, "env",
        env ? env : json_object());
    if (rec && extra)
        json_object_set_new(rec, "settings", extra);
    else if (extra)
        json_decref(extra);
    return rec;
}

json_t *comet_bench_record_new(const comet_bench_run *run, const char *kind, const char *op,
    const char *variant, json_t *shape, int threads)
{
    return comet_results_record_new(
        run->run_id, run->machine_id, kind, op, variant, shape, threads);
}

/* The harness's statistics as the results library writes them. */
json_t *comet_bench_stats_json(const comet_bench_stats *s, const double *samples, size_t n)
{
    comet_results_stats rs = { .n = s->n,
        .median_s = s->median,
        .ci_lo_s = s->ci_lo,
        .ci_hi_s = s->ci_hi,
        .ci_level = s->ci_level,
        .min_s = s->min,
        .max_s = s->max,
        .mean_s = s->mean,
        .p90_s = s->p90,
        .samples_s = (double *)samples,
        .nsamples = n };
    return comet_results_stats_json(&rs);
}

json_t *comet_bench_load_json(const comet_bench_load *l)
{
    comet_results_gate rl = { .busy_others = l->busy_others >= 0 ? l->busy_others : NAN,
        .busy_during = l->busy_during >= 0 ? l->busy_during : NAN,
        .waited_s = l->waited_s,
        .gate = l->skipped ? "off"
            : l->reused    ? "idle (previous set)"
            : l->idle      ? "idle"
            : l->spent     ? "budget spent"
                           : "timeout" };
    return comet_results_gate_json(&rl);
}

int comet_bench_record_set_result(
    json_t *rec, const comet_bench_result *r, double flops, double bytes)
{
    json_t *st = comet_bench_stats_json(&r->stats, r->samples, r->n);
    json_t *ld = comet_bench_load_json(&r->load);
    if (!st || !ld) {
        json_decref(st);
        json_decref(ld);
        return -ENOMEM;
    }
    json_object_set_new(rec, "stats", st);
    json_object_set_new(rec, "reps", json_integer((json_int_t)r->reps));
    json_object_set_new(rec, "converged", json_boolean(r->converged));
    json_object_set_new(rec, "load", ld);
    double med = r->stats.median;
    if (r->clock_mhz > 0) {
        json_object_set_new(rec, "clock_mhz", json_real(r->clock_mhz));
        if (med > 0)
            json_object_set_new(rec, "median_cycles", json_real(med * r->clock_mhz * 1e6));
    }
    if (flops > 0) {
        json_object_set_new(rec, "flops", json_real(flops));
        if (med > 0)
            json_object_set_new(rec, "gflops", json_real(flops / med / 1e9));
    }
    if (bytes > 0) {
        json_object_set_new(rec, "bytes", json_real(bytes));
        if (med > 0)
            json_object_set_new(rec, "gbs", json_real(bytes / med / 1e9));
    }
    return 0;
}

int comet_bench_record_set_counters(json_t *rec, const comet_bench_counters *c, double calls)
{
    if (!c->enabled) {
        json_object_set_new(rec, "counters_disabled", json_string(c->reason));
        return 0;
    }
    json_t *o = json_object();
    if (!o)
        return -ENOMEM;
    for (size_t i = 0; i < c->nevents; i++)
        json_object_set_new(
            o, c->names[i], json_real(calls > 0 ? (double)c->values[i] / calls : 0));
    json_object_set_new(rec, "counters", o);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Machine identity                                                   */
/* ------------------------------------------------------------------ */

int comet_bench_this_machine(json_t **machine, char *err, size_t errlen)
{
    comet_probe_opts po;
    comet_probe_machine *m = calloc(1, sizeof *m);
    int rc;
    *machine = NULL;
    memset(&po, 0, sizeof po);
    po.skip_papi = 1;
    po.skip_mpi = 1;
    po.skip_clock = 1; /* the clock is no part of the identity */
    if (!m)
        return comet_util_seterr(err, errlen, -ENOMEM, "probe: out of memory");
    if ((rc = comet_probe_run(&po, m, err, errlen)) == 0 && !(*machine = comet_probe_to_json(m)))
        rc = comet_util_seterr(err, errlen, -ENOMEM, "probe: out of memory");
    free(m);
    return rc;
}
