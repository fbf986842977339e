/* Profiles: built from synthetic records, the grid through the model's
 * evaluator (exact at grid points, monotone between), a round trip through
 * the model's loader, bad results files, and the CLI's atomic write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_bench.h"
#include "comet_calibrate.h"
#include "comet_model.h"
#include "comet_util.h"
#include "test_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GHZ  2.0
#define PEAK 32.0

static const double axis[3] = { 64, 256, 1024 };

/* synthetic efficiency: rises with each dimension, 1 and 2 threads */
static double eff_of(int a, int b, int c, int t)
{
    return 0.4 + 0.1 * a + 0.08 * b + 0.12 * c - 0.05 * t;
}

static void stats(FILE *fp, double t)
{
    fprintf(fp,
        "\"stats\":{\"n\":1,\"median_s\":%.12g,\"ci_lo_s\":%.12g,\"ci_hi_s\":%.12g,\"min_s\":%.12g,"
        "\"samples_s\":[%.12g]}}\n",
        t, t, t, t, t);
}

/* A record's stats with a median and a best sample, and the idle gate's
 * reading of others' busy fraction while it sampled. */
static void stats_busy(FILE *fp, double med, double best, double busy)
{
    fprintf(fp,
        "\"load\":{\"busy_others\":%g,\"busy_during\":%g,\"waited_s\":0,\"gate\":\"timeout\"},"
        "\"stats\":{\"n\":2,\"median_s\":%.12g,\"ci_lo_s\":%.12g,\"ci_hi_s\":%.12g,\"min_s\":%.12g,"
        "\"samples_s\":[%.12g,%.12g]}}\n",
        busy, busy, med, best, med, best, best, med);
}

/* A results file: a run record, an sgemm grid, triad sweeps, vecops,
 * ping-pong and collectives with known parameters. busy: a VM beside other
 * tenants, whose probe reports the host's 512 MiB L3 while its share ends
 * at 32 MiB, and some of whose sample sets ran while others were busy (the
 * medians 2-3x slow, the best samples right). */
static void write_results_ex(const char *path, int busy)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"run\",\"run_id\":\"r1\",\"time\":\"t\","
        "\"cmdline\":\"comet bench\",\"machine\":{\"id\":\"abc\",\"hostname\":\"h\",\"cores\":2,"
        "\"mhz\":2000,\"memory_bytes\":8589934592,\"isa\":{\"fma\":true},\"caches\":[{\"level\":2,"
        "\"size\":1048576},{\"level\":3,\"size\":%d}]}}\n",
        busy ? 512 << 20 : 32 << 20);
    const char *rec = "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",";
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    double M = axis[a], N = axis[b], K = axis[c];
                    double time = 2 * M * N * K / (eff_of(a, b, c, t) * PEAK * (t + 1) * GHZ * 1e9);
                    fprintf(fp,
                        "%s\"kind\":\"kernel\",\"op\":\"sgemm\",\"variant\":\"blas\",\"shape\":{"
                        "\"M\":%g,\"N\":%g,\"K\":%g},\"threads\":%d,",
                        rec, M, N, K, t + 1);
                    if (busy == 2 && t == 1) /* every 2-thread point beside others */
                        stats_busy(fp, time, time, 0.5);
                    else if (busy == 1 && (a + b + c) % 2)
                        stats_busy(fp, 2.5 * time, time, 0.5);
                    else
                        stats(fp, time);
                }
    /* triad: 200 GB/s to 1 MiB, 90 to 32 MiB, 30 beyond (2 threads: x1.5) */
    for (int t = 1; t <= 2; t++)
        for (double w = 4096; w <= 1 << 29; w *= 2) {
            double g = (w <= (1 << 20) ? 200 : w <= (32 << 20) ? 90 : 30) * (t == 2 ? 1.5 : 1);
            fprintf(fp,
                "%s\"kind\":\"memory\",\"op\":\"triad\",\"variant\":\"avx2\",\"shape\":{\"bytes\":"
                "%g},\"threads\":%d,",
                rec, w, t);
            if (busy && w >= (64 << 20) && t == 2)
                stats_busy(fp, 3 * w / (g * 1e9), w / (g * 1e9), 0.6);
            else
                stats(fp, w / (g * 1e9));
        }
    /* fill (stores alone): 300 GB/s to 1 MiB, 150 to 32 MiB, 60 beyond (2
     * threads: x1.25); the busy VM's results have none (older runs) */
    for (int t = 1; t <= 2 && !busy; t++)
        for (double w = 4096; w <= 1 << 29; w *= 2) {
            double g = (w <= (1 << 20) ? 300 : w <= (32 << 20) ? 150 : 60) * (t == 2 ? 1.25 : 1);
            fprintf(fp,
                "%s\"kind\":\"memory\",\"op\":\"fill\",\"variant\":\"blas\",\"shape\":{"
                "\"bytes\":%g},\"threads\":%d,",
                rec, w, t);
            stats(fp, w / (g * 1e9));
        }
    const char *vops[] = { "exp", "max", "sum", "sub", "div", "mul", "sqrt" };
    for (int v = 0; v < 7; v++)
        for (int g = 0; g < 2; g++) {
            double ne = g ? 1 << 24 : 65536, ns = (v + 1) * 0.1 * (g ? 3 : 1);
            fprintf(fp,
                "%s\"kind\":\"vecop\",\"op\":\"%s\",\"variant\":\"avx2\",\"shape\":{\"n\":%g},"
                "\"threads\":1,\"params\":{\"regime\":\"%s\"},",
                rec, vops[v], ne, g ? "stream" : "cache");
            stats(fp, ne * ns * 1e-9);
        }
    /* softmax rows: 30 ns a row plus 0.2 ns an element */
    for (int w = 16; w <= 256; w *= 4) {
        double rows = 65536 / w, ns_row = 30 + 0.2 * w;
        fprintf(fp,
            "%s\"kind\":\"vecop\",\"op\":\"softmax_row\",\"variant\":\"avx2\","
            "\"shape\":{\"n\":65536,\"width\":%d},\"threads\":1,\"params\":{\"regime\":"
            "\"cache\"},\"ns_per_row\":%.12g,",
            rec, w, ns_row);
        stats(fp, rows * ns_row * 1e-9);
        /* layernorm rows: 40 ns a row plus 0.1 ns an element */
        ns_row = 40 + 0.1 * w;
        fprintf(fp,
            "%s\"kind\":\"vecop\",\"op\":\"layernorm_row\",\"variant\":\"avx2\","
            "\"shape\":{\"n\":65536,\"width\":%d},\"threads\":1,\"params\":{\"regime\":"
            "\"cache\"},\"ns_per_row\":%.12g,",
            rec, w, ns_row);
        stats(fp, rows * ns_row * 1e-9);
        /* the distributed LayerNorm's local passes: 50 ns a row plus 1 ns an element */
        ns_row = 50 + 1.0 * w;
        fprintf(fp,
            "%s\"kind\":\"vecop\",\"op\":\"dist_layernorm_row\",\"variant\":\"avx2\","
            "\"shape\":{\"n\":65536,\"width\":%d},\"threads\":1,\"params\":{\"regime\":"
            "\"cache\"},\"ns_per_row\":%.12g,",
            rec, w, ns_row);
        stats(fp, rows * ns_row * 1e-9);
    }
    /* the epilogue's wide rows from an L2 tile: 30 ns a row plus 0.25 ns an
     * element cached; streamed, 40% of the stores' time at the 1-thread DRAM
     * triad (30 GB/s) on top: 0.6 of it hidden */
    for (int w = 1024; w <= 4096; w *= 4)
        for (int g = 0; g < 2; g++) {
            const double ns_row = 30 + 0.25 * w + (g ? 0.4 * w * 4 / 30.0 : 0);
            fprintf(fp,
                "%s\"kind\":\"vecop\",\"op\":\"softmax_row_store\",\"variant\":\"avx2\","
                "\"shape\":{\"n\":%d,\"width\":%d},\"threads\":1,\"params\":{\"regime\":"
                "\"%s\"},\"ns_per_row\":%.12g,",
                rec, 64 * w, w, g ? "stream" : "cache", ns_row);
            stats(fp, 64 * ns_row * 1e-9);
        }
    for (int e = 2; e <= 22; e++) {
        double m = pow(2, e), t = m < 16384 ? 0.3e-6 + m * 1e-10 : 4e-6 + m * 1.25e-10;
        fprintf(fp,
            "%s\"kind\":\"p2p\",\"op\":\"pingpong\",\"variant\":\"auto\",\"shape\":{\"bytes\":%g,"
            "\"count\":%g},\"threads\":1,\"ranks\":2,\"link\":\"shm\",\"valid\":true,",
            rec, m, m / 4);
        stats(fp, t);
        /* recursive doubling at p = 2: alpha + n (beta + gamma) */
        fprintf(fp,
            "%s\"kind\":\"collective\",\"op\":\"allreduce\",\"variant\":\"recursive_doubling\","
            "\"shape\":{\"bytes\":%g,\"count\":%g},\"threads\":1,\"ranks\":2,\"link\":\"shm\","
            "\"valid\":true,",
            rec, m, m / 4);
        stats(fp, 1e-6 + m * 3e-10);
    }
    fclose(fp);
}

