/* util: document tree positions and validation, atomic writes, checked parsing. */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static comet_util_doc *parse(const char *text, char *err)
{
    comet_util_doc *d = NULL;
    int rc = comet_util_doc_parse("t.yaml", text, strlen(text), &d, err, COMET_ERRLEN);
    return rc ? NULL : d;
}

/* The one rule for finding config files: paths as given, $COMET_CONFIGS
 * before the source tree's presets, -ENOENT naming the last place tried. */
static void test_config_path(void **s)
{
    (void)s;
    char path[4096], dir[] = "/tmp/comet-cfg-XXXXXX", sub[4200], f[4300];
    assert_int_equal(comet_util_config_path("hw", "x/edge", path, sizeof path), 0);
    assert_string_equal(path, "x/edge");
    assert_int_equal(comet_util_config_path("hw", "my.yaml", path, sizeof path), 0);
    assert_string_equal(path, "my.yaml");
    assert_int_equal(comet_util_config_path("hw", "", path, sizeof path), -EINVAL);
    unsetenv("COMET_CONFIGS");
    assert_int_equal(comet_util_config_path("hw", "edge", path, sizeof path), 0);
    assert_string_equal(path, COMET_SOURCE_DIR "/configs/hw/edge.yaml");
    assert_int_equal(comet_util_config_path("shapes", "quick", path, sizeof path), 0);
    assert_int_equal(comet_util_config_path("hw", "no-such-system", path, sizeof path), -ENOENT);
    assert_non_null(strstr(path, "no-such-system.yaml"));
    /* a user's folder comes first; names it lacks still find the presets */
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/hw", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(f, sizeof f, "%s/edge.yaml", sub);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fputs("name: mine\n", fp);
    fclose(fp);
    setenv("COMET_CONFIGS", dir, 1);
    assert_int_equal(comet_util_config_path("hw", "edge", path, sizeof path), 0);
    assert_string_equal(path, f);
    assert_int_equal(comet_util_config_path("hw", "cloud", path, sizeof path), 0);
    assert_string_equal(path, COMET_SOURCE_DIR "/configs/hw/cloud.yaml");
    unsetenv("COMET_CONFIGS");
    unlink(f);
    rmdir(sub);
    rmdir(dir);
}

static void test_yaml_positions(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_util_doc *d
        = parse("name: edge\nclock_ghz: 1.5\nlevels:\n  - {bw: 25}\n  - bw: -3\n", err);
    assert_non_null(d);
    assert_int_equal(d->kind, COMET_DOC_MAP);
    double v;
    assert_int_equal(comet_util_doc_number(d, "clock_ghz", NULL, 0, 10, &v, err, sizeof err), 0);
    assert_true(v == 1.5);
    const comet_util_doc *lv = comet_util_doc_get(d, "levels");
    assert_non_null(lv);
    assert_int_equal(lv->kind, COMET_DOC_SEQ);
    assert_int_equal(lv->n, 2);
    assert_int_equal(
        comet_util_doc_number(lv->child[1], "bw", NULL, 0, 1e9, &v, err, sizeof err), -ERANGE);
    assert_non_null(strstr(err, "t.yaml:5"));
    assert_non_null(strstr(err, "'bw'"));
    /* missing field names the map's line */
    assert_int_equal(
        comet_util_doc_number(lv->child[0], "cap", NULL, 0, 1, &v, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "t.yaml:4"));
    const char *str;
    assert_int_equal(comet_util_doc_string(d, "name", NULL, &str, err, sizeof err), 0);
    assert_string_equal(str, "edge");
    static const char *const allowed[] = { "name", "levels", NULL };
    assert_int_not_equal(comet_util_doc_check_keys(d, allowed, err, sizeof err), 0);
    assert_non_null(strstr(err, "clock_ghz"));
    assert_non_null(strstr(err, "t.yaml:2"));
    comet_util_doc_free(d);
}

