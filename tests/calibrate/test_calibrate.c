/* Calibration fits recover known parameters from noisy synthetic data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_calibrate.h"
#include "comet_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* deterministic multiplicative noise in [1-a, 1+a] */
static double noise(unsigned *s, double a)
{
    *s = *s * 1664525u + 1013904223u;
    return 1.0 + a * (2.0 * ((*s >> 8) & 0xFFFF) / 65535.0 - 1.0);
}

static void test_line_recovers_alpha_beta(void **st)
{
    (void)st;
    double x[40], y[40], alpha = 1.5e-6, beta = 2.0e-10;
    unsigned s = 7;
    for (int i = 0; i < 40; i++) {
        x[i] = pow(2, i % 26 + 2);
        y[i] = (alpha + beta * x[i]) * noise(&s, 0.03);
    }
    comet_calibrate_line l;
    assert_int_equal(comet_calibrate_fit_line(x, y, 40, &l), 0);
    assert_true(fabs(l.a - alpha) / alpha < 0.05);
    assert_true(fabs(l.b - beta) / beta < 0.05);
    assert_true(l.r2 > 0.9);
    /* non-negativity: data with a negative intercept pins it at 0 */
    for (int i = 0; i < 10; i++) {
        x[i] = i + 1;
        y[i] = 2.0 * (i + 1) - 0.5 + 0.01 * i;
    }
    assert_int_equal(comet_calibrate_fit_line(x, y, 10, &l), 0);
    assert_true(l.a >= 0 && l.b > 0);
    assert_int_not_equal(comet_calibrate_fit_line(x, y, 1, &l), 0);
}

static void test_hockney_breakpoint(void **st)
{
    (void)st;
    /* eager below 16 KiB: 0.8 us + m / 10 GB/s; rendezvous: 5 us + m / 9 GB/s */
    double x[24], y[24];
    unsigned s = 3;
    int n = 0;
    for (int e = 2; e <= 25; e++, n++) {
        x[n] = pow(2, e);
        double t = x[n] < 16384 ? 0.8e-6 + x[n] / 10e9 : 5e-6 + x[n] / 9e9;
        y[n] = t * noise(&s, 0.02);
    }
    comet_calibrate_hockney h;
    assert_int_equal(comet_calibrate_fit_hockney(x, y, (size_t)n, &h), 0);
    assert_true(h.breakpoint == 16384);
    assert_true(fabs(h.lo.a - 0.8e-6) / 0.8e-6 < 0.05);
    assert_true(fabs(h.hi.a - 5e-6) / 5e-6 < 0.05);
    assert_true(fabs(1 / h.hi.b - 9e9) / 9e9 < 0.05);
}

static void test_plateaus(void **st)
{
    (void)st;
    /* 3 levels: 200 GB/s to 1 MiB, 90 GB/s to 32 MiB, 30 GB/s beyond */
    double sz[30], bw[30], lb[8], ls[8];
    unsigned s = 11;
    int n = 0;
    for (int e = 12; e <= 29; e++, n++) {
        sz[n] = pow(2, e);
        bw[n] = (sz[n] <= (1 << 20) ? 200 : sz[n] <= (32 << 20) ? 90 : 30) * noise(&s, 0.03);
    }
    int nl = comet_calibrate_plateaus(sz, bw, (size_t)n, lb, ls, 8);
    assert_int_equal(nl, 3);
    assert_true(fabs(lb[0] - 200) < 10 && fabs(lb[1] - 90) < 5 && fabs(lb[2] - 30) < 2);
    assert_true(ls[0] == (1 << 20) && ls[1] == (32 << 20));
}

static void test_saturating(void **st)
{
    (void)st;
    double F[20], E[20], emax, fh;
    unsigned s = 5;
    for (int i = 0; i < 20; i++) {
        F[i] = pow(10, 5 + i * 0.3);
        E[i] = 0.9 * F[i] / (F[i] + 3e7) * noise(&s, 0.02);
    }
    assert_int_equal(comet_calibrate_fit_saturating(F, E, 20, &emax, &fh), 0);
    assert_true(fabs(emax - 0.9) / 0.9 < 0.05);
    assert_true(fabs(fh - 3e7) / 3e7 < 0.1);
}

static void test_err_stats(void **st)
{
    (void)st;
    double e[5] = { 0.1, -0.3, 0.2, 0.05, -0.5 }, med, p90;
    comet_calibrate_err_stats(e, 5, &med, &p90);
    assert_true(fabs(med - 0.2) < 1e-12);
    assert_true(p90 > 0.3 && p90 <= 0.5);
}