/* Loads a results file and builds a profile from it (fails the test on error). */
static void build_profile_sum(
    const char *path, comet_results_set *set, comet_model_hw *hw, comet_calibrate_summary *sum)
{
    char err[COMET_ERRLEN];
    const char *paths[1] = { path };
    assert_int_equal(
        comet_calibrate_load_results_src(paths, 1, set, NULL, NULL, err, sizeof err), 0);
    if (comet_calibrate_build(set->recs, set->n, NULL, 0, hw, sum, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void build_profile(const char *path, comet_results_set *set, comet_model_hw *hw)
{
    comet_calibrate_summary sum;
    build_profile_sum(path, set, hw, &sum);
}

/* An sgemm record of a variant (params: "" or a params member and comma). */
static void sgemm_record(
    FILE *fp, const char *variant, double M, double N, double K, int T, const char *params)
{
    fprintf(fp,
        "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"kernel\","
        "\"op\":\"sgemm\",\"variant\":\"%s\",\"shape\":{\"M\":%g,\"N\":%g,\"K\":%g},"
        "\"threads\":%d,%s",
        variant, M, N, K, T, params);
}

static void write_results(const char *path)
{
    write_results_ex(path, 0);
}

/* A fresh temporary file (path: a mkstemp template) holding the results
 * write_results_ex writes. */
static void temp_results(char *path, int busy)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_results_ex(path, busy);
}

/* The link fits (calibrate --links-only) of the results file at path. */
static json_t *fit_links(const char *path, comet_results_set *set)
{
    char err[COMET_ERRLEN];
    const char *paths[1] = { path };
    if (comet_calibrate_load_results_src(paths, 1, set, NULL, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    json_t *lf = NULL;
    if (comet_calibrate_links(set->recs, set->n, &lf, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    return lf;
}

/* A fresh temporary results file (path: a mkstemp template) opened for
 * writing, holding a run record of a 2-core machine: the links tests' start. */
static FILE *links_file(char *path)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"run\",\"run_id\":\"r1\",\"time\":\"t\","
        "\"cmdline\":\"comet bench\",\"machine\":{\"id\":\"abc\",\"hostname\":\"h\","
        "\"cores\":2}}\n");
    return fp;
}

/* Shared-memory records in two core placements (a VM host keeps two vCPUs
 * on one cache, then on two): each placement is fitted on its own, and a
 * distributed record is predicted over the fits of the placement it ran in
 * (comet_model_record_link); another link is never relabelled. */
static void test_links_by_placement(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cal-XXXXXX";
    FILE *fp = links_file(path);
    /* near: 40 ns core to core, alpha 1 us, 0.3 ns a byte; apart: 160 ns,
     * alpha 3 us, 0.9 ns a byte; one record of each placement is mixed
     * (its readings straddle the threshold; its median decides) */
    for (int apart = 0; apart < 2; apart++)
        for (int e = 2; e <= 22; e++) {
            const double m = pow(2, e), a = apart ? 3e-6 : 1e-6, b = apart ? 9e-10 : 3e-10;
            const double c0 = apart ? 158 : 40, c1 = e == 10 ? (apart ? 45 : 170) : c0 + 3;
            fprintf(fp,
                "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"collective\","
                "\"op\":\"allreduce\",\"variant\":\"auto\",\"shape\":{\"bytes\":%g,"
                "\"count\":%g},\"threads\":1,\"ranks\":2,\"link\":\"shm\",\"valid\":true,"
                "\"c2c_ns\":[%g,%g,%g],",
                m, m / 4, c0, c1, c0 + 1);
            stats(fp, a + m * b);
            /* a TCP link whose readings vary: never split by placement */
            fprintf(fp,
                "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"collective\","
                "\"op\":\"allreduce\",\"variant\":\"auto\",\"shape\":{\"bytes\":%g,"
                "\"count\":%g},\"threads\":1,\"ranks\":2,\"link\":\"tcp:dl0\","
                "\"valid\":true,\"c2c_ns\":[%g],",
                m, m / 4, apart ? 400.0 : 40.0);
            stats(fp, 100e-6 + m * 16e-9);
        }
    fclose(fp);
    comet_results_set set = { 0 };
    comet_calibrate_source *src = NULL;
    size_t nsrc = 0;
    char err[COMET_ERRLEN];
    const char *paths[1] = { path };
    if (comet_calibrate_load_results_src(paths, 1, &set, &src, &nsrc, err, sizeof err) != 0)
        fail_msg("%s", err);
    json_t *lf = NULL;
    if (comet_calibrate_links(set.recs, set.n, &lf, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    const json_t *ls = json_array_get(json_object_get(lf, "link_states"), 0);
    assert_non_null(ls);
    assert_string_equal(json_string_value(json_object_get(ls, "link")), "shm");
    assert_true(json_number_value(json_object_get(ls, "c2c_floor_ns")) == 40);
    assert_int_equal(json_integer_value(json_object_get(ls, "records")), 42);
    assert_int_equal(json_integer_value(json_object_get(ls, "records_apart")), 21);
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.calibration = json_pack("{s:O}", "fits", lf);
    /* each placement's fit has its own parameters */
    comet_model_links near, apart, tcp;
    assert_int_equal(comet_model_links_for_transport(&hw, "shm", &near), 0);
    assert_int_equal(comet_model_links_for_transport(&hw, "shm/apart", &apart), 0);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:dl0", &tcp), 0);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:dl0/apart", &tcp), -ENOENT);
    assert_true(near.nfits >= 1 && apart.nfits >= 1);
    const comet_model_coll_fit *fn = &near.fits[near.nfits - 1], *fa = &apart.fits[apart.nfits - 1];
    if (fabs(fn->beta_s + fn->gamma_s - 3e-10) > 0.05 * 3e-10
        || fabs(fa->beta_s + fa->gamma_s - 9e-10) > 0.05 * 9e-10)
        fail_msg("per-byte near %g apart %g, want 3e-10 and 9e-10", fn->beta_s + fn->gamma_s,
            fa->beta_s + fa->gamma_s);
    /* a record's link: by the median of its readings against twice the floor */
    char out[32];
    const double r_near[] = { 41, 44 }, r_apart[] = { 150, 170, 44 }, r_mixed[] = { 44, 170 };
    assert_int_equal(comet_model_record_link(&hw, "shm", r_near, 2, out, sizeof out), 0);
    assert_string_equal(out, "shm");
    assert_int_equal(comet_model_record_link(&hw, "shm", r_apart, 3, out, sizeof out), 1);
    assert_string_equal(out, "shm/apart");
    assert_int_equal(comet_model_record_link(&hw, "", r_apart, 3, out, sizeof out), 1);
    assert_string_equal(out, "shm/apart");
    /* the median of two straddling readings (107) is above 80 ns */
    assert_int_equal(comet_model_record_link(&hw, "shm", r_mixed, 2, out, sizeof out), 1);
    assert_int_equal(comet_model_record_link(&hw, "shm", NULL, 0, out, sizeof out), 0);
    assert_string_equal(out, "shm");
    assert_int_equal(comet_model_record_link(&hw, "tcp:dl0", r_apart, 3, out, sizeof out), 0);
    assert_string_equal(out, "tcp:dl0");
    /* apart, but a profile without fits of that placement: said, not used */
    json_t *only = json_deep_copy(lf);
    json_t *co = json_object_get(only, "collectives");
    for (size_t i = json_array_size(co); i-- > 0;)
        if (!strcmp(json_string_value(json_object_get(json_array_get(co, i), "link")), "shm/apart"))
            json_array_remove(co, i);
    json_decref(hw.calibration);
    hw.calibration = json_pack("{s:o}", "fits", only);
    assert_int_equal(comet_model_record_link(&hw, "shm", r_apart, 3, out, sizeof out), 2);
    assert_string_equal(out, "shm");
    assert_int_equal(comet_model_c2c_apart(r_apart, 3, 0), 0); /* no floor: not apart */
    json_decref(hw.calibration);
    json_decref(lf);
    comet_results_set_free(&set);
    comet_calibrate_sources_free(src, nsrc);
    unlink(path);
}

/* A TCP link whose time law changes at known switches: the transport's
 * eager -> rendezvous step (its ping-pong shows it between 16 and 32 KiB)
 * and MPICH's own algorithm switch (MPI_Allgatherv: recursive doubling
 * below 512 KiB gathered, the 32 KiB-pipelined ring at or above). Measured,
 * as scripts/scale-out.sh measures, at 4 B..16 KiB, 64 KiB, 256 KiB, 1 and
 * 2 MiB, the fit must keep each law to its own range: a message of 128 KiB
 * a rank (unmeasured, between 64 and 256 KiB) costs the rendezvous law of
 * recursive doubling, not a line drawn to the ring's points. */
static void test_links_known_switches(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cal-XXXXXX";
    FILE *fp = links_file(path);
    const double eager_a = 150e-6, rndv_a = 750e-6, beta = 17e-9, piece = 32768;
    for (int e = 2; e <= 21; e++) {
        const double m = pow(2, e);
        const double one = m < 24576 ? eager_a + m * beta : rndv_a + m * beta;
        fprintf(fp,
            "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"p2p\","
            "\"op\":\"pingpong\",\"variant\":\"auto\",\"shape\":{\"bytes\":%g,\"count\":%g},"
            "\"threads\":1,\"ranks\":2,\"link\":\"tcp:dl1\",\"valid\":true,",
            m, m / 4);
        stats(fp, one);
        if ((e > 14 && e != 16 && e != 18 && e < 20) || e == 17)
            continue; /* the all-gather's sizes; 128 KiB is not measured */
        /* recursive doubling: one exchange of the block; the ring: the
         * block in 32 KiB pieces, each a rendezvous message */
        const double t = 2 * m < 524288 ? one : ceil(m / piece) * (rndv_a + piece * beta);
        fprintf(fp,
            "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"collective\","
            "\"op\":\"allgatherv\",\"variant\":\"auto\",\"shape\":{\"bytes\":%g,"
            "\"count\":%g},\"threads\":1,\"ranks\":2,\"link\":\"tcp:dl1\",\"valid\":true,",
            m, m / 4);
        stats(fp, t);
    }
    fclose(fp);
    comet_results_set set = { 0 };
    json_t *lf = fit_links(path, &set);
    /* the ring's piece starts at MPICH's switch itself (256 KiB a rank at p = 2) */
    const json_t *fit = json_array_get(json_object_get(lf, "collectives"), 0);
    assert_string_equal(json_string_value(json_object_get(fit, "op")), "allgatherv");
    const json_t *segs = json_object_get(fit, "segments");
    int at_switch = 0;
    for (size_t i = 0; i < json_array_size(segs); i++)
        at_switch
            |= json_number_value(json_object_get(json_array_get(segs, i), "from_bytes")) == 262144;
    assert_true(at_switch);
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.clock_ghz = 1;
    hw.calibration = json_pack("{s:O}", "fits", lf);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:dl1", &hw.links), 0);
    /* 128 KiB a rank: the model's all-gather size is the gathered total */
    const double want = rndv_a + 131072 * beta,
                 got
        = comet_model_coll_time(&hw, COMET_MODEL_ALLGATHERV, 2, 262144, 0).cycles * 1e-9;
    if (fabs(got - want) > 0.05 * want)
        fail_msg("allgatherv of 128 KiB a rank: %g s, want %g s (rendezvous, recursive doubling)",
            got, want);
    /* and at the measured sizes either side, each law */
    const double lo = comet_model_coll_time(&hw, COMET_MODEL_ALLGATHERV, 2, 2 * 4096, 0).cycles,
                 hi = comet_model_coll_time(&hw, COMET_MODEL_ALLGATHERV, 2, 2 * 1048576, 0).cycles;
    assert_true(fabs(lo * 1e-9 - (eager_a + 4096 * beta)) < 0.05 * (eager_a + 4096 * beta));
    assert_true(
        fabs(hi * 1e-9 - 32 * (rndv_a + piece * beta)) < 0.05 * 32 * (rndv_a + piece * beta));
    json_decref(hw.calibration);
    json_decref(lf);
    comet_results_set_free(&set);
    unlink(path);
}

/* The paired exchange (bench collectives --colls exchange) is fitted per
 * link apart from its ping-pong: synthetic records with known parameters
 * (one-way 40 us + n / 100 MB/s; the exchange 300 us + n / 60 MB/s up to
 * 32 KiB, 900 us + n / 55 MB/s from 64 KiB) come back from calibrate and
 * the model's exchange, within 2%; the ping-pong's own fit is unchanged by
 * them and no collective fit takes them in. */
static void test_links_exchange_fit(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cal-XXXXXX";
    FILE *fp = links_file(path);
    const double pa = 40e-6, pb = 10e-9, xa0 = 300e-6, xb0 = 1 / 60e6, xa1 = 900e-6, xb1 = 1 / 55e6;
    for (int e = 3; e <= 21; e++) {
        const double m = pow(2, e);
        for (int x = 0; x < 2; x++) {
            fprintf(fp,
                "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"p2p\","
                "\"op\":\"%s\",\"variant\":\"auto\",\"shape\":{\"bytes\":%g,\"count\":%g},"
                "\"threads\":1,\"ranks\":2,\"link\":\"tcp:xl1\",\"valid\":true,",
                x ? "exchange" : "pingpong", m, m / 4);
            stats(fp, x ? (m < 65536 ? xa0 + m * xb0 : xa1 + m * xb1) : pa + m * pb);
        }
    }
    fclose(fp);
    comet_results_set set = { 0 };
    json_t *lf = fit_links(path, &set);
    const json_t *xs = json_object_get(lf, "exchange");
    assert_int_equal(json_array_size(xs), 1);
    const json_t *fit = json_array_get(xs, 0);
    assert_string_equal(json_string_value(json_object_get(fit, "op")), "exchange");
    assert_string_equal(json_string_value(json_object_get(fit, "link")), "tcp:xl1");
    assert_non_null(json_object_get(fit, "heldout"));
    /* the ping-pong's fit is the ping-pong's alone; no collective fit */
    const json_t *p2p = json_array_get(json_object_get(lf, "p2p"), 0);
    assert_string_equal(json_string_value(json_object_get(p2p, "op")), "pingpong");
    const json_t *seg = json_array_get(json_object_get(p2p, "segments"), 0);
    assert_true(fabs(json_number_value(json_object_get(seg, "beta_ns_per_byte")) - 10) < 0.1);
    assert_false(json_is_array(json_object_get(lf, "collectives")));
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.clock_ghz = 1;
    hw.calibration = json_pack("{s:O}", "fits", lf);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:xl1", &hw.links), 0);
    for (int e = 3; e <= 21; e++) {
        const double m = pow(2, e), want = m < 65536 ? xa0 + m * xb0 : xa1 + m * xb1;
        const double got = comet_model_links_exchange_s(&hw.links, m);
        if (fabs(got - want) > 0.02 * want)
            fail_msg("exchange of %g B: %g s, want %g s", m, got, want);
    }
    /* another link has no exchange fit: 0 */
    comet_model_links none;
    memset(&none, 0, sizeof none);
    assert_true(comet_model_links_exchange_s(&none, 1e5) == 0);
    json_decref(hw.calibration);
    json_decref(lf);
    comet_results_set_free(&set);
    unlink(path);
}

static void test_profile_build_and_roundtrip(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cal-XXXXXX";
    temp_results(path, 0);
    comet_results_set set = { 0 };
    size_t nsrc = 0;
    comet_calibrate_source *src = NULL;
    char err[COMET_ERRLEN];
    const char *paths[1] = { path };
    assert_int_equal(
        comet_calibrate_load_results_src(paths, 1, &set, &src, &nsrc, err, sizeof err), 0);
    const comet_results_record *recs = set.recs;
    const size_t n = set.n;
    assert_int_equal(nsrc, 1);
    comet_model_hw hw, back;
    comet_calibrate_summary sum;
    if (comet_calibrate_build(recs, n, src, nsrc, &hw, &sum, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* memory levels in bytes/cycle: DRAM and LLC with 2 threads, L2 with 1 */
    assert_true(fabs(hw.dram.bw * GHZ - 45) < 1e-3);
    assert_true(fabs(hw.gb.bw * GHZ - 135) < 1e-3);
    assert_true(fabs(hw.lb.bw * GHZ - 200) < 1e-3);
    assert_true(hw.lb.capacity == 1048576 && hw.gb.capacity == 33554432);
    /* stores alone: all cores at LLC/2 and DRAM's plateau, one core's beside */
    assert_true(fabs(hw.gb.write_bw * GHZ - 187.5) < 1e-3);
    assert_true(fabs(hw.gb.core_write_bw * GHZ - 150) < 1e-3);
    assert_true(fabs(hw.dram.write_bw * GHZ - 75) < 1e-3);
    assert_true(fabs(hw.dram.core_write_bw * GHZ - 60) < 1e-3);
    /* vector ops: in-cache cycles per element; add <- sub */
    assert_true(fabs(hw.vop_cycles[COMET_MODEL_VOP_EXP] - 0.1 * GHZ) < 1e-6 * GHZ);
    assert_true(fabs(hw.vop_cycles[COMET_MODEL_VOP_ADD] - 0.4 * GHZ) < 1e-6);
    /* the row's fixed cost: the intercept, 30 ns */
    if (fabs(hw.row_cycles - 30 * GHZ) > 1e-6 * 30 * GHZ)
        fail_msg("row_cycles %g, want %g", hw.row_cycles, 30 * GHZ);
    if (fabs(hw.ln_row_cycles - 40 * GHZ) > 1e-6 * 40 * GHZ)
        fail_msg("ln_row_cycles %g, want %g", hw.ln_row_cycles, 40 * GHZ);
    /* the rows' per-element cost: the slope, 0.2 and 0.1 ns */
    if (fabs(hw.row_elem_cycles - 0.2 * GHZ) > 1e-6
        || fabs(hw.ln_row_elem_cycles - 0.1 * GHZ) > 1e-6)
        fail_msg("row_elem_cycles %g / %g, want %g / %g", hw.row_elem_cycles, hw.ln_row_elem_cycles,
            0.2 * GHZ, 0.1 * GHZ);
    /* the distributed LayerNorm's passes: 50 ns a row, 1 ns an element */
    if (fabs(hw.dist_ln_row_cycles - 50 * GHZ) > 1e-6 * 50 * GHZ
        || fabs(hw.dist_ln_elem_cycles - 1.0 * GHZ) > 1e-6)
        fail_msg("dist_ln %g / %g, want %g / %g", hw.dist_ln_row_cycles, hw.dist_ln_elem_cycles,
            50 * GHZ, 1.0 * GHZ);
    /* the row-pass table: the narrow rows' and the wide rows' cached points,
     * and the stores' hidden share */
    assert_int_equal(hw.row_tab_n[0], 5);
    assert_int_equal(hw.row_tab_n[1], 3);
    assert_true(hw.row_tab_w[0][3] == 1024 && hw.row_tab_w[0][4] == 4096);
    if (fabs(hw.row_tab_cycles[0][3] - (30 + 0.25 * 1024) * GHZ) > 1e-6 * hw.row_tab_cycles[0][3])
        fail_msg("row_tab 1024: %g, want %g", hw.row_tab_cycles[0][3], (30 + 0.25 * 1024) * GHZ);
    if (fabs(hw.store_hidden - 0.6) > 1e-6)
        fail_msg("store_hidden %g, want 0.6", hw.store_hidden);
    /* between two widths, the line through them; at one, its point */
    assert_true(fabs(comet_model_row_pass_cycles(&hw, 0, 2048)
                    - (2 * hw.row_tab_cycles[0][3] + hw.row_tab_cycles[0][4]) / 3)
        < 1e-6 * hw.row_tab_cycles[0][4]);
    assert_true(fabs(comet_model_row_pass_cycles(&hw, 1, 64) - (40 + 0.1 * 64) * GHZ) < 1e-6);
    /* the link: alpha of small messages, bandwidth of large ones */
    assert_true(fabs(hw.cluster_net.startup - 0.3e-6 * GHZ * 1e9) < 0.05 * 0.3e-6 * GHZ * 1e9);
    assert_true(fabs(hw.cluster_net.link_bw - 8 / GHZ) < 0.05 * 8 / GHZ);
    assert_true(sum.p2p_breakpoint == 16384);
    assert_int_equal(sum.collinear, 1);
    assert_int_equal(sum.coll_fits, 1);
    assert_true(sum.gemm_heldout > 0 && sum.mem_heldout > 0 && sum.coll_heldout > 0);
    assert_true(sum.coll_med < 0.02); /* noise-free data: a line predicts itself */
    /* grid: exact at grid points, monotone between them (model's evaluator) */
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++)
                    assert_true(fabs(comet_model_gemm_eff(&hw, axis[a], axis[b], axis[c], t + 1)
                                    - eff_of(a, b, c, t))
                        < 1e-9);
    double prev = comet_model_gemm_eff(&hw, 64, 256, 256, 1);
    for (double m = 70; m <= 1024; m *= 1.1) {
        double e = comet_model_gemm_eff(&hw, m, 256, 256, 1);
        assert_true(e >= prev - 1e-12);
        prev = e;
    }
    /* round trip: the file the CLI writes loads through the model */
    char ppath[64];
    snprintf(ppath, sizeof ppath, "%s.profile.json", path);
    assert_int_equal(comet_calibrate_write_profile(&hw, ppath, err, sizeof err), 0);
    if (comet_model_hw_load(ppath, &back, err, sizeof err) != 0)
        fail_msg("profile does not load: %s", err);
    assert_true(fabs(comet_model_gemm_eff(&back, 1024, 1024, 1024, 2) - eff_of(2, 2, 2, 1)) < 1e-9);
    assert_true(fabs(back.dram.bw - hw.dram.bw) < 1e-9 && back.cores == 2);
    assert_true(back.row_tab_n[0] == 5 && back.row_tab_n[1] == 3
        && fabs(back.row_tab_cycles[0][4] - hw.row_tab_cycles[0][4]) < 1e-9
        && fabs(back.store_hidden - hw.store_hidden) < 1e-12);
    assert_non_null(back.calibration);
    const json_t *prov = json_object_get(back.calibration, "provenance");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(prov, "machine"), "id")), "abc");
    assert_non_null(json_object_get(prov, "comet_commit"));
    assert_int_equal(json_array_size(json_object_get(prov, "runs")), 1);
    const json_t *fits = json_object_get(back.calibration, "fits");
    assert_non_null(json_object_get(json_object_get(fits, "gemm"), "heldout"));
    const json_t *coll = json_array_get(json_object_get(fits, "collectives"), 0);
    assert_non_null(json_object_get(coll, "collinear"));
    /* the links alone: the same link figures as the whole profile's */
    json_t *lf = NULL;
    comet_calibrate_summary ls;
    if (comet_calibrate_links(recs, n, &lf, &ls, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_true(fabs(ls.p2p_bw_gbs - sum.p2p_bw_gbs) < 1e-12 && ls.p2p_breakpoint == 16384);
    assert_true(fabs(ls.p2p_alpha_us - sum.p2p_alpha_us) < 1e-12 && ls.coll_fits == 1);
    assert_non_null(json_object_get(lf, "link_joint"));
    json_decref(lf);
    /* without a ping-pong or collective record: refused, nothing returned */
    size_t nl = 0;
    comet_results_record *other = malloc(n * sizeof *other);
    assert_non_null(other);
    for (size_t i = 0; i < n; i++)
        if (recs[i].kind != COMET_RESULTS_P2P && recs[i].kind != COMET_RESULTS_COLLECTIVE)
            other[nl++] = recs[i]; /* a shallow copy: set owns the records */
    assert_true(nl > 0 && nl < n);
    lf = (json_t *)1;
    assert_int_equal(comet_calibrate_links(other, nl, &lf, NULL, err, sizeof err), -EINVAL);
    assert_null(lf);
    free(other);
    assert_non_null(strstr(err, "no ping-pong or collective records"));
    comet_model_hw_free(&hw);
    comet_model_hw_free(&back);
    comet_results_set_free(&set);
    comet_calibrate_sources_free(src, nsrc);
    unlink(ppath);
    unlink(path);
}

static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
    char *d = NULL;
    size_t l;
    char err[COMET_ERRLEN];
    return comet_util_read_file(path, &d, &l, err, sizeof err) == 0 ? d : NULL;
}

/* A corrupted middle line is an error naming file:line; a torn last line
 * is skipped with a warning naming it; no run record is an error. */
/* A VM beside busy tenants: the LLC comes from the sweep (the first level
 * past the L2s, 32 MiB, not the probe's 512 MiB), the levels' bandwidths
 * from the best samples, the grid from the best samples of the sets that
 * ran beside others: the same figures as the quiet machine's. */
static void test_profile_busy_vm(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-calb-XXXXXX";
    temp_results(path, 1);
    comet_results_set set = { 0 };
    comet_model_hw hw;
    build_profile(path, &set, &hw);
    /* the edge between the 32 MiB and 64 MiB points of the sweep */
    const double edge = sqrt(32.0 * 64.0) * (1 << 20);
    if (fabs(hw.gb.capacity - edge) > 1e-6 * edge)
        fail_msg("LLC %g B, want %g B", hw.gb.capacity, edge);
    assert_true(fabs(hw.dram.bw * GHZ - 45) < 1e-3);
    assert_true(fabs(hw.gb.bw * GHZ - 135) < 1e-3);
    /* no fill sweep: stores alone unknown, the model halves the triad's */
    assert_true(hw.dram.write_bw == 0 && hw.gb.write_bw == 0 && hw.dram.core_write_bw == 0);
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++)
                    assert_true(fabs(comet_model_gemm_eff(&hw, axis[a], axis[b], axis[c], t + 1)
                                    - eff_of(a, b, c, t))
                        < 1e-9);
    comet_model_hw_free(&hw);
    comet_results_set_free(&set);
    unlink(path);
}

/* The share of a lone core each of 2 busy cores delivers (the grid's 2- against
 * 1-thread points) is in the summary; the 2-thread records timed beside
 * other work are counted when they are most of them (all: 27 of 27; the
 * busy VM's odd points: 13 of 27, not flagged; a quiet run: 0). */
static void test_core_share_loaded(void **st)
{
    (void)st;
    for (int busy = 0; busy <= 2; busy++) {
        char path[] = "/tmp/comet-calb-XXXXXX";
        temp_results(path, busy);
        comet_results_set set = { 0 };
        comet_model_hw hw;
        comet_calibrate_summary sum;
        build_profile_sum(path, &set, &hw, &sum);
        assert_int_equal(sum.gemm_loaded_multi, busy == 2 ? 27 : 0);
        const double want = comet_model_gms_core_share(&hw, 2);
        assert_true(want > 0 && want < 1);
        assert_true(fabs(sum.gemm_core_share - want) < 1e-12);
        comet_model_hw_free(&hw);
        comet_results_set_free(&set);
        unlink(path);
    }
}

/* Cold reads: the small rows (M = 8) timed hot (blas) and with B from DRAM
 * (blas_cold) add a known 0.2 + 0.1 b + 0.05 c cycles per byte of B at the
 * (N, K) point (b, c); one point has no cold record (filled by its nearest
 * measured one). Two fused_cold decode attention records at 0.5 cycles per
 * byte of K and V give 0.5. Both round-trip through the profile file; the
 * model's interpolation is exact at the points and between their values. */
static void test_profile_cold(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-calc-XXXXXX", err[COMET_ERRLEN];
    temp_results(path, 0);
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    const double clk = GHZ * 1e9;
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 3; c++) {
            const double N = axis[b], K = axis[c], hot = 1e-6 * (1 + b + 2 * c);
            sgemm_record(fp, "blas", 8, N, K, 1, "");
            stats(fp, hot);
            if (b == 2 && c == 2)
                continue; /* a hole */
            sgemm_record(fp, "blas_cold", 8, N, K, 1, "\"params\":{\"cold_bytes\":67108864},");
            stats(fp, hot + (0.2 + 0.1 * b + 0.05 * c) * 4 * N * K / clk);
        }
    for (int h = 0; h < 2; h++) {
        const double B = 4, H = 8 << h, Lk = 512, d = 64, by = 2 * 4 * B * H * Lk * d;
        fprintf(fp,
            "{\"schema\":\"comet.record.v1\",\"run_id\":\"r1\",\"kind\":\"kernel\","
            "\"op\":\"attention\",\"variant\":\"fused_cold\",\"shape\":{\"B\":%g,\"H\":%g,"
            "\"Lq\":1,\"Lk\":%g,\"d\":%g,\"causal\":1},\"threads\":1,\"valid\":true,",
            B, H, Lk, d);
        stats(fp, 0.5 * by / clk);
    }
    fclose(fp);
    comet_results_set set = { 0 };
    comet_model_hw hw, back;
    build_profile(path, &set, &hw);
    assert_int_equal(hw.cold_nn, 3);
    assert_int_equal(hw.cold_nk, 3);
    assert_true(hw.cold_rows == 8);
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 3; c++) {
            /* the hole takes (1024, 256)'s or (256, 1024)'s: equally near */
            const double want
                = b == 2 && c == 2 ? 0.2 + 0.1 * 2 + 0.05 * 1 : 0.2 + 0.1 * b + 0.05 * c;
            const double alt = 0.2 + 0.1 * 1 + 0.05 * 2, got = hw.cold_cpb[b * 3 + c];
            if (!(fabs(got - want) < 1e-9 || (b == 2 && c == 2 && fabs(got - alt) < 1e-9)))
                fail_msg("cold read (%g, %g): %g cycles/B, want %g", axis[b], axis[c], got, want);
            assert_true(fabs(comet_model_cold_read_cpb(&hw, axis[b], axis[c]) - got) < 1e-12);
        }
    /* between points: within the corners' values; beyond the axes: clamped */
    for (double N = 64; N <= 1024; N *= 1.3)
        for (double K = 64; K <= 1024; K *= 1.7) {
            const double v = comet_model_cold_read_cpb(&hw, N, K);
            assert_true(v >= 0.2 - 1e-12 && v <= 0.45 + 1e-12);
        }
    assert_true(fabs(comet_model_cold_read_cpb(&hw, 8, 16) - hw.cold_cpb[0]) < 1e-12);
    assert_true(fabs(hw.cold_gemv_cpb - 0.5) < 1e-9);
    char ppath[64];
    snprintf(ppath, sizeof ppath, "%s.profile.json", path);
    assert_int_equal(comet_calibrate_write_profile(&hw, ppath, err, sizeof err), 0);
    if (comet_model_hw_load(ppath, &back, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(back.cold_nn, 3);
    for (int i = 0; i < 9; i++)
        assert_true(fabs(back.cold_cpb[i] - hw.cold_cpb[i]) < 1e-9);
    assert_true(fabs(back.cold_gemv_cpb - 0.5) < 1e-9);
    /* no cold records: nothing measured, the DRAM rate stands */
    comet_model_hw plain;
    comet_results_set set2 = { 0 };
    char path2[] = "/tmp/comet-calc-XXXXXX";
    temp_results(path2, 0);
    build_profile(path2, &set2, &plain);
    assert_int_equal(plain.cold_nn, 0);
    assert_true(plain.cold_gemv_cpb == 0);
    assert_true(isnan(comet_model_cold_read_cpb(&plain, 256, 256)));
    comet_model_hw_free(&plain);
    comet_results_set_free(&set2);
    comet_model_hw_free(&hw);
    comet_model_hw_free(&back);
    comet_results_set_free(&set);
    unlink(ppath);
    unlink(path);
    unlink(path2);
}

/* The fork and join of a parallel region at 2 threads: fused grid records
 * whose 2-thread times are 1.1 x the 1-thread time over the busiest
 * thread's rows (blocks of 32 rows) plus 5 us give 5 us (10000 cycles at
 * 2 GHz); the model charges it per region at 2 threads only. */
static void test_profile_parallel_region(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-calr-XXXXXX";
    temp_results(path, 0);
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 3; c++) {
                    double M = axis[a], N = axis[b], K = axis[c];
                    double t1 = 2 * M * N * K / (eff_of(a, b, c, 0) * PEAK * GHZ * 1e9);
                    double time
                        = t ? 1.1 * t1 * comet_model_busiest_rows(32, M, M, 2) / M + 5e-6 : t1;
                    sgemm_record(
                        fp, "fused", M, N, K, t + 1, "\"params\":{\"tile_m\":32,\"gemm_only\":1},");
                    stats(fp, time);
                }
    fclose(fp);
    comet_results_set set = { 0 };
    comet_model_hw hw;
    build_profile(path, &set, &hw);
    if (fabs(hw.par_region_cycles - 5e-6 * GHZ * 1e9) > 1e-3 * 5e-6 * GHZ * 1e9)
        fail_msg("parallel region %g cycles, want %g", hw.par_region_cycles, 5e-6 * GHZ * 1e9);
    /* charged per region at 2 threads: one fused, two unfused (GEMM, pass) */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 256, .N = 512, .K = 64 };
    for (int fused = 0; fused < 2; fused++)
        for (int thr = 1; thr <= 2; thr++) {
            comet_model_mapping mp;
            comet_model_local_mapping(&hw, &pb, fused, 32, thr, 1, &mp);
            comet_model_hw one = hw, none = hw;
            one.cores = none.cores = thr;
            none.par_region_cycles = 0;
            comet_model_result r, r0;
            comet_model_eval(&one, &pb, &mp, &r);
            comet_model_eval(&none, &pb, &mp, &r0);
            assert_true(r.valid && r0.valid);
            const double want = thr == 1 ? 0 : (fused ? 1 : 2) * hw.par_region_cycles;
            if (fabs(r.cycles - r0.cycles - want) > 1e-6 * fmax(1, want) || r.t_sync != want)
                fail_msg("fused %d, %d threads: %g cycles more, want %g", fused, thr,
                    r.cycles - r0.cycles, want);
        }
    /* attention: unfused three regions a head (QK^T, softmax, PV), four when
     * causal (the mask); fused one (each thread packs the K and V it uses,
     * then runs its query blocks) */
    comet_model_problem at
        = { .op = COMET_MODEL_ATTENTION, .heads = 3, .lq = 256, .lk = 256, .d = 64 };
    comet_model_mapping mp;
    comet_model_local_mapping(&hw, &at, 0, 64, 2, 1, &mp);
    assert_true(comet_model_parallel_regions(&at, &mp, 2) == 9);
    assert_true(comet_model_parallel_regions(&at, &mp, 1) == 0);
    at.causal = 1;
    assert_true(comet_model_parallel_regions(&at, &mp, 2) == 12);
    comet_model_local_mapping(&hw, &at, 1, 64, 2, 1, &mp);
    assert_true(comet_model_parallel_regions(&at, &mp, 2) == 1);
    comet_model_hw_free(&hw);
    comet_results_set_free(&set);
    unlink(path);
}

