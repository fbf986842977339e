/* A bench run: results file with its run record, progress, pinning,
 * interruption and the summary the CLI prints. */
#include "bench_internal.h"
#include "comet_probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void comet_bench_opts_defaults(comet_bench_opts *o, int full)
{
    memset(o, 0, sizeof *o);
    o->full = full;
    o->out_dir = "comet-out";
    o->pin = 1;
    o->passes = 3; /* a sustained slow state in one pass moves a median of three passes little */
    comet_bench_config_defaults(&o->cfg);
    if (full) {
        o->cfg.time_cap_s = 5.0;
        o->cfg.max_samples = 500;
    } else {
        /* Quick: short sets, a looser target; still >= 10 samples. */
        o->cfg.warmup_s = 0.02;
        o->cfg.min_sample_s = 0.005;
        /* per set 0.1 s in each of the 3 passes; the 108 sgemm-grid sets
         * 0.03 s each, shared by the passes: the quick kernels set in ~30 s */
        o->cfg.time_cap_s = 0.3;
        o->grid_time_cap_s = 0.03;
        o->cfg.target_ci = 0.02;
        o->cfg.gate.timeout_s = 2.0;
        o->cfg.gate.window_s = 0.05;
        /* a busy machine stays busy: after 10 s of waiting in all, the
         * quick set measures what it finds (the load is in each record)
         * rather than 2 s more before each of its sets */
        o->cfg.gate.budget_s = 10.0;
    }
}

static json_t *settings_json(const comet_bench_opts *o)
{
    const comet_bench_config *c = &o->cfg;
    return json_pack("{s:s,s:s?,s:i,s:i,s:b,s:{s:f,s:f,s:I,s:I,s:f,s:f},s:{s:f,s:f,s:f,s:f}}",
        "set", o->full ? "full" : "quick", "shapes", o->shapes_path, "threads", o->threads,
        "passes", o->passes, "pin", o->pin, "sampling", "warmup_s", c->warmup_s, "min_sample_s",
        c->min_sample_s, "min_samples", (json_int_t)c->min_samples, "max_samples",
        (json_int_t)c->max_samples, "target_ci", c->target_ci, "time_cap_s", c->time_cap_s, "gate",
        "threshold", c->gate.threshold, "window_s", c->gate.window_s, "timeout_s",
        c->gate.timeout_s, "budget_s", c->gate.budget_s);
}

int bench_session_open(bench_session *s, const comet_bench_opts *o, const char *kind,
    json_t *machine, comet_bench_summary *sum, char *err, size_t errlen)
{
    int rc;
    memset(s, 0, sizeof *s);
    memset(sum, 0, sizeof *sum);
    s->w.fd = -1;
    s->o = o;
    s->sum = sum;
    s->t0 = comet_util_now();
    if ((rc = comet_bench_run_init(&s->run, kind, machine, err, errlen)))
        return rc;
    comet_probe_machine m;
    char why[COMET_ERRLEN];
    if (comet_probe_from_json(machine, &m, why, sizeof why) == 0) {
        s->l1 = comet_probe_cache_size(&m, 1);
        s->l2 = comet_probe_cache_size(&m, 2);
        s->llc = comet_probe_llc_size(&m);
    }
    snprintf(sum->results_path, sizeof sum->results_path, "%s/results/%s-%s.jsonl",
        o->out_dir ? o->out_dir : "comet-out", kind, s->run.run_id);
    if ((rc = comet_results_writer_open(&s->w, sum->results_path, err, errlen)))
        goto fail;
    json_t *rr = comet_bench_run_record(&s->run, o->cmdline, settings_json(o));
    if (!rr) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
        goto fail;
    }
    rc = comet_results_writer_append(&s->w, rr, err, errlen);
    json_decref(rr);
    if (rc)
        goto fail;
    comet_bench_counters_init(&s->counters, NULL);
    /* The sampling loop counts around each sample set when PAPI works. */
    s->cfg = o->cfg;
    s->cfg.counters = &s->counters;
    if (!s->counters.enabled)
        comet_util_debug("bench: counters disabled: %s", s->counters.reason);
    return 0;
fail:
    comet_results_writer_close(&s->w, NULL, 0);
    comet_bench_run_fini(&s->run);
    return rc;
}

int bench_session_write(bench_session *s, json_t *rec, int valid, char *err, size_t errlen)
{
    if (s->o->pin)
        json_object_set_new(rec, "pinned", json_boolean(s->pinned));
    int rc = comet_results_writer_append(&s->w, rec, err, errlen);
    if (rc)
        return rc;
    s->sum->records++;
    if (!valid)
        s->sum->invalid++;
    return 0;
}

void bench_session_progress(bench_session *s, const char *label, size_t total)
{
    comet_util_progress_start(&s->prog, label, total);
    s->progress_on = 1;
}

void bench_session_step(bench_session *s, const char *note)
{
    if (s->progress_on)
        comet_util_progress_step(&s->prog, 1, note);
    if (comet_util_interrupted)
        s->stop = 1;
}

void bench_session_pin(bench_session *s, int T)
{
    char why[COMET_ERRLEN];
    if (!s->o->pin) {
        s->pinned = 0;
        return;
    }
    if (comet_bench_pin(T, why, sizeof why)) {
        s->pinned = 0;
        if (!s->pin_warned)
            comet_util_info("bench: running unpinned: %s", why);
        s->pin_warned = 1;
        return;
    }
    s->pinned = 1;
}

static int export_csv(const char *jsonl, const char *csv, char *err, size_t errlen)
{
    comet_results_set set = { 0 };
    char warn[COMET_ERRLEN];
    int rc = comet_results_load(jsonl, NULL, &set, NULL, warn, sizeof warn);
    if (rc) {
        comet_util_seterr(err, errlen, rc, "%s", warn);
        return rc;
    }
    rc = comet_results_export_csv(set.recs, set.n, csv, err, errlen);
    comet_results_set_free(&set);
    return rc;
}

int bench_session_close(bench_session *s, json_t *highlights, char *err, size_t errlen)
{
    int rc;
    if (s->progress_on)
        comet_util_progress_end(&s->prog);
    s->progress_on = 0;
    comet_bench_counters_fini(&s->counters);
    if (s->o->pin)
        comet_bench_pin(0, NULL, 0);
    rc = comet_results_writer_close(&s->w, err, errlen);
    s->sum->interrupted = s->stop || comet_util_interrupted;
    s->sum->elapsed_s = comet_util_now() - s->t0;
    s->sum->highlights = highlights;
    if (!rc && s->o->csv_path)
        rc = export_csv(s->sum->results_path, s->o->csv_path, err, errlen);
    comet_bench_run_fini(&s->run);
    return rc;
}

void bench_session_abort(bench_session *s)
{
    if (s->progress_on)
        comet_util_progress_end(&s->prog);
    s->progress_on = 0;
    comet_bench_counters_fini(&s->counters);
    if (s->o && s->o->pin)
        comet_bench_pin(0, NULL, 0);
    comet_results_writer_close(&s->w, NULL, 0);
    s->sum->elapsed_s = comet_util_now() - s->t0;
    comet_bench_run_fini(&s->run);
}