static void test_json_is_yaml(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_util_doc *d
        = parse("{\n  \"a\": 1,\n  \"b\": \"x\",\n  \"c\": [1, 2, 3],\n  \"t\": true\n}\n", err);
    assert_non_null(d);
    double v;
    int b;
    assert_int_equal(comet_util_doc_number(d, "a", NULL, 0, 10, &v, err, sizeof err), 0);
    assert_int_equal(comet_util_doc_bool(d, "t", NULL, &b, err, sizeof err), 0);
    assert_true(b);
    /* a quoted number is a string, not a number */
    assert_int_not_equal(comet_util_doc_number(d, "b", NULL, 0, 10, &v, err, sizeof err), 0);
    assert_int_equal(comet_util_doc_get(d, "c")->n, 3);
    assert_int_equal(comet_util_doc_get(d, "c")->line, 4);
    comet_util_doc_free(d);
}

static void test_bad_documents(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    assert_null(parse("a: 1\na: 2\n", err));
    assert_non_null(strstr(err, "duplicate"));
    assert_non_null(strstr(err, "t.yaml:2"));
    assert_null(parse("a: &x [1]\nb: *x\n", err));
    assert_non_null(strstr(err, "anchors"));
    assert_null(parse("a: [1, 2\nb: 3\n", err));
    assert_non_null(strstr(err, "t.yaml:"));
    assert_null(parse("", err));
    assert_null(parse("{\"a\": nan_value, \"b\": }}", err));
    comet_util_doc *d = parse("x: nan\ny: 1e999\nz: abc\n", err);
    assert_non_null(d);
    double v;
    assert_int_not_equal(comet_util_doc_number(d, "x", NULL, -1e9, 1e9, &v, err, sizeof err), 0);
    assert_int_not_equal(comet_util_doc_number(d, "y", NULL, -1e9, 1e9, &v, err, sizeof err), 0);
    assert_int_not_equal(comet_util_doc_number(d, "z", NULL, -1e9, 1e9, &v, err, sizeof err), 0);
    comet_util_doc_free(d);
    /* deep nesting is refused, not a stack overflow */
    char deep[4096];
    size_t n = 0;
    for (int i = 0; i < 1000; i++)
        deep[n++] = '[';
    deep[n] = '\0';
    assert_null(parse(deep, err));
}