/* A grid whose far corner was not timed (a shape set's max_gflop): the
 * 3-point grid gains 4096 on every axis where 2MNK <= 2 x 1024^3 (index sum
 * i + j + k <= 6 on the axis 64, 256, 1024, 4096). Measured points stay
 * exact; every hole takes the mean efficiency of the measured points no
 * larger on any axis with the most flops (the plateau); the model's
 * evaluator between them stays inside its corners. */
static void test_grid_plateau_holes(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-calh-XXXXXX";
    temp_results(path, 0);
    const double ax4[4] = { 64, 256, 1024, 4096 };
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int c = 0; c < 4; c++) {
                    if ((a < 3 && b < 3 && c < 3) || a + b + c > 6)
                        continue; /* written already, or beyond the cap */
                    double M = ax4[a], N = ax4[b], K = ax4[c];
                    double time = 2 * M * N * K / (eff_of(a, b, c, t) * PEAK * (t + 1) * GHZ * 1e9);
                    sgemm_record(fp, "blas", M, N, K, t + 1, "");
                    stats(fp, time);
                }
    fclose(fp);
    comet_results_set set = { 0 };
    comet_model_hw hw;
    build_profile(path, &set, &hw);
    assert_int_equal(hw.grid.nm, 4);
    assert_int_equal(hw.grid.nk, 4);
    int holes = 0;
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int c = 0; c < 4; c++) {
                    double want = 0;
                    if (a + b + c <= 6) {
                        want = eff_of(a, b, c, t);
                    } else { /* the most flops below it: the largest index sum */
                        int best = -1, n = 0;
                        for (int i = 0; i <= a; i++)
                            for (int j = 0; j <= b; j++)
                                for (int k = 0; k <= c; k++) {
                                    const int s = i + j + k;
                                    if (s > 6 || s < best)
                                        continue;
                                    if (s > best) {
                                        best = s;
                                        want = 0;
                                        n = 0;
                                    }
                                    want += eff_of(i, j, k, t);
                                    n++;
                                }
                        want /= n;
                        holes++;
                    }
                    const double got
                        = comet_model_gemm_eff(&hw, ax4[a], ax4[b], ax4[c], (double)(t + 1));
                    if (fabs(got - want) > 1e-9 * want)
                        fail_msg("t %d (%d,%d,%d): eff %g, want %g", t + 1, a, b, c, got, want);
                }
    assert_int_equal(holes, 20);
    /* attention's 2048^2 x 64 lies between its measured corners */
    const double e = comet_model_gemm_eff(&hw, 2048, 2048, 64, 1);
    assert_true(e >= eff_of(2, 2, 0, 0) - 1e-12 && e <= eff_of(3, 3, 0, 0) + 1e-12);
    comet_model_hw_free(&hw);
    comet_results_set_free(&set);
    unlink(path);
}

