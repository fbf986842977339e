/* The report builds from a fixture set of results and a profile (no
 * measuring); numbers in summary.md match values recomputed here from the
 * fixture records; the HTML is well-formed and references only files that
 * exist; missing and corrupt inputs are errors naming the file; stored
 * results are reused only when fresh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_bench.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static const char *src_dir(void)
{
    const char *s = getenv("COMET_SOURCE_DIR");
    return s ? s : COMET_SOURCE_DIR;
}

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("'%s' failed (%d)", cmd, rc);
}

/* A fresh copy of the fixture set for each test. */
static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/comet-report-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -r %s/tests/fixtures/report/. %s/", src_dir(), dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *rel)
{
    char path[512], *data = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (comet_util_read_file(path, &data, &len, NULL, 0) != 0)
        return NULL;
    return data;
}

static void build_ok(void)
{
    char err[COMET_ERRLEN] = "";
    comet_reports_predict_opts po = { 16, 4 };
    if (comet_reports_predict(dir, &po, err, sizeof err) != 0)
        fail_msg("predict: %s", err);
    if (comet_reports_build(dir, NULL, err, sizeof err) != 0)
        fail_msg("build: %s", err);
}

/* All records of the fixture, loaded with the bench reader. */
static json_t **load_all(size_t *n)
{
    char cmd[600], file[512];
    json_t **all = NULL;
    *n = 0;
    snprintf(cmd, sizeof cmd, "ls %s/results/*.jsonl", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(file, sizeof file, p)) {
        file[strcspn(file, "\n")] = '\0';
        json_t **r = NULL;
        size_t k = 0;
        char err[COMET_ERRLEN];
        assert_int_equal(comet_results_load_json(file, NULL, &r, &k, NULL, err, sizeof err), 0);
        all = realloc(all, (*n + k) * sizeof *all);
        memcpy(all + *n, r, k * sizeof *r);
        *n += k;
        free(r);
    }
    pclose(p);
    return all;
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* The record of variant v of fused record f's case, or NULL. */
static const json_t *baseline_of(json_t **r, size_t n, const json_t *f, const char *v)
{
    for (size_t j = 0; j < n; j++)
        if (!strcmp(str(r[j], "kind"), "kernel") && !strcmp(str(r[j], "variant"), v)
            && !strcmp(str(r[j], "op"), str(f, "op")) && num(r[j], "threads") == num(f, "threads")
            && json_equal(json_object_get(r[j], "shape"), json_object_get(f, "shape")))
            return r[j];
    return NULL;
}

/* "| ms | 1.23x (lo-hi) " of one baseline, or "| n/a | n/a ". */
static void cells(const json_t *f, const json_t *u, char *buf, size_t len)
{
    if (!u) {
        snprintf(buf, len, "| n/a | n/a ");
        return;
    }
    const json_t *sf = json_object_get(f, "stats"), *su = json_object_get(u, "stats");
    double fm = num(sf, "median_s"), um = num(su, "median_s");
    snprintf(buf, len, "| %.3f | %.2fx (%.2f-%.2f) ", um * 1e3, um / fm,
        num(su, "ci_lo_s") / num(sf, "ci_hi_s"), num(su, "ci_hi_s") / num(sf, "ci_lo_s"));
}

/* Every fused case's row in summary.md (three speedups), recomputed from
 * the records. */
static void test_speedup_rows(void **s)
{
    (void)s;
    build_ok();
    char *md = slurp("report/summary.md");
    assert_non_null(md);
    size_t n;
    json_t **r = load_all(&n);
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(str(r[i], "kind"), "kernel") || strcmp(str(r[i], "variant"), "fused")
            || baseline_of(r, i, r[i], "fused")) /* a later fused record: a tile sweep */
            continue;
        const json_t *u = baseline_of(r, n, r[i], "unfused"),
                     *g = baseline_of(r, n, r[i], "unfused_same_gemm"),
                     *o = baseline_of(r, n, r[i], "onednn");
        if (!u && !g && !o)
            continue;
        char want[400], cg[120], cu[120], co[120];
        cells(r[i], g, cg, sizeof cg);
        cells(r[i], u, cu, sizeof cu);
        cells(r[i], o, co, sizeof co);
        snprintf(want, sizeof want, "| %.0f | %.3f %s%s%s|", num(r[i], "threads"),
            num(json_object_get(r[i], "stats"), "median_s") * 1e3, cg, cu, co);
        if (!strstr(md, want))
            fail_msg("summary.md lacks the recomputed speedup row '%s'", want);
        checked++;
    }
    assert_true(checked >= 4);
    /* the roofline's compute ceiling: the best sgemm at the most threads */
    double peak = 0, T = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(str(r[i], "kind"), "kernel") && !strcmp(str(r[i], "op"), "sgemm"))
            T = fmax(T, num(r[i], "threads"));
    for (size_t i = 0; i < n; i++)
        if (!strcmp(str(r[i], "kind"), "kernel") && !strcmp(str(r[i], "op"), "sgemm")
            && num(r[i], "threads") == T)
            peak = fmax(peak, num(r[i], "gflops"));
    char want[128];
    snprintf(want, sizeof want, "the best measured sgemm, %.1f GFLOP/s on %.0f thread(s)", peak, T);
    if (!strstr(md, want))
        fail_msg("summary.md lacks '%s'", want);
    /* the record count in the header */
    snprintf(want, sizeof want, ": %zu records in ", n);
    assert_non_null(strstr(md, want));
    comet_results_json_free(r, n);
    free(md);
}

