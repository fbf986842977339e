/* What-ifs on predict/explore: --sweep FIELD=V1,V2,... (a shape dimension or
 * a named hardware parameter; a table, JSON comet.sweep.v1, and with --out a
 * figure) and --sensitivity (each hardware parameter -10% / +10%, ranked by
 * its effect on the best mappings' latency; JSON comet.sensitivity.v1). */
#include "cli.h"

#include "comet_model_validate.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_MAX 64

static void field_list(char *buf, size_t len)
{
    size_t o = 0;
    for (int i = 0; i < comet_model_param_count() && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", comet_model_param_name(i));
}

/* "25 G" + unit: a value with an SI prefix (binary sizes stay in B with
 * decimal prefixes, as the parameters are parsed) */
static const char *si(double v, const char *unit, char *buf, size_t len)
{
    static const char *const pre[] = { "p", "n", "u", "m", "", "k", "M", "G", "T", "P" };
    int e = 4;
    double x = v;
    if (!unit[0]) {
        snprintf(buf, len, "%g", v);
        return buf;
    }
    while (x != 0 && fabs(x) >= 1000 && e < 9)
        x /= 1000, e++;
    while (x != 0 && fabs(x) < 1 && e > 0)
        x *= 1000, e--;
    snprintf(buf, len, "%.4g %s%s", x, pre[e], unit);
    return buf;
}

static void print_dump(json_t *o)
{
    char *t = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (t)
        printf("%s\n", t);
    free(t);
}

int comet_cli_sweep(const char *sub, const comet_model_hw *hw, const comet_model_problem *pb,
    const char *spec, int json, const char *outdir)
{
    char field[32], list[1024], names[512];
    const char *eq = spec ? strchr(spec, '=') : NULL;
    field_list(names, sizeof names);
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof field || strlen(eq + 1) >= sizeof list
        || !eq[1]) {
        comet_cli_error(sub, "--sweep: expected FIELD=V1,V2,... (shape dimensions or %s)", names);
        return COMET_EXIT_USAGE;
    }
    memcpy(field, spec, (size_t)(eq - spec));
    field[eq - spec] = '\0';
    snprintf(list, sizeof list, "%s", eq + 1);
    comet_model_problem probe = *pb;
    const int is_dim = comet_model_problem_dim_set(&probe, field, 1) != -ENOENT;
    if (!is_dim && !comet_model_param_unit(field)) {
        comet_cli_error(sub,
            "--sweep: unknown field '%s' for %s (shape dimensions of the op, or hardware: %s)",
            field, comet_model_op_name(pb->op), names);
        return COMET_EXIT_USAGE;
    }
    double x[SWEEP_MAX], f[SWEEP_MAX], u[SWEEP_MAX];
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == SWEEP_MAX) {
            comet_cli_error(sub, "--sweep: at most %d values", SWEEP_MAX);
            return COMET_EXIT_USAGE;
        }
        uint64_t iv = 0;
        double v = 0;
        if (is_dim ? comet_util_parse_u64(tok, &iv) != 0 || iv == 0
                   : comet_model_param_parse(field, tok, &v) != 0) {
            comet_cli_error(sub, "--sweep: %s=%s is not a valid value%s%s", field, tok,
                is_dim ? " (a positive integer)" : " (unit: ",
                is_dim ? ""
                       : (comet_model_param_unit(field)[0] ? comet_model_param_unit(field)
                                                           : "a number"));
            return COMET_EXIT_USAGE;
        }
        x[n++] = is_dim ? (double)iv : v;
    }
    comet_model_search *s = malloc(sizeof *s);
    if (!s) {
        comet_cli_error(sub, "out of memory");
        return COMET_EXIT_FAIL;
    }
    json_t *rows = json_array();
    if (!json)
        printf("%-16s %14s %14s %9s\n", field, "best fused", "best unfused", "speedup");
    for (size_t i = 0; i < n; i++) {
        comet_model_hw w = *hw; /* shallow: the grids are only read */
        comet_model_problem q = *pb;
        int rc = is_dim ? comet_model_problem_dim_set(&q, field, x[i])
                        : comet_model_param_set(&w, field, x[i]);
        if (rc) {
            comet_cli_error(sub, "--sweep: %s = %g cannot be set (%s)", field, x[i],
                rc == -ERANGE ? "out of range" : "invalid");
            free(s);
            json_decref(rows);
            return COMET_EXIT_USAGE;
        }
        rc = comet_model_explore(&w, &q, s);
        f[i] = rc == 0 && s->r_fused.valid ? s->r_fused.seconds : NAN;
        u[i] = rc == 0 && s->r_unfused.valid ? s->r_unfused.seconds : NAN;
        if (json)
            json_array_append_new(rows,
                json_pack("{s:f,s:o,s:o,s:o}", "value", x[i], "best_fused_s",
                    isfinite(f[i]) ? json_real(f[i]) : json_null(), "best_unfused_s",
                    isfinite(u[i]) ? json_real(u[i]) : json_null(), "speedup",
                    isfinite(f[i] / u[i]) ? json_real(u[i] / f[i]) : json_null()));
        else {
            char v[48];
            printf("%-16s %12.4g s %12.4g s %8.3fx\n",
                is_dim ? si(x[i], "", v, sizeof v)
                       : si(x[i], comet_model_param_unit(field), v, sizeof v),
                f[i], u[i], u[i] / f[i]);
        }
    }
    free(s);
    int code = COMET_EXIT_OK;
    if (outdir) {
        char err[COMET_ERRLEN], xl[96], name[64];
        snprintf(xl, sizeof xl, "%s%s%s%s", field, is_dim ? "" : " (",
            is_dim ? "" : comet_model_param_unit(field), is_dim ? "" : ")");
        snprintf(name, sizeof name, "sweep_%s", field);
        if (comet_reports_sweep_plot(outdir, name, xl, x, f, u, n, err, sizeof err) != 0) {
            comet_cli_error(sub, "--sweep: %s", err);
            code = COMET_EXIT_FAIL;
        } else if (!json)
            printf("figure: %s/%s.svg (data: %s.csv)\n", outdir, name, name);
    }
    if (json) {
        json_t *o
            = json_pack("{s:s,s:s,s:s,s:s,s:o}", "schema", "comet.sweep.v1", "field", field, "unit",
                is_dim ? "" : comet_model_param_unit(field), "hardware", hw->name, "rows", rows);
        print_dump(o);
        json_decref(o);
    } else
        json_decref(rows);
    return code;
}