/* A profile built from synthetic records loads back through the model, and
 * its grid interpolation is exact at grid points and monotone between. */
static void test_profile_roundtrip(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cal-XXXXXX";
    int fd = mkstemp(path);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"run\",\"run_id\":\"r1\",\"machine\":{\"id\":"
        "\"abc\","
        "\"hostname\":\"h\",\"cores\":2,\"mhz\":2000,\"isa\":{\"fma\":true},\"caches\":[{\"level\":"
        "2,\"size\":1048576},"
        "{\"level\":3,\"size\":33554432}]}}\n");
    double Ms[2] = { 256, 1024 };
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++) {
                double M = Ms[a], N = Ms[b], K = Ms[c], eff = 0.5 + 0.1 * a + 0.1 * b + 0.1 * c;
                double t = 2 * M * N * K / (eff * 32 * 2e9);
                fprintf(fp,
                    "{\"schema\":\"comet.record.v1\",\"kind\":\"kernel\",\"run_id\":\"r1\",\"op\":"
                    "\"sgemm\",\"variant\":\"blas\","
                    "\"shape\":{\"M\":%g,\"N\":%g,\"K\":%g},\"threads\":1,\"stats\":{\"n\":1,"
                    "\"median_s\":%.9g,\"ci_lo_s\":%.9g,\"ci_hi_s\":%.9g,\"min_s\":%.9g,\"samples_"
                    "s\":[%.9g]}}\n",
                    M, N, K, t, t, t, t, t);
            }
    double sizes[8] = { 4096, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456 },
           bws[8] = { 200, 200, 200, 90, 90, 90, 30, 30 };
    for (int i = 0; i < 8; i++)
        fprintf(fp,
            "{\"schema\":\"comet.record.v1\",\"kind\":\"memory\",\"run_id\":\"r1\",\"op\":"
            "\"triad\",\"variant\":\"avx2\","
            "\"shape\":{\"bytes\":%g},\"threads\":1,\"gbs\":%g,\"stats\":{\"n\":1,\"median_s\":1e-"
            "3,\"ci_lo_s\":1e-3,\"ci_hi_s\":1e-3,\"min_s\":1e-3,\"samples_s\":[1e-3]}}\n",
            sizes[i], bws[i]);
    fclose(fp);
    json_t **recs = NULL;
    size_t n = 0;
    char err[COMET_ERRLEN];
    const char *paths[1] = { path };
    assert_int_equal(comet_calibrate_load_results(paths, 1, &recs, &n, err, sizeof err), 0);
    comet_model_hw hw, back;
    if (comet_calibrate_build(recs, n, &hw, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_true(fabs(hw.dram.bw * hw.clock_ghz - 30) < 1e-9);
    assert_true(fabs(comet_model_gemm_eff(&hw, 256, 256, 256, 1) - 0.5) < 1e-9);
    assert_true(fabs(comet_model_gemm_eff(&hw, 1024, 1024, 1024, 1) - 0.8) < 1e-9);
    double e1 = comet_model_gemm_eff(&hw, 300, 256, 256, 1),
           e2 = comet_model_gemm_eff(&hw, 600, 256, 256, 1);
    assert_true(e1 > 0.5 && e1 < e2 && e2 < 0.6); /* monotone between grid points */
    json_t *j = comet_model_hw_to_json(&hw);
    char *text = json_dumps(j, 0);
    if (comet_model_hw_parse("profile.json", text, strlen(text), &back, err, sizeof err) != 0)
        fail_msg("profile does not load: %s", err);
    assert_true(fabs(comet_model_gemm_eff(&back, 1024, 1024, 1024, 1) - 0.8) < 1e-9);
    assert_non_null(back.calibration);
    free(text);
    json_decref(j);
    comet_model_hw_free(&hw);
    comet_model_hw_free(&back);
    for (size_t i = 0; i < n; i++)
        json_decref(recs[i]);
    free(recs);
    /* a corrupted middle line is an error naming the line */
    fp = fopen(path, "a");
    fprintf(fp,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"memory\",\"op\":\ngarbage\n{\"schema\":\"comet."
        "record.v1\",\"kind\":\"run\"}\n");
    fclose(fp);
    assert_int_not_equal(comet_calibrate_load_results(paths, 1, &recs, &n, err, sizeof err), 0);
    assert_non_null(strstr(err, ":18"));
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_recovers_alpha_beta),
        cmocka_unit_test(test_hockney_breakpoint),
        cmocka_unit_test(test_plateaus),
        cmocka_unit_test(test_saturating),
        cmocka_unit_test(test_err_stats),
        cmocka_unit_test(test_profile_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