/* Prediction rows match predictions.json (speedup = unfused / fused). */
static void test_prediction_rows(void **s)
{
    (void)s;
    build_ok();
    char *md = slurp("report/summary.md");
    char path[512];
    snprintf(path, sizeof path, "%s/predictions.json", dir);
    json_t *p = json_load_file(path, 0, NULL);
    assert_non_null(p);
    size_t i;
    json_t *x;
    int edge = 0, cloud = 0, local = 0, scaled = 0;
    char common_shape[3][96] = { "", "", "" };
    json_array_foreach(json_object_get(p, "predictions"), i, x)
    {
        double tf = num(json_object_get(json_object_get(x, "fused"), "result"), "seconds"),
               tu = num(json_object_get(json_object_get(x, "unfused"), "result"), "seconds");
        assert_true(tf > 0 && tu > 0);
        char want[200];
        snprintf(want, sizeof want, "| %s | %s | %s | %s | %.4g | %.4g | %.2fx |", str(x, "set"),
            str(x, "system"), str(x, "op"), str(x, "shape"), tf * 1e6, tu * 1e6, tu / tf);
        /* every system on the same shape per op in the common set */
        if (!strcmp(str(x, "set"), "common")) {
            const char *op = str(x, "op");
            int o = !strcmp(op, "gemm_softmax") ? 0 : !strcmp(op, "gemm_layernorm") ? 1 : 2;
            if (!common_shape[o][0])
                snprintf(common_shape[o], sizeof common_shape[o], "%s", str(x, "shape"));
            assert_string_equal(common_shape[o], str(x, "shape"));
        }
        if (!strstr(md, want))
            fail_msg("summary.md lacks the prediction row '%s'", want);
        edge += !strcmp(str(x, "system"), "edge");
        cloud += !strcmp(str(x, "system"), "cloud");
        local += !strcmp(str(x, "system"), "local");
        scaled += !strcmp(str(x, "system"), "scaled");
    }
    /* all three ops on the presets, the scaled system and this machine (twice:
     * the common shapes and its largest measured ones) */
    assert_int_equal(edge, 3);
    assert_int_equal(cloud, 3);
    assert_int_equal(scaled, 3);
    assert_int_equal(local, 6);
    /* this machine's predictions carry the interval of its own validation */
    assert_non_null(strstr(md, "### Prediction intervals on this machine"));
    assert_non_null(strstr(md, "| fused us [90% interval] | unfused us [90% interval] |"));
    json_decref(p);
    free(md);
}