static void test_atomic(void **s)
{
    (void)s;
    char dir[] = "/tmp/comet-utilXXXXXX";
    char err[COMET_ERRLEN], path[256], *data = NULL;
    size_t len = 0;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a/b/out.json", dir);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    assert_int_equal(comet_util_mkdir_p(sub, err, sizeof err), 0);
    assert_int_equal(comet_util_write_atomic(path, "first\n", 6, err, sizeof err), 0);
    /* an aborted write leaves the previous content */
    comet_util_atomic a;
    assert_int_equal(comet_util_atomic_open(&a, path, err, sizeof err), 0);
    fputs("half-writ", a.fp);
    comet_util_atomic_abort(&a);
    assert_int_equal(comet_util_read_file(path, &data, &len, err, sizeof err), 0);
    assert_string_equal(data, "first\n");
    free(data);
    /* unwritable target directory: clear error, nothing created */
    assert_int_not_equal(comet_util_write_atomic("/proc/comet-nope/x", "x", 1, err, sizeof err), 0);
    assert_non_null(strstr(err, "/proc/comet-nope/x"));
    /* a file in the way of mkdir -p */
    snprintf(sub, sizeof sub, "%s/a/b/out.json/c", dir);
    assert_int_not_equal(comet_util_mkdir_p(sub, err, sizeof err), 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_quantities(void **s)
{
    (void)s;
    double v;
    assert_int_equal(comet_util_parse_quantity("300 GB/s", COMET_UNIT_BYTES_PER_S, 0, &v), 0);
    assert_true(v == 300e9);
    assert_int_equal(comet_util_parse_quantity("200Gb/s", COMET_UNIT_BYTES_PER_S, 0, &v), 0);
    assert_true(v == 25e9);
    assert_int_equal(comet_util_parse_quantity("1.4 GHz", COMET_UNIT_HZ, 0, &v), 0);
    assert_true(fabs(v - 1.4e9) < 1);
    assert_int_equal(comet_util_parse_quantity("40 MiB", COMET_UNIT_BYTES, 0, &v), 0);
    assert_true(v == 40.0 * 1048576);
    assert_int_equal(comet_util_parse_quantity("80 GB", COMET_UNIT_BYTES, 0, &v), 0);
    assert_true(v == 80e9);
    assert_int_equal(comet_util_parse_quantity(" 5 ns ", COMET_UNIT_SECONDS, 0, &v), 0);
    assert_true(fabs(v - 5e-9) < 1e-20);
    assert_int_equal(comet_util_parse_quantity("0.8 pJ/bit", COMET_UNIT_J_PER_BYTE, 0, &v), 0);
    assert_true(fabs(v - 6.4e-12) < 1e-24);
    assert_int_equal(comet_util_parse_quantity("312 TFLOP/s", COMET_UNIT_FLOPS, 0, &v), 0);
    assert_true(v == 312e12);
    assert_int_equal(comet_util_parse_quantity("$1200", COMET_UNIT_USD, 0, &v), 0);
    assert_true(v == 1200);
    assert_int_equal(comet_util_parse_quantity("1e3 W", COMET_UNIT_WATTS, 0, &v), 0);
    assert_true(v == 1000);
    /* bare numbers only when allowed; wrong kind, garbage and signs refused */
    assert_int_equal(comet_util_parse_quantity("25", COMET_UNIT_BYTES_PER_S, 0, &v), -EDOM);
    assert_int_equal(comet_util_parse_quantity("25", COMET_UNIT_BYTES_PER_S, 1, &v), 0);
    assert_int_equal(comet_util_parse_quantity("25 GHz", COMET_UNIT_BYTES_PER_S, 1, &v), -EINVAL);
    assert_int_equal(comet_util_parse_quantity("-3 GB", COMET_UNIT_BYTES, 1, &v), -EINVAL);
    assert_int_equal(comet_util_parse_quantity("GB", COMET_UNIT_BYTES, 1, &v), -EINVAL);
    assert_int_equal(comet_util_parse_quantity("1..2 GB", COMET_UNIT_BYTES, 1, &v), -EINVAL);
    assert_int_equal(comet_util_parse_quantity("nan GB", COMET_UNIT_BYTES, 1, &v), -EINVAL);
    assert_int_equal(comet_util_parse_quantity("1e999 GB", COMET_UNIT_BYTES, 1, &v), -EINVAL);
    assert_int_equal(comet_util_parse_quantity("", COMET_UNIT_BYTES, 1, &v), -EINVAL);
    assert_string_equal(comet_util_unit_base(COMET_UNIT_BYTES_PER_S), "B/s");
}

/* The path comet re-executes: /proc/self/exe for a program that is its own
 * image; the program's path when the image is another (a tool hosting it). */
/* The build's commit: empty outside a checkout, else 12 lower-case hex
 * digits and "-dirty" when tracked files differed from that commit; and,
 * for a build of an unmodified tree where git and the source tree are at
 * hand, the checkout's HEAD itself (the commit is written at every build,
 * not once at configure time: this fails when the tests run on a build
 * older than the checkout). */
static void test_git_commit(void **s)
{
    (void)s;
    const char *c = comet_util_git_commit();
    assert_non_null(c);
    size_t n = strlen(c);
    if (n == 0)
        return;
    assert_true(n == 12 || (n == 18 && !strcmp(c + 12, "-dirty")));
    for (size_t i = 0; i < 12; i++)
        assert_non_null(strchr("0123456789abcdef", c[i]));
    if (n > 12) /* built from a modified tree: HEAD may since hold the change */
        return;
    FILE *p = popen("git -C " COMET_SOURCE_DIR " rev-parse --short=12 HEAD 2>/dev/null", "r");
    char head[64] = "";
    if (p) {
        if (!fgets(head, sizeof head, p))
            head[0] = '\0';
        pclose(p);
    }
    head[strcspn(head, "\n")] = '\0';
    if (strlen(head) == 12)
        assert_memory_equal(c, head, 12);
}

static void test_self_exe(void **s)
{
    (void)s;
    char img[4096];
    ssize_t n = readlink("/proc/self/exe", img, sizeof img - 1);
    assert_true(n > 0);
    img[n] = '\0';
    comet_util_self_init(img);
    if (!comet_util_self_hosted())
        assert_string_equal(comet_util_self_exe(), "/proc/self/exe");
    /* an argv[0] naming another program: this process is "hosted" by its image */
    comet_util_self_init("/bin/sh");
    assert_true(comet_util_self_hosted());
    char want[4096];
    assert_non_null(realpath("/bin/sh", want));
    assert_string_equal(comet_util_self_exe(), want);
    /* a bare name is looked up on PATH; an unknown one leaves /proc/self/exe */
    comet_util_self_init("comet-no-such-program-xyz");
    assert_false(comet_util_self_hosted());
    assert_string_equal(comet_util_self_exe(), "/proc/self/exe");
}

/* Every read is bounded: an endless input ends in -EFBIG with a message. */
static void test_read_bounded(void **s)
{
    (void)s;
    char *data = NULL, err[COMET_ERRLEN] = "";
    size_t len = 0;
    assert_int_equal(comet_util_read_file("/dev/zero", &data, &len, err, sizeof err), -EFBIG);
    assert_null(data);
    assert_non_null(strstr(err, "/dev/zero"));
    assert_int_equal(comet_util_read_file("/nonexistent/x", &data, &len, err, sizeof err), -ENOENT);
}

/* Progress on a stderr that is not a terminal: plain lines, no carriage
 * returns, no ANSI codes. */
static void test_progress_plain(void **s)
{
    (void)s;
    char path[] = "/tmp/comet_progress_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    comet_util_progress p;
    comet_util_progress_start(&p, "test", 3);
    p.last -= 10; /* a step due now */
    comet_util_progress_step(&p, 1, "one");
    comet_util_progress_step(&p, 2, "three");
    comet_util_progress_end(&p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(comet_util_read_file(path, &text, &len, NULL, 0), 0);
    unlink(path);
    assert_null(memchr(text, '\r', len));
    assert_null(memchr(text, '\033', len));
    assert_non_null(strstr(text, "test: 1/3"));
    assert_non_null(strstr(text, "test: 3 steps in"));
    free(text);
}

static void test_parse_numbers(void **s)
{
    (void)s;
    uint64_t v;
    double d;
    size_t z;
    assert_int_equal(comet_util_parse_u64("4096", &v), 0);
    assert_true(v == 4096);
    assert_int_equal(comet_util_parse_u64("64MiB", &v), 0);
    assert_true(v == 64ull << 20);
    assert_int_equal(comet_util_parse_u64("2K", &v), 0);
    assert_true(v == 2048);
    assert_int_equal(comet_util_parse_u64("-1", &v), -EINVAL);
    assert_int_equal(comet_util_parse_u64("", &v), -EINVAL);
    assert_int_equal(comet_util_parse_u64("12x", &v), -EINVAL);
    assert_int_equal(comet_util_parse_u64("99999999999999999999", &v), -EOVERFLOW);
    assert_int_equal(comet_util_parse_u64("17179869184G", &v), -EOVERFLOW);
    assert_int_equal(comet_util_parse_double("1.5e3", &d), 0);
    assert_true(d == 1500.0);
    assert_int_not_equal(comet_util_parse_double("nan", &d), 0);
    assert_int_not_equal(comet_util_parse_double("inf", &d), 0);
    assert_int_not_equal(comet_util_parse_double("1e999", &d), 0);
    assert_int_equal(comet_util_mul_size(SIZE_MAX / 2, 3, &z), -EOVERFLOW);
    assert_int_equal(comet_util_mul_size(1000, 1000, &z), 0);
    assert_true(z == 1000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_path),
        cmocka_unit_test(test_yaml_positions),
        cmocka_unit_test(test_json_is_yaml),
        cmocka_unit_test(test_bad_documents),
        cmocka_unit_test(test_atomic),
        cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_quantities),
        cmocka_unit_test(test_git_commit),
        cmocka_unit_test(test_self_exe),
        cmocka_unit_test(test_read_bounded),
        cmocka_unit_test(test_progress_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
