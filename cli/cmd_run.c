/* comet run: the main job. probe -> bench (memory, kernels, collectives) ->
 * calibrate -> validate -> predict (this machine, a scaled cluster of it,
 * COMET edge and cloud) -> report. The measuring stages are this
 * executable's own subcommands in child processes (their progress passes
 * through on stderr), so a failing stage is reported and the stages that
 * can still run do. Every stage's outcome is kept in DIR/run.json, which
 * the report shows. */
#include "cli.h"

#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Results older than this are measured again. */
#define FRESH_MAX_AGE_S (24.0 * 3600.0)

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet run [--quick|--full] [--out DIR] [--np N] [--fresh]\n"
        "                 [--scale-cores N] [--scale-nodes M]\n"
        "\n"
        "The main job, from a fresh machine to a report: probe this machine, measure\n"
        "memory, kernels and MPI collectives, calibrate the profile, validate the model\n"
        "on the measurements, predict this machine, a scaled cluster of it and the COMET\n"
        "edge and cloud accelerators for GEMM-Softmax, GEMM-LayerNorm and self-attention\n"
        "(best fused and unfused mappings), and write DIR/report/index.html and\n"
        "summary.md (plots as SVG with their data as CSV and JSON).\n"
        "\n"
        "Resumable: a bench whose results in DIR/results are complete, from this machine\n"
        "and younger than 24 h is not measured again (--fresh measures everything again;\n"
        "replaced results move to DIR/archive/). A failed stage is reported, the later\n"
        "stages that can still run do, and the exit status is then 1.\n"
        "\n"
        "options:\n"
        "  --quick | --full   bench sets (default --quick: a few minutes at most)\n"
        "  --out DIR          output folder (default %s)\n"
        "  --np N             MPI ranks for the collectives bench (default 2)\n"
        "  --scale-cores N    cores per node of the scaled system (default 32)\n"
        "  --scale-nodes M    nodes of the scaled system (default 8)\n"
        "  --fresh            measure again even when fresh results exist\n"
        "  -q, -v, -h         quiet, verbose, this help\n",
        COMET_CLI_DEFAULT_OUT);
}

typedef struct runlog {
    json_t *root, *stages;
    char path[4200];
    double t0;
} runlog;

static void log_save(runlog *L)
{
    char now[40];
    json_object_set_new(L->root, "updated", json_string(comet_util_iso_time(now, sizeof now)));
    json_object_set_new(L->root, "seconds", json_real(comet_util_now() - L->t0));
    char *t = json_dumps(L->root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    char err[COMET_ERRLEN];
    if (!t || comet_util_write_atomic(L->path, t, strlen(t), err, sizeof err) != 0)
        comet_cli_error("run", "cannot write the run log: %s", t ? err : "out of memory");
    free(t);
}

enum { N_STAGES = 10 };
static const int n_stages = N_STAGES;
static int cur_stage = 0;
/* The stages in order, as run.json names them. */
static const char *const stage_names[N_STAGES]
    = { "probe", "bench memory", "bench kernels", "bench collectives", "bench llm", "calibrate",
          "validate", "validate --system", "predict", "report" };
/* The last run of the same set in this folder: each stage's seconds (-1:
 * unknown), for the ETA; the run's start and the finished stages' seconds. */
static double prev_s[N_STAGES] = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
static double run_t0, done_now, done_prev;

/* Reads DIR/run.json of an earlier run of the same set (quick or full)
 * before this run replaces it. */
static void load_prev(const char *path, int full)
{
    json_t *r = json_load_file(path, 0, NULL);
    const json_t *st = json_object_get(r, "stages");
    if (r && json_is_true(json_object_get(json_object_get(r, "settings"), "quick")) == !full) {
        size_t i;
        const json_t *x;
        json_array_foreach(st, i, x)
        {
            const char *nm = json_string_value(json_object_get(x, "name"));
            const char *status = json_string_value(json_object_get(x, "status"));
            for (int k = 0; nm && status && k < 8; k++)
                if (!strcmp(nm, stage_names[k]) && !strcmp(status, "ok"))
                    prev_s[k] = json_number_value(json_object_get(x, "seconds"));
        }
    }
    json_decref(r);
}

static double stage_begin(const char *what)
{
    const double now = comet_util_now();
    cur_stage++;
    /* ETA: what the stages left took in the last run here, scaled by how
     * this run's finished stages compare with that run's (a busier machine
     * now); nothing when no earlier run of this set is known */
    double left = 0;
    int known = 1;
    for (int k = cur_stage - 1; k < n_stages; k++)
        if (prev_s[k] >= 0)
            left += prev_s[k];
        else
            known = 0;
    const double scale
        = done_prev > 1 && done_now > 0 ? fmin(fmax(done_now / done_prev, 0.25), 8) : 1;
    char eta[96] = "";
    if (known)
        snprintf(eta, sizeof eta, ", ETA %.0f s (the last run here, scaled)", left * scale);
    comet_util_info("\n== comet run [%d/%d] %s (%.0f s elapsed%s)", cur_stage, n_stages, what,
        now - run_t0, eta);
    return now;
}

/* Records a stage's outcome: status ok | reused | failed | skipped. */
static void stage_end(runlog *L, const char *name, const char *status, double t0, const char *fmt,
    ...) __attribute__((format(printf, 5, 6)));
static void stage_end(
    runlog *L, const char *name, const char *status, double t0, const char *fmt, ...)
{
    char note[COMET_ERRLEN + 64] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(note, sizeof note, fmt, ap);
        va_end(ap);
    }
    json_array_append_new(L->stages,
        json_pack("{s:s,s:s,s:f,s:s}", "name", name, "status", status, "seconds",
            comet_util_now() - t0, "note", note));
    for (int k = 0; k < n_stages; k++)
        if (!strcmp(name, stage_names[k]) && prev_s[k] >= 0 && !strcmp(status, "ok")) {
            done_now += comet_util_now() - t0;
            done_prev += prev_s[k];
        }
    log_save(L);
    if (!strcmp(status, "failed"))
        comet_cli_error("run", "%s failed%s%s", name, note[0] ? ": " : "", note);
    else
        comet_util_info("run: %s %s in %.1f s%s%s", name, status, comet_util_now() - t0,
            note[0] ? ": " : "", note);
}