/* A complete run says so; an interrupted one is marked partial with where
 * it stopped, and a bench that never ran is named as missing. */
static void test_partial_marked(void **s)
{
    (void)s;
    build_ok();
    char *md = slurp("report/summary.md");
    assert_non_null(md);
    assert_null(strstr(md, "PARTIAL"));
    assert_null(strstr(md, "These results are incomplete"));
    free(md);
    /* the kernels bench interrupted (no completion mark, a torn last line),
     * and the collectives results gone */
    sh("rm %s/results/kernels.complete %s/results/collectives*", dir, dir);
    sh("printf '{\"schema\":\"comet.rec' >> %s/results/kernels-*.jsonl", dir);
    build_ok();
    md = slurp("report/summary.md");
    assert_non_null(md);
    assert_non_null(
        strstr(md, "PARTIAL: its writer was interrupted (torn last line); measured up to"));
    assert_non_null(strstr(md, "no results at all for: collectives"));
    free(md);
}

static const char *const voids[]
    = { "meta", "br", "img", "hr", "link", "input", "source", "col", "wbr", NULL };

/* Checks that a referenced file exists in the report folder (relative only). */
static int ref_ok(const char *ref, size_t len)
{
    char path[1024];
    if (len >= 4 && !strncmp(ref, "http", 4))
        return 0; /* an external link would break offline reading */
    if (len && ref[0] == '#')
        return 1;
    if (len && ref[0] == '/')
        return 0;
    snprintf(path, sizeof path, "%s/report/%.*s", dir, (int)len, ref);
    return access(path, R_OK) == 0;
}

/* The HTML checker: tags balance (void elements excepted), attributes are
 * quoted, every href/src names an existing file beside index.html, and
 * every #anchor names an id. */
static void test_html_wellformed(void **s)
{
    (void)s;
    build_ok();
    char *h = slurp("report/index.html");
    assert_non_null(h);
    assert_true(!strncmp(h, "<!DOCTYPE html>", 15));
    /* markdown emphasis is rendered, never shown as literal asterisks */
    assert_null(strstr(h, "**"));
    assert_non_null(strstr(h, "<strong>fusion effect</strong>"));
    char stack[256][32];
    int depth = 0, refs = 0, imgs = 0;
    for (char *q = h; (q = strchr(q, '<')) != NULL;) {
        if (!strncmp(q, "<!--", 4)) {
            q = strstr(q, "-->");
            assert_non_null(q);
            continue;
        }
        char *end = strchr(q, '>');
        assert_non_null(end);
        if (q[1] == '!') {
            q = end;
            continue;
        }
        int closing = q[1] == '/';
        char name[32];
        int k = 0;
        for (char *c = q + 1 + closing; isalnum((unsigned char)*c) && k < 31; c++)
            name[k++] = (char)tolower((unsigned char)*c);
        name[k] = '\0';
        if (!k)
            fail_msg("a '<' that starts no tag: %.40s", q);
        int isvoid = 0;
        for (int i = 0; voids[i]; i++)
            isvoid |= !strcmp(name, voids[i]);
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], name))
                fail_msg("</%s> closes <%s>", name, depth ? stack[depth - 1] : "(nothing)");
            depth--;
        } else if (!isvoid && end[-1] != '/') {
            assert_true(depth < 256);
            strcpy(stack[depth++], name);
        }
        /* attributes: name="value" */
        for (char *a = q + 1 + closing + k; a < end;) {
            while (a < end && isspace((unsigned char)*a))
                a++;
            if (a >= end || *a == '/')
                break;
            char *eq = a;
            while (eq < end && (isalnum((unsigned char)*eq) || *eq == '-'))
                eq++;
            if (*eq != '=' || eq[1] != '"')
                fail_msg("unquoted attribute in <%s>: %.30s", name, a);
            char *v = eq + 2, *ve = strchr(v, '"');
            assert_true(ve && ve < end);
            if ((eq - a == 4 && !strncmp(a, "href", 4)) || (eq - a == 3 && !strncmp(a, "src", 3))) {
                if (!ref_ok(v, (size_t)(ve - v)))
                    fail_msg("index.html references a missing or non-local file: %.*s",
                        (int)(ve - v), v);
                if (v[0] == '#') {
                    char id[80];
                    snprintf(id, sizeof id, "id=\"%.*s\"", (int)(ve - v - 1), v + 1);
                    if (!strstr(h, id))
                        fail_msg("anchor %.*s names no id", (int)(ve - v), v);
                }
                refs++;
                imgs += !strcmp(name, "img");
            }
            a = ve + 1;
        }
        /* text content of raw-text elements is not parsed */
        if (!closing && (!strcmp(name, "style") || !strcmp(name, "script"))) {
            char close[40];
            snprintf(close, sizeof close, "</%s>", name);
            char *c = strstr(end, close);
            assert_non_null(c);
            q = c;
            continue;
        }
        q = end + 1;
    }
    if (depth)
        fail_msg("unclosed <%s>", stack[depth - 1]);
    assert_true(refs > 10);
    /* plots: speedups, validation, roofline, memory, p2p, >= 1 collective, 2 predictions */
    assert_true(imgs >= 8);
    free(h);
}