/* Rows below the cube timed at one thread only (small_m): at two threads
 * each takes its 1-thread value times the 2-thread / 1-thread ratio of the
 * smallest row measured at both, at the same N and K. */
static void test_grid_small_rows(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cals-XXXXXX";
    temp_results(path, 0);
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    const double e8 = 0.2; /* M = 8: packing the K x N operand for 8 rows */
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 3; c++) {
            const double N = axis[b], K = axis[c];
            sgemm_record(fp, "blas", 8, N, K, 1, "");
            stats(fp, 2 * 8 * N * K / ((e8 + 0.01 * b) * PEAK * GHZ * 1e9));
        }
    fclose(fp);
    comet_results_set set = { 0 };
    comet_model_hw hw;
    build_profile(path, &set, &hw);
    assert_int_equal(hw.grid.nm, 4);
    assert_true(hw.grid.M[0] == 8);
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 3; c++) {
            const double N = axis[b], K = axis[c];
            const double g1 = comet_model_gemm_eff(&hw, 8, N, K, 1),
                         g2 = comet_model_gemm_eff(&hw, 8, N, K, 2);
            const double want2 = (e8 + 0.01 * b) * eff_of(0, b, c, 1) / eff_of(0, b, c, 0);
            if (fabs(g1 - (e8 + 0.01 * b)) > 1e-9 || fabs(g2 - want2) > 1e-9)
                fail_msg("M 8 N %g K %g: eff %g / %g at 1 / 2 threads, want %g / %g", N, K, g1, g2,
                    e8 + 0.01 * b, want2);
        }
    comet_model_hw_free(&hw);
    comet_results_set_free(&set);
    unlink(path);
}