/* The probe's machine id from DIR/machine.json. */
static int machine_id(const char *dir, char *id, size_t len, char *err, size_t errlen)
{
    char path[4200];
    json_error_t je;
    snprintf(path, sizeof path, "%s/machine.json", dir);
    json_t *m = json_load_file(path, 0, &je);
    const char *s = json_string_value(json_object_get(m, "id"));
    int rc = 0;
    if (!s || !*s)
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "%s: no machine id (%s)", path, m ? "field missing" : je.text);
    else
        snprintf(id, len, "%s", s);
    json_decref(m);
    return rc;
}

int comet_cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = { { "quick", no_argument, NULL, 0x2001 },
        { "full", no_argument, NULL, 0x2002 }, { "np", required_argument, NULL, 0x2003 },
        { "fresh", no_argument, NULL, 0x2004 }, { "scale-cores", required_argument, NULL, 0x2005 },
        { "scale-nodes", required_argument, NULL, 0x2006 }, COMET_CLI_GLOBAL_LONGOPTS,
        { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    int full = 0, fresh = 0, c, failures = 0;
    uint64_t np = 2, scores = 32, snodes = 8;
    char err[COMET_ERRLEN], why[COMET_ERRLEN], id[64] = "", now[40];
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case 0x2001:
            full = 0;
            break;
        case 0x2002:
            full = 1;
            break;
        case 0x2003:
            if (comet_cli_parse_pos("run", "--np", optarg, 4096, &np))
                return COMET_EXIT_USAGE;
            break;
        case 0x2004:
            fresh = 1;
            break;
        case 0x2005:
            if (comet_cli_parse_pos("run", "--scale-cores", optarg, 1 << 20, &scores))
                return COMET_EXIT_USAGE;
            break;
        case 0x2006:
            if (comet_cli_parse_pos("run", "--scale-nodes", optarg, 1 << 20, &snodes))
                return COMET_EXIT_USAGE;
            break;
        default:
            return comet_cli_bad_option("run", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("run", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    if (g.json) {
        comet_cli_error("run",
            "--json: the run's machine-readable outputs are the files in the "
            "output folder (run.json, predictions.json, report/*.json)");
        return COMET_EXIT_USAGE;
    }
    const char *dir = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    const char *set = full ? "--full" : "--quick", *qv = g.quiet ? "-q" : (g.verbose ? "-v" : NULL);
    char npbuf[32];
    snprintf(npbuf, sizeof npbuf, "%llu", (unsigned long long)np);
    if (comet_util_mkdir_p(dir, err, sizeof err) != 0) {
        comet_cli_error("run", "%s", err);
        return COMET_EXIT_FAIL;
    }
    /* one comet at a time in an output folder: a second one refuses, naming
     * the holder; the kernel drops the lock when this process ends */
    comet_util_lock lk;
    int stale = 0, rc = COMET_EXIT_OK;
    char what[160];
    snprintf(what, sizeof what, "comet run %s", set);
    if (comet_util_lock_dir(dir, what, &lk, &stale, err, sizeof err) != 0) {
        comet_cli_error("run", "%s", err);
        return COMET_EXIT_FAIL;
    }
    if (stale)
        fprintf(stderr,
            "comet: run: warning: an earlier comet (pid %d) ended in %s without finishing "
            "(killed?): its results files carry no completion mark, so they are archived, not "
            "reused\n",
            stale, dir);
    comet_util_install_signals();
    runlog L = { 0 };
    L.t0 = run_t0 = comet_util_now();
    snprintf(L.path, sizeof L.path, "%s/run.json", dir);
    load_prev(L.path, full);
    L.stages = json_array();
    L.root = json_pack("{s:s,s:s,s:{s:b,s:I,s:I,s:I,s:b},s:O}", "schema", "comet.run.v1", "started",
        comet_util_iso_time(now, sizeof now), "settings", "quick", !full, "np", (json_int_t)np,
        "scale_cores", (json_int_t)scores, "scale_nodes", (json_int_t)snodes, "fresh", fresh,
        "stages", L.stages);
    if (!L.root || !L.stages) {
        comet_cli_error("run", "out of memory");
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    double t;

    /* 1. probe: required, everything is keyed to the machine id */
    t = stage_begin("probe this machine");
    const char *probe[] = { "probe", "--out", dir, qv ? qv : "-q", NULL };
    if (comet_cli_spawn_self(probe) != 0 || machine_id(dir, id, sizeof id, err, sizeof err) != 0) {
        stage_end(&L, "probe", "failed", t, "%s", err[0] ? err : "comet probe failed");
        json_decref(L.root);
        json_decref(L.stages);
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    stage_end(&L, "probe", "ok", t, "machine id %s", id);

    /* 2-4. benches: reuse what is fresh, archive what is not, measure */
    static const struct {
        const char *kind, *title;
        int optional;
    } benches[3] = { { "memory", "bench memory (bandwidth sweep, vector ops)", 0 },
        { "kernels", "bench kernels (fused/unfused compound ops, sgemm grid)", 0 },
        { "collectives", "bench collectives (MPI ping-pong and collectives)", 1 } };
    if (fresh) {
        int moved = comet_reports_results_archive(dir, NULL, err, sizeof err);
        if (moved < 0)
            comet_cli_error("run", "%s", err);
        else if (moved)
            comet_util_info(
                "run: --fresh: %d earlier results file(s) moved to %s/archive/", moved, dir);
    }
    for (int b = 0; b < 3; b++) {
        char name[48];
        snprintf(name, sizeof name, "bench %s", benches[b].kind);
        t = stage_begin(benches[b].title);
        if (comet_util_interrupted)
            break;
        if (!fresh
            && comet_reports_results_fresh(
                dir, benches[b].kind, id, FRESH_MAX_AGE_S, why, sizeof why)) {
            stage_end(&L, name, "reused", t, "%s (--fresh measures again)", why);
            continue;
        }
        if (!fresh)
            comet_util_info("run: measuring: %s", why);
        /* partial or stale files of this kind would mix with the new ones */
        if (comet_reports_results_archive(dir, benches[b].kind, err, sizeof err) < 0)
            comet_cli_error("run", "%s", err);
        const char *args[12];
        int k = 0;
        args[k++] = "bench";
        args[k++] = benches[b].kind;
        args[k++] = set;
        if (b == 2) {
            args[k++] = "--np";
            args[k++] = npbuf;
        }
        if (b == 1 && !strcmp(set, "--quick")) {
            /* the sgemm grid feeds calibration and validation: steadier
             * points than bench's quick default (0.03 s a set), ~8 s more */
            args[k++] = "--grid-time-cap";
            args[k++] = "0.1";
        }
        args[k++] = "--out";
        args[k++] = dir;
        if (qv)
            args[k++] = qv;
        args[k] = NULL;
        int rc = comet_cli_spawn_self(args);
        if (rc == 0 && comet_reports_results_mark(dir, benches[b].kind, err, sizeof err) == 0) {
            stage_end(&L, name, "ok", t, NULL);
        } else {
            failures++;
            stage_end(&L, name, "failed", t, "%s%s",
                rc ? "the bench exited with an error (see above)" : err,
                benches[b].optional ? "; the report goes on without it and says so"
                                    : "; later stages use what was measured");
        }
    }
    /* 4b. whole decoder-stack steps over MPI ranks, the system model's
     * yardstick (validate --system, the report's "Whole steps"): --full
     * the bench's full set (minutes); --quick its one-rank steps (train,
     * prefill, decode at 1 and 2 threads, 8 samples: seconds) */
    int have_llm = 0;
    if (!comet_util_interrupted) {
        t = stage_begin("bench llm (whole decoder-stack steps over MPI ranks)");
        if (!fresh
            && comet_reports_results_fresh(dir, "llm", id, FRESH_MAX_AGE_S, why, sizeof why)) {
            stage_end(&L, "bench llm", "reused", t, "%s (--fresh measures again)", why);
            have_llm = 1;
        } else {
            if (comet_reports_results_archive(dir, "llm", err, sizeof err) < 0)
                comet_cli_error("run", "%s", err);
            const char *args_full[] = { "bench", "llm", "--full", "--out", dir, qv, NULL };
            const char *args_quick[] = { "bench", "llm", "--ranks", "1", "--samples", "8",
                "--gate-timeout", "1", "--out", dir, qv, NULL };
            const char **args = full ? args_full : args_quick;
            if (comet_cli_spawn_self(args) == 0
                && comet_reports_results_mark(dir, "llm", err, sizeof err) == 0) {
                stage_end(&L, "bench llm", "ok", t, NULL);
                have_llm = 1;
            } else {
                failures++;
                stage_end(&L, "bench llm", "failed", t,
                    "the bench exited with an error (see above); the report goes on without it");
            }
        }
    }
    if (comet_util_interrupted) {
        comet_cli_error("run", "interrupted; measured results are kept in %s/results", dir);
        json_decref(L.root);
        json_decref(L.stages);
        rc = COMET_EXIT_FAIL;
        goto out;
    }

    /* 5. calibrate */
    t = stage_begin("calibrate the machine profile");
    char results[4200], profile[4200];
    snprintf(results, sizeof results, "%s/results", dir);
    snprintf(profile, sizeof profile, "%s/profile.json", dir);
    const char *cal[] = { "calibrate", "--from", results, "--out", profile, qv, NULL };
    int have_profile = comet_cli_spawn_self(cal) == 0;
    if (have_profile) {
        stage_end(&L, "calibrate", "ok", t, "%s", profile);
    } else {
        failures++;
        /* a profile left from an earlier run would describe other results */
        if (remove(profile) == 0)
            comet_util_info("run: removed the earlier %s", profile);
        stage_end(&L, "calibrate", "failed", t,
            "no profile: the model's error on this machine and the predictions of this machine "
            "are skipped");
    }

    /* 6. validate */
    t = stage_begin("validate the model on this machine");
    if (have_profile) {
        const char *v[] = { "validate", "--profile", profile, "--results", results, qv, NULL };
        if (comet_cli_spawn_self(v) == 0)
            stage_end(&L, "validate", "ok", t, NULL);
        else {
            failures++;
            stage_end(&L, "validate", "failed", t, "comet validate exited with an error");
        }
    } else {
        stage_end(&L, "validate", "skipped", t, "no profile");
    }

    /* 6b. the system model against the whole steps measured */
    t = stage_begin("validate the system model on whole steps");
    if (have_profile && have_llm) {
        const char *v[]
            = { "validate", "--system", "--profile", profile, "--results", results, qv, NULL };
        if (comet_cli_spawn_self(v) == 0)
            stage_end(&L, "validate --system", "ok", t, NULL);
        else {
            failures++;
            stage_end(&L, "validate --system", "failed", t,
                "comet validate --system exited with an error");
        }
    } else {
        stage_end(&L, "validate --system", "skipped", t,
            have_profile ? "no whole-step records" : "no profile");
    }

    /* 7. predict */
    t = stage_begin("predict: this machine, scaled, COMET edge and cloud");
    comet_reports_predict_opts po = { (int)scores, (int)snodes };
    if (comet_reports_predict(dir, &po, err, sizeof err) == 0) {
        stage_end(&L, "predict", "ok", t, "%s/predictions.json", dir);
    } else {
        failures++;
        stage_end(&L, "predict", "failed", t, "%s", err);
    }

    /* 8. report */
    t = stage_begin("report");
    stage_end(&L, "report", "ok", t, "%s/report/index.html", dir);
    if (comet_reports_build(dir, NULL, err, sizeof err) != 0) {
        json_array_remove(L.stages, json_array_size(L.stages) - 1);
        stage_end(&L, "report", "failed", t, "%s", err);
        json_decref(L.root);
        json_decref(L.stages);
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    comet_util_info("\nrun: done in %.0f s%s\n  report:  %s/report/index.html\n  summary: "
                    "%s/report/summary.md",
        comet_util_now() - L.t0, failures ? " (some stages failed, see above)" : "", dir, dir);
    json_decref(L.root);
    json_decref(L.stages);
    rc = failures ? COMET_EXIT_FAIL : COMET_EXIT_OK;
out:
    comet_util_unlock_dir(&lk);
    return rc;
}