/* Every drawn plot has axis labels with units and a legend, and its data. */
static void test_plots_labelled(void **s)
{
    (void)s;
    build_ok();
    char cmd[600], file[512];
    snprintf(cmd, sizeof cmd, "ls %s/report/*.svg", dir);
    FILE *p = popen(cmd, "r");
    int n = 0;
    while (fgets(file, sizeof file, p)) {
        file[strcspn(file, "\n")] = '\0';
        char stem[512], path[600], *gp = NULL, *svg = NULL;
        size_t len;
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(file) - 4), file);
        snprintf(path, sizeof path, "%s.gp", stem);
        assert_int_equal(comet_util_read_file(path, &gp, &len, NULL, 0), 0);
        assert_int_equal(comet_util_read_file(file, &svg, &len, NULL, 0), 0);
        if (!strstr(gp, "set xlabel") || !strstr(gp, "set ylabel") || !strstr(gp, "set key"))
            fail_msg("%s: no axis labels or legend", path);
        /* units in parentheses in the y label */
        char *yl = strstr(gp, "set ylabel");
        assert_true(strchr(yl, '(') && strchr(yl, '(') < strchr(yl, '\n'));
        assert_non_null(strstr(svg, "</svg>"));
        snprintf(path, sizeof path, "%s.csv", stem);
        assert_int_equal(access(path, R_OK), 0);
        snprintf(path, sizeof path, "%s.json", stem);
        json_t *j = json_load_file(path, 0, NULL);
        if (!j)
            fail_msg("%s: not JSON", path);
        json_decref(j);
        free(gp);
        free(svg);
        n++;
    }
    pclose(p);
    assert_true(n >= 8);
    /* no temporary left behind */
    snprintf(cmd, sizeof cmd, "ls %s/report | grep -c tmp", dir);
    p = popen(cmd, "r");
    assert_non_null(fgets(file, sizeof file, p));
    pclose(p);
    assert_int_equal(atoi(file), 0);
}