int comet_cli_sensitivity(
    const char *sub, const comet_model_hw *hw, const comet_model_problem *pb, int json)
{
    comet_model_sens_row rows[48];
    int n = comet_model_sensitivity(hw, pb, 0.10, rows, 48);
    if (n < 0) {
        comet_cli_error(sub, "--sensitivity: %s", comet_util_strerror(n));
        return COMET_EXIT_FAIL;
    }
    if (json) {
        json_t *a = json_array();
        for (int i = 0; i < n; i++) {
            const comet_model_sens_row *r = &rows[i];
#define JN(v) (isfinite(v) ? json_real(v) : json_null())
            json_array_append_new(a,
                json_pack("{s:s,s:s,s:f,s:f,s:f,s:o,s:o,s:o,s:o,s:o,s:o}", "parameter", r->name,
                    "unit", comet_model_param_unit(r->name), "value", r->base, "minus_value",
                    r->lo_val, "plus_value", r->hi_val, "fused_minus_s", JN(r->fused_lo_s),
                    "fused_plus_s", JN(r->fused_hi_s), "unfused_minus_s", JN(r->unfused_lo_s),
                    "unfused_plus_s", JN(r->unfused_hi_s), "elasticity_fused",
                    JN(r->elasticity_fused), "elasticity_unfused", JN(r->elasticity_unfused)));
#undef JN
        }
        json_t *o = json_pack("{s:s,s:s,s:s,s:f,s:o}", "schema", "comet.sensitivity.v1", "hardware",
            hw->name, "op", comet_model_op_name(pb->op), "step", 0.10, "rows", a);
        print_dump(o);
        json_decref(o);
        return COMET_EXIT_OK;
    }
    printf("sensitivity of the best mappings to each hardware parameter, -10%% / +10%% (counts: "
           "one step), most effect first;\nelasticity = d ln latency / d ln parameter (-1: "
           "latency inversely proportional, 0: no effect)\n\n");
    printf("%-14s %16s %12s %12s %12s %13s\n", "parameter", "value", "fused -10%", "fused +10%",
        "elast fused", "elast unfused");
    for (int i = 0; i < n; i++) {
        const comet_model_sens_row *r = &rows[i];
        char v[48];
        printf("%-14s %16s %10.4g s %10.4g s %12.3f %13.3f\n", r->name,
            si(r->base, comet_model_param_unit(r->name), v, sizeof v), r->fused_lo_s, r->fused_hi_s,
            r->elasticity_fused, r->elasticity_unfused);
    }
    return COMET_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* Prediction intervals from the model's measured error on this machine */
/* ------------------------------------------------------------------ */

#include "comet_bench.h"

#include <dirent.h>
#include <libgen.h>

int comet_cli_profile_vrows(
    const char *hwpath, const comet_model_hw *hw, comet_model_vrow **rows, int *n)
{
    *rows = NULL;
    *n = 0;
    /* only a calibrated profile of this machine, with its results beside it */
    if (!hwpath || !hw || !hw->calibration || strcmp(hw->kind, "cpu"))
        return 0;
    char dir[4096], rdir[4200];
    snprintf(dir, sizeof dir, "%s", hwpath);
    snprintf(rdir, sizeof rdir, "%s/results", dirname(dir));
    DIR *d = opendir(rdir);
    if (!d)
        return 0;
    json_t *machine = NULL;
    comet_results_set all = { 0 };
    char err[COMET_ERRLEN];
    if (comet_bench_this_machine(&machine, err, sizeof err) != 0) {
        closedir(d);
        return 0;
    }
    comet_results_load_opts lo = { machine, 0 };
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".jsonl"))
            continue;
        char path[4500];
        snprintf(path, sizeof path, "%s/%s", rdir, e->d_name);
        /* another machine's or a damaged file gives no interval, not an error
         * (a failed load leaves the set as it was) */
        (void)comet_results_load(path, &lo, &all, NULL, err, sizeof err);
    }
    closedir(d);
    json_decref(machine);
    if (all.n) {
        comet_model_vrow *v = malloc(all.n * sizeof *v);
        int k = v ? comet_model_validate_records(hw, all.recs, all.n, v, all.n) : 0;
        if (k > 0) {
            *rows = v;
            *n = k;
        } else
            free(v);
    }
    comet_results_set_free(&all);
    return 0;
}