static void test_bad_results(void **st)
{
    (void)st;
    char path[] = "/tmp/comet-cal-XXXXXX";
    temp_results(path, 0);
    comet_results_set recs = { 0 };
    char err[COMET_ERRLEN], want[96];
    const char *paths[1] = { path };
    char *text = slurp(path);
    int lines = 0;
    for (const char *c = text; c && *c; c++)
        lines += *c == '\n';
    free(text);
    FILE *fp = fopen(path, "a");
    fprintf(fp, "{\"schema\":\"comet.record.v1\",\"kind\":\"memory\",\"op\":");
    fclose(fp);
    assert_int_equal(comet_calibrate_load_results(paths, 1, &recs, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s:%d", path, lines + 1);
    if (!strstr(err, want))
        fail_msg("torn line warning '%s' does not name %s", err, want);
    comet_results_set_free(&recs);
    fp = fopen(path, "a");
    fprintf(fp, "\ngarbage\n");
    fclose(fp);
    assert_int_not_equal(comet_calibrate_load_results(paths, 1, &recs, err, sizeof err), 0);
    if (!strstr(err, want))
        fail_msg("error '%s' does not name %s", err, want);
    /* a missing path */
    const char *nope[1] = { "/nonexistent/results.jsonl" };
    assert_int_not_equal(comet_calibrate_load_results(nope, 1, &recs, err, sizeof err), 0);
    assert_non_null(strstr(err, "/nonexistent/results.jsonl"));
    /* records without a run record */
    fp = fopen(path, "w");
    fprintf(fp,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"p2p\",\"run_id\":\"r\",\"op\":\"pingpong\","
        "\"shape\":{\"bytes\":8},\"ranks\":2,");
    stats(fp, 1e-6);
    fclose(fp);
    assert_int_equal(comet_calibrate_load_results(paths, 1, &recs, err, sizeof err), 0);
    comet_model_hw hw;
    assert_int_equal(
        comet_calibrate_build(recs.recs, recs.n, NULL, 0, &hw, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "run record"));
    comet_results_set_free(&recs);
    unlink(path);
}

/* The CLI: a profile from results; bad results -> exit 2 and the previous
 * profile untouched; SIGTERM while measuring -> exit 1, profile untouched. */
static void test_cli_atomic(void **st)
{
    (void)st;
    const char *bin = getenv("COMET_BINARY");
    if (!bin)
        skip();
    char dir[] = "/tmp/comet-calcli-XXXXXX", cmd[1024], res[256], prof[256], bad[256];
    assert_non_null(mkdtemp(dir));
    snprintf(res, sizeof res, "%s/r.jsonl", dir);
    snprintf(prof, sizeof prof, "%s/out/profile.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    write_results(res);
    /* the synthetic run record describes another machine */
    snprintf(cmd, sizeof cmd, "%s calibrate -q --foreign-ok --from %s --out %s", bin, res, prof);
    assert_int_equal(run(cmd), 0);
    char *before = slurp(prof);
    assert_non_null(before);
    FILE *fp = fopen(bad, "w");
    fprintf(fp, "{\"schema\":\"comet.record.v1\",\"kind\":\nnot json\n");
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s calibrate --from %s --out %s 2>%s/err.txt", bin, bad, prof, dir);
    assert_int_equal(run(cmd), 2);
    char ep[300];
    snprintf(ep, sizeof ep, "%s/err.txt", dir);
    char *msg = slurp(ep);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "bad.jsonl:1"));
    assert_non_null(strstr(msg, "comet: calibrate:"));
    free(msg);
    char *after = slurp(prof);
    assert_string_equal(before, after);
    free(after);
    /* bad usage */
    snprintf(cmd, sizeof cmd, "%s calibrate --bogus 2>/dev/null", bin);
    assert_int_equal(run(cmd), 2);
    /* interrupted while measuring: exit 1, the profile untouched */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        execl(bin, bin, "calibrate", "-q", "--out", prof, (char *)NULL);
        _exit(127);
    }
    /* once its handler is in place: a busy machine may take long to start */
    assert_int_equal(comet_test_wait_caught(pid, SIGTERM, 600), 0);
    kill(pid, SIGTERM);
    int wst;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst));
    assert_int_equal(WEXITSTATUS(wst), 1);
    after = slurp(prof);
    assert_string_equal(before, after);
    free(after);
    free(before);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    run(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_build_and_roundtrip),
        cmocka_unit_test(test_profile_busy_vm),
        cmocka_unit_test(test_core_share_loaded),
        cmocka_unit_test(test_profile_cold),
        cmocka_unit_test(test_links_by_placement),
        cmocka_unit_test(test_links_known_switches),
        cmocka_unit_test(test_links_exchange_fit),
        cmocka_unit_test(test_profile_parallel_region),
        cmocka_unit_test(test_grid_plateau_holes),
        cmocka_unit_test(test_grid_small_rows),
        cmocka_unit_test(test_bad_results),
        cmocka_unit_test(test_cli_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