static void test_missing_and_corrupt(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    assert_int_equal(comet_reports_build("/nonexistent/comet", NULL, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "/nonexistent/comet"));
    /* a corrupt profile names the file */
    sh("printf '{\"name\": ' > %s/profile.json", dir);
    assert_int_equal(comet_reports_build(dir, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "profile.json"));
    sh("rm %s/profile.json", dir);
    /* without a profile the report still builds and says so */
    assert_int_equal(comet_reports_build(dir, NULL, err, sizeof err), 0);
    char *md = slurp("report/summary.md");
    assert_non_null(strstr(md, "No calibrated profile"));
    free(md);
    /* a corrupt line in the middle of a results file names file:line */
    sh("f=$(ls %s/results/kernels-*.jsonl | head -1); sed -i '3s/.*/{broken/' $f", dir);
    assert_int_equal(comet_reports_build(dir, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "kernels-"));
    assert_non_null(strstr(err, ":3"));
}

/* The CLI: exit 2 with one line naming the file; 0 on the fixture. */
/* A kernel record of one case with median m and CI [lo, hi] (seconds). */
static comet_results_record krec_op(
    const char *op, const char *variant, int threads, double m, double lo, double hi)
{
    comet_results_record r;
    char err[COMET_ERRLEN];
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:i,s:i,s:i},s:i,s:f,s:{s:i,s:f,s:f,s:f,s:f,"
                          "s:f,s:[f]}}",
        "schema", COMET_RESULTS_SCHEMA, "kind", "kernel", "run_id", "t", "op", op, "variant",
        variant, "shape", "M", 64, "N", 128, "K", 16, "threads", threads, "flops", 1e6, "stats",
        "n", 1, "median_s", m, "ci_lo_s", lo, "ci_hi_s", hi, "ci_level", 0.95, "min_s", lo,
        "samples_s", m);
    assert_int_equal(comet_results_parse(j, &r, err, sizeof err), 0);
    json_decref(j);
    return r;
}

static comet_results_record krec(const char *variant, int threads, double m, double lo, double hi)
{
    return krec_op("gemm_softmax", variant, threads, m, lo, hi);
}

/* Each fused case is paired with every baseline measured (fusion effect,
 * BLAS, oneDNN), a missing one stays unmeasured, tile sweeps (later fused
 * records of the same case) and cases without any baseline are not listed. */
static void test_three_speedups(void **s)
{
    (void)s;
    comet_results_record r[8] = {
        krec("fused", 1, 1.0, 0.9, 1.1), krec("unfused_same_gemm", 1, 1.5, 1.4, 1.6),
        krec("unfused", 1, 2.0, 1.8, 2.2), krec("onednn", 1, 3.0, 2.7, 3.3),
        krec("fused", 1, 5.0, 4.0, 6.0), /* a tile sweep of the same case */
        krec("fused", 2, 1.0, 0.9, 1.1), krec("unfused", 2, 0.8, 0.7, 0.9),
        krec("fused", 4, 1.0, 0.9, 1.1), /* no baseline at 4 threads */
    };
    /* gms records name dataflows fused / unfused: never a compound-op pair */
    comet_results_record r2[2] = { krec_op("gms", "fused", 8, 1.0, 0.9, 1.1),
        krec_op("gms", "unfused", 8, 2.0, 1.9, 2.1) };
    comet_reports_speedup none[2];
    assert_int_equal(comet_reports_speedups(r2, 2, none, 2), 0);
    comet_results_record_free(&r2[0]);
    comet_results_record_free(&r2[1]);
    comet_reports_speedup sp[8];
    size_t n = comet_reports_speedups(r, 8, sp, 8);
    assert_int_equal(n, 2);
    assert_int_equal(sp[0].threads, 1);
    assert_true(fabs(sp[0].vs[COMET_REPORTS_VS_SAME_GEMM].speedup - 1.5) < 1e-12);
    assert_true(fabs(sp[0].vs[COMET_REPORTS_VS_BLAS].speedup - 2.0) < 1e-12);
    assert_true(fabs(sp[0].vs[COMET_REPORTS_VS_ONEDNN].speedup - 3.0) < 1e-12);
    assert_true(fabs(sp[0].vs[COMET_REPORTS_VS_SAME_GEMM].lo - 1.4 / 1.1) < 1e-12);
    assert_true(fabs(sp[0].vs[COMET_REPORTS_VS_SAME_GEMM].hi - 1.6 / 0.9) < 1e-12);
    assert_true(fabs(sp[0].speedup - 2.0) < 1e-12 && sp[0].unfused_s == 2.0);
    assert_int_equal(sp[1].threads, 2);
    assert_true(sp[1].vs[COMET_REPORTS_VS_SAME_GEMM].base_s == 0);
    assert_true(sp[1].vs[COMET_REPORTS_VS_ONEDNN].base_s == 0);
    assert_true(fabs(sp[1].speedup - 0.8) < 1e-12);
    assert_true(fabs(sp[1].coverage - 0.90) < 1e-12);
    for (int i = 0; i < 8; i++)
        comet_results_record_free(&r[i]);
}

