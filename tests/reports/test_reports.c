/* The report builds from a fixture set (no measuring); numbers in summary.md
 * match values recomputed from the records; the HTML is well-formed and
 * references only files that exist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_reports.h"
#include "comet_util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static int setup(void **s)
{
    (void)s;
    const char *src = getenv("COMET_SOURCE_DIR");
    char cmd[1024];
    snprintf(dir, sizeof dir, "/tmp/comet-report-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cmd, sizeof cmd, "cp -r %s/tests/fixtures/run1/. %s/", src ? src : "..", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *name)
{
    char path[512], *data = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/report/%s", dir, name);
    if (comet_util_read_file(path, &data, &len, NULL, 0) != 0)
        return NULL;
    return data;
}

static void test_build_and_numbers(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    if (comet_reports_build(dir, err, sizeof err) != 0)
        fail_msg("build: %s", err);
    char *md = slurp("summary.md");
    assert_non_null(md);
    /* recompute one speedup from the raw records: first fused/unfused pair */
    char path[512];
    snprintf(path, sizeof path, "%s/results", dir);
    FILE *ls = popen("true", "r");
    pclose(ls);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/results/kernels-*.jsonl", dir);
    FILE *p = popen(cmd, "r");
    char file[512] = "";
    assert_non_null(fgets(file, sizeof file, p));
    pclose(p);
    file[strcspn(file, "\n")] = '\0';
    FILE *fp = fopen(file, "r");
    char *line = NULL;
    size_t cap = 0;
    double fused = 0, unfused = 0;
    json_t *fshape = NULL;
    int threads = 0;
    char op[32] = "";
    while (getline(&line, &cap, fp) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        const char *kind = json_string_value(json_object_get(r, "kind"));
        const char *var = json_string_value(json_object_get(r, "variant"));
        if (kind && !strcmp(kind, "kernel") && var && !strcmp(var, "fused") && !fused) {
            fused = json_number_value(json_object_get(json_object_get(r, "stats"), "median_s"));
            fshape = json_deep_copy(json_object_get(r, "shape"));
            threads = (int)json_integer_value(json_object_get(r, "threads"));
            snprintf(op, sizeof op, "%s", json_string_value(json_object_get(r, "op")));
        }
        json_decref(r);
    }
    rewind(fp);
    while (getline(&line, &cap, fp) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        const char *kind = json_string_value(json_object_get(r, "kind"));
        const char *var = json_string_value(json_object_get(r, "variant"));
        const char *o = json_string_value(json_object_get(r, "op"));
        if (kind && !strcmp(kind, "kernel") && var && !strcmp(var, "unfused") && o && !strcmp(o, op)
            && json_integer_value(json_object_get(r, "threads")) == threads
            && json_equal(json_object_get(r, "shape"), fshape) && !unfused)
            unfused = json_number_value(json_object_get(json_object_get(r, "stats"), "median_s"));
        json_decref(r);
    }
    free(line);
    fclose(fp);
    json_decref(fshape);
    assert_true(fused > 0 && unfused > 0);
    char want[64];
    snprintf(
        want, sizeof want, "| %.3f | %.3f | %.2fx |", fused * 1e3, unfused * 1e3, unfused / fused);
    if (!strstr(md, want))
        fail_msg("summary.md lacks the recomputed row '%s'", want);
    /* validation headline matches validate.json */
    json_t *v = json_load_file(strcat(strcpy(path, dir), "/validate.json"), 0, NULL);
    snprintf(want, sizeof want, "median relative error %.1f%%",
        100 * json_number_value(json_object_get(v, "median_rel_err")));
    json_decref(v);
    assert_non_null(strstr(md, want));
    free(md);
}

static const char *const voids[] = { "meta", "br", "img", "hr", "link", "input", NULL };

static void test_html_wellformed(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    assert_int_equal(comet_reports_build(dir, err, sizeof err), 0);
    char *h = slurp("index.html");
    assert_non_null(h);
    /* a tag stack: every opened element is closed in order (SVG included) */
    char stack[512][32];
    int depth = 0, refs = 0;
    for (char *q = h; (q = strchr(q, '<')) != NULL; q++) {
        if (!strncmp(q, "<!--", 4)) {
            q = strstr(q, "-->");
            assert_non_null(q);
            continue;
        }
        if (q[1] == '!' || q[1] == '?')
            continue;
        int closing = q[1] == '/';
        char name[32];
        int k = 0;
        for (char *c = q + 1 + closing;
             (isalnum((unsigned char)*c) || *c == ':' || *c == '-') && k < 31; c++)
            name[k++] = (char)tolower((unsigned char)*c);
        name[k] = '\0';
        char *end = strchr(q, '>');
        assert_non_null(end);
        int selfclose = end[-1] == '/';
        int isvoid = 0;
        for (int i = 0; voids[i]; i++)
            isvoid |= !strcmp(name, voids[i]);
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], name))
                fail_msg("</%s> closes <%s>", name, depth ? stack[depth - 1] : "(nothing)");
            depth--;
        } else if (!selfclose && !isvoid) {
            assert_true(depth < 512);
            strcpy(stack[depth++], name);
        }
        /* referenced files exist */
        char *href = NULL;
        if (!closing && (href = strstr(q, "href=\"")) != NULL && href < end) {
            char ref[1024];
            size_t l = strcspn(href + 6, "\"");
            snprintf(ref, sizeof ref, "%s/report/%.*s", dir, (int)l, href + 6);
            if (strncmp(href + 6, "http", 4) && strncmp(href + 6, "#", 1)) {
                if (access(ref, R_OK) != 0)
                    fail_msg("index.html references missing %s", ref);
                refs++;
            }
        }
        q = end;
    }
    assert_int_equal(depth, 0);
    assert_true(refs > 0);
    assert_non_null(strstr(h, "<svg"));
    free(h);
}

static void test_missing_input(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    assert_int_not_equal(comet_reports_build("/nonexistent/comet", err, sizeof err), 0);
    assert_non_null(strstr(err, "/nonexistent/comet"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_and_numbers),
        cmocka_unit_test(test_html_wellformed),
        cmocka_unit_test(test_missing_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
