/* Every JSON output names its schema, and every top-level field it writes is
 * documented in docs/FORMATS.md under that schema's heading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char *formats;
static char src[1024];

static json_t *run_json(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", getenv("COMET_BINARY"), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t e;
    json_t *j = json_loadf(p, 0, &e);
    int st = pclose(p);
    if (!j || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("'comet %s' did not print JSON (exit %d): %s", args, WEXITSTATUS(st), e.text);
    return j;
}

/* The section of FORMATS.md whose "## " heading names `schema`. */
static char *section(const char *schema)
{
    char tag[128];
    snprintf(tag, sizeof tag, "`%s`", schema);
    for (char *l = formats; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        size_t n = strcspn(l, "\n");
        if (strncmp(l, "## ", 3))
            continue;
        char *hit = strstr(l, tag);
        if (!hit || hit > l + n)
            continue;
        char *end = strstr(l + n, "\n## ");
        return strndup(l, end ? (size_t)(end - l) : strlen(l));
    }
    return NULL;
}

static void check(const char *args)
{
    json_t *j = run_json(args);
    const char *schema = json_string_value(json_object_get(j, "schema"));
    if (!schema)
        fail_msg("'comet %s': no \"schema\" field", args);
    char *sec = section(schema);
    if (!sec)
        fail_msg("'comet %s': schema %s has no section in docs/FORMATS.md", args, schema);
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        /* `key`, `key[]...` or `key.sub` */
        char key[3][128];
        snprintf(key[0], sizeof key[0], "`%s`", k);
        snprintf(key[1], sizeof key[1], "`%s[", k);
        snprintf(key[2], sizeof key[2], "`%s.", k);
        if (!strstr(sec, key[0]) && !strstr(sec, key[1]) && !strstr(sec, key[2]))
            fail_msg("'comet %s': field '%s' of %s is not documented in docs/FORMATS.md", args, k,
                schema);
    }
    free(sec);
    json_decref(j);
}

static void test_outputs_documented(void **s)
{
    (void)s;
    char a[4096];
    check("probe --json");
    check("compare edge cloud --json");
    snprintf(
        a, sizeof a, "compare %s/tests/fixtures/report %s/tests/fixtures/report --json", src, src);
    check(a);
    snprintf(a, sizeof a,
        "validate --profile %s/tests/fixtures/report/profile.json --results "
        "%s/tests/fixtures/report/results --foreign-ok --json",
        src, src);
    check(a);
    check("predict --hw edge --op gemm_softmax --shape M=256,N=256,K=64 --sweep K=32,64 --json");
    check("predict --hw edge --op gemm_softmax --shape M=256,N=256,K=64 --json");
    check("explore --hw cloud --op attention --shape heads=2,lq=128,lk=128,d=64 --json");
    check("explore --hw edge --op attention --shape heads=2,lq=256,lk=256,d=64 --sensitivity "
          "--json");
    snprintf(a, sizeof a,
        "explore --hw %s/tests/fixtures/report/profile.json --op gms --shape "
        "rows=4096,pairs=32768,segments=16,K=64,N=64 --json",
        src);
    check(a);
    check("explore --hw sn10x8-torus --workload gpt3-175b --json");
    check("predict --hw dgx-a100 --workload llama2-70b --phase decode --parallel tp=8 --json");
}

int main(void)
{
    const char *sd = getenv("COMET_SOURCE_DIR");
    if (!getenv("COMET_BINARY") || !sd)
        return 77;
    snprintf(src, sizeof src, "%s", sd);
    char path[1100], err[COMET_ERRLEN];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/docs/FORMATS.md", src);
    if (comet_util_read_file(path, &formats, &len, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_outputs_documented) };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(formats);
    return rc;
}