static void test_cli(void **s)
{
    (void)s;
    const char *bin = getenv("COMET_BINARY");
    if (!bin)
        skip();
    char cmd[1200], line[1024];
    snprintf(cmd, sizeof cmd, "%s report --foreign-ok --from %s -q 2>&1; echo rc=$?", bin, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    assert_string_equal(line, "rc=0\n");
    sh("printf 'nonsense' > %s/predictions.json", dir);
    snprintf(cmd, sizeof cmd, "%s report --foreign-ok --from %s 2>&1; echo rc=$?", bin, dir);
    p = popen(cmd, "r");
    assert_non_null(fgets(line, sizeof line, p));
    assert_non_null(strstr(line, "comet: report: "));
    assert_non_null(strstr(line, "predictions.json"));
    assert_non_null(fgets(line, sizeof line, p));
    assert_string_equal(line, "rc=2\n");
    pclose(p);
}

/* Without gnuplot the report still builds and names the reason per plot. */
static void test_no_gnuplot(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    setenv("COMET_GNUPLOT", "/nonexistent/gnuplot", 1);
    int rc = comet_reports_build(dir, NULL, err, sizeof err);
    unsetenv("COMET_GNUPLOT");
    assert_int_equal(rc, 0);
    char *h = slurp("report/index.html");
    assert_non_null(strstr(h, "gnuplot is not installed"));
    assert_null(strstr(h, "<img"));
    free(h);
}

/* An llm results file in the fixture set: the fixture's run record as an
 * llm run, then one record per configuration {tp, pp, dp, sp, phase,
 * median ms}. */
static const struct {
    int tp, pp, dp, sp;
    const char *phase;
    double ms;
} llm_cfgs[] = { { 1, 1, 1, 0, "train", 40 }, { 2, 1, 1, 0, "train", 30 },
    { 2, 1, 1, 1, "train", 29 }, { 1, 2, 1, 0, "train", 45 }, { 1, 1, 2, 0, "prefill", 8 },
    { 1, 1, 1, 0, "decode", 1.5 } };
#define NLLM (sizeof llm_cfgs / sizeof *llm_cfgs)

static void write_llm_results(void)
{
    char cmd[800], path[600];
    /* the memory run's run record (this fixture's machine) as an llm run */
    snprintf(cmd, sizeof cmd,
        "f=$(ls %s/results/memory-*.jsonl | head -1); head -1 $f | sed "
        "'s/\"bench\":\"memory\"/\"bench\":\"llm\"/; s/\"run_id\":\"[^\"]*\"/\"run_id\":"
        "\"llmrun\"/' > %s/results/llm-llmrun.jsonl",
        dir, dir);
    sh("%s", cmd);
    snprintf(path, sizeof path, "%s/results/llm-llmrun.jsonl", dir);
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    for (size_t i = 0; i < NLLM; i++) {
        const double m = llm_cfgs[i].ms * 1e-3;
        const int dec = !strcmp(llm_cfgs[i].phase, "decode");
        json_t *r = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i},s:i,"
                              "s:i,s:{s:s,s:s,s:i,s:i,s:i,s:b},s:{s:i,s:f,s:f,s:f,s:f,s:[f,f,f]},"
                              "s:{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f},s:s,s:i,s:b}",
            "schema", COMET_RESULTS_SCHEMA, "kind", "llm", "run_id", "llmrun", "machine_id", "x",
            "op", "llm", "variant", "fused", "shape", "hidden", 256, "H", 4, "d", 64, "ffn", 1024,
            "layers", 2, "seq", 128, "B", 4, "microbatch",
            llm_cfgs[i].pp > 1 ? 1 : 4 / llm_cfgs[i].dp, "threads", 1, "ranks",
            llm_cfgs[i].tp * llm_cfgs[i].pp * llm_cfgs[i].dp, "params", "phase", llm_cfgs[i].phase,
            "recompute", "none", "tp", llm_cfgs[i].tp, "pp", llm_cfgs[i].pp, "dp", llm_cfgs[i].dp,
            "seq_parallel", llm_cfgs[i].sp, "stats", "n", 3, "median_s", m, "ci_lo_s", 0.9 * m,
            "ci_hi_s", 1.1 * m, "min_s", 0.9 * m, "samples_s", 0.9 * m, m, 1.1 * m, "timers",
            "gemm_s", 0.6 * m, "attention_s", 0.1 * m, "vector_s", 0.1 * m, "tp_s", 0.0, "dp_s",
            0.0, "pp_s", 0.0, "bubble_s", 0.0, "optimizer_s", 0.05 * m, "recompute_s", 0.0,
            "loss_s", 0.0, "link", "shm", "nodes", 1, "valid", 1);
        assert_non_null(r);
        if (dec)
            json_object_set_new(json_object_get(r, "shape"), "context", json_integer(256));
        char *t = json_dumps(r, JSON_COMPACT);
        fprintf(fp, "%s\n", t);
        free(t);
        json_decref(r);
    }
    fclose(fp);
}

/* The whole-step figure: one point per llm record (CSV and JSON rows), the
 * script log-log with y = x and the +-15% band, the SVG drawn beside them
 * with no temporary left; without gnuplot the data stay and the figure says
 * why it is missing. */
static void test_wholesteps_figure(void **s)
{
    (void)s;
    write_llm_results();
    build_ok();
    char *csv = slurp("report/wholesteps.csv"), *gp = slurp("report/wholesteps.gp");
    char *md = slurp("report/summary.md");
    assert_non_null(csv);
    assert_non_null(gp);
    assert_non_null(md);
    /* one row per record after the header, measured ms as written */
    int rows = 0;
    for (const char *q = strchr(csv, '\n'); q && q[1]; q = strchr(q + 1, '\n'))
        rows++;
    assert_int_equal(rows, (int)NLLM);
    assert_non_null(strstr(csv, "train / tp2+sp,train,fused,none,2,1,1,1,1,256,2,shm,29,"));
    assert_non_null(strstr(csv, "train / pp2,"));
    assert_non_null(strstr(csv, "prefill / dp2,"));
    assert_non_null(strstr(gp, "set logscale xy"));
    assert_non_null(strstr(gp, "E = 0.15"));
    assert_non_null(strstr(gp, "x with lines"));
    assert_non_null(strstr(gp, "set output 'wholesteps.svg'"));
    assert_non_null(strstr(md, "(wholesteps.svg)"));
    assert_non_null(strstr(md, "| train | fused | tp2+sp | 256 | 29.000 |"));
    char path[600];
    snprintf(path, sizeof path, "%s/report/wholesteps.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    assert_string_equal(str(j, "schema"), "comet.figure.v1");
    assert_int_equal((int)num(j, "records"), (int)NLLM);
    assert_true(num(j, "band") == 0.15);
    const json_t *jr = json_object_get(j, "rows");
    assert_int_equal(json_array_size(jr), NLLM);
    int within = 0;
    for (size_t i = 0; i < NLLM; i++) {
        const json_t *x = json_array_get(jr, i);
        const double ms = num(x, "measured_s"), ps = num(x, "predicted_s");
        assert_true(fabs(ms - llm_cfgs[i].ms * 1e-3) < 1e-12);
        assert_true(ps > 0 && isfinite(ps));
        assert_true(fabs(num(x, "rel_err") - (ps - ms) / ms) < 1e-9);
        within += fabs(ps - ms) <= 0.15 * ms;
    }
    assert_int_equal((int)num(j, "within_band"), within);
    json_decref(j);
    snprintf(path, sizeof path, "%s/report/wholesteps.svg", dir);
    assert_int_equal(access(path, R_OK), 0);
    char cmd[700], line[64];
    snprintf(cmd, sizeof cmd, "ls %s/report | grep -c tmp", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    assert_int_equal(atoi(line), 0);
    free(csv);
    free(gp);
    free(md);
    /* no gnuplot: the data and the reason, no image */
    sh("rm -rf %s/report", dir);
    char err[COMET_ERRLEN];
    setenv("COMET_GNUPLOT", "/nonexistent/gnuplot", 1);
    int rc = comet_reports_build(dir, NULL, err, sizeof err);
    unsetenv("COMET_GNUPLOT");
    assert_int_equal(rc, 0);
    assert_int_not_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/report/wholesteps.csv", dir);
    assert_int_equal(access(path, R_OK), 0);
    char *h = slurp("report/index.html");
    const char *fig = strstr(h, "<figure id=\"fig-wholesteps\">");
    assert_non_null(fig);
    assert_non_null(strstr(fig, "Plot not drawn: gnuplot is not installed"));
    free(h);
}

/* Reuse only complete, young results of this machine; archive moves them. */
static void test_fresh(void **s)
{
    (void)s;
    char why[COMET_ERRLEN], err[COMET_ERRLEN], path[512];
    snprintf(path, sizeof path, "%s/machine.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    assert_non_null(m);
    const char *id = str(m, "id");
    sh("rm -f %s/results/kernels.complete", dir); /* the fixture's run finished; say it did not */
    assert_int_equal(comet_reports_results_fresh(dir, "kernels", id, 3600, why, sizeof why), 0);
    assert_non_null(strstr(why, "no completed"));
    assert_int_equal(comet_reports_results_mark(dir, "kernels", err, sizeof err), 0);
    sh("touch %s/results/*.jsonl", dir);
    assert_int_equal(comet_reports_results_fresh(dir, "kernels", id, 3600, why, sizeof why), 1);
    assert_int_equal(
        comet_reports_results_fresh(dir, "kernels", "another-machine", 3600, why, sizeof why), 0);
    assert_non_null(strstr(why, "another-machine"));
    sh("touch -d '3 days ago' %s/results/kernels-*.jsonl", dir);
    assert_int_equal(comet_reports_results_fresh(dir, "kernels", id, 3600, why, sizeof why), 0);
    assert_non_null(strstr(why, "old"));
    /* an interrupted bench (torn last line) is not reused */
    sh("touch %s/results/*.jsonl; f=$(ls %s/results/kernels-*.jsonl); printf '{\"sch' >> $f", dir,
        dir);
    assert_int_equal(comet_reports_results_fresh(dir, "kernels", id, 3600, why, sizeof why), 0);
    int moved = comet_reports_results_archive(dir, "kernels", err, sizeof err);
    assert_int_equal(moved, 1);
    assert_int_equal(comet_reports_results_fresh(dir, "kernels", id, 3600, why, sizeof why), 0);
    sh("ls %s/archive/*/kernels-*.jsonl > /dev/null", dir);
    sh("test ! -e %s/results/kernels.complete", dir);
    json_decref(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_speedup_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prediction_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_html_wellformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plots_labelled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_and_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
        cmocka_unit_test(test_three_speedups),
        cmocka_unit_test_setup_teardown(test_no_gnuplot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wholesteps_figure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_marked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
