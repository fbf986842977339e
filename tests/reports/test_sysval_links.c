/* validate --system across links (reports/sysval.c): every whole-step
 * record is predicted over the fits of the link it names (shm, tcp:DEV),
 * never another link's, and a record whose link has no fit is not
 * predicted. The profile is the report fixture's with a second link, tcp:x,
 * whose fits are shared memory's with 100x the latency and 10x the time per
 * byte (scripts/scale-out.sh -w steps: one profile holds every link's fits,
 * each record names its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_reports.h"
#include "comet_results.h"
#include "comet_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { T_GEMM, T_ATTN, T_VEC, T_TP, T_DP, T_PP, T_BUBBLE, T_OPT, T_REC };

/* one llm record of the small model (timers and stats as measured over a
 * 1 Gbit/s link; their values do not enter a prediction) */
static void put_rec(FILE *fp, const char *phase, int tp, int pp, int dp, int mb, const char *link)
{
    fprintf(fp,
        "{\"schema\":\"comet.record.v2\",\"kind\":\"llm\",\"run_id\":\"r1\",\"machine_id\":\"m1\","
        "\"time\":\"2026-11-27T06:08:25Z\",\"op\":\"llm\",\"variant\":\"fused\",\"shape\":{"
        "\"hidden\":256,\"H\":4,\"d\":64,\"ffn\":1024,\"layers\":2,\"seq\":128,\"B\":4,"
        "\"microbatch\":%d},\"threads\":1,\"ranks\":%d,\"params\":{\"phase\":\"%s\","
        "\"recompute\":\"none\",\"tp\":%d,\"pp\":%d,\"dp\":%d},\"stats\":{\"n\":3,"
        "\"median_s\":0.08,\"ci_lo_s\":0.07,\"ci_hi_s\":0.09,\"ci_level\":0.75,\"min_s\":0.07,"
        "\"max_s\":0.09,\"mean_s\":0.08,\"p90_s\":0.09,\"samples_s\":[0.07,0.08,0.09]},"
        "\"timers\":{\"gemm_s\":0.03,\"attention_s\":0.005,\"vector_s\":0.005,\"tp_s\":0.03,"
        "\"dp_s\":0,\"pp_s\":0,\"bubble_s\":0,\"optimizer_s\":0.002,\"recompute_s\":0,"
        "\"loss_s\":0.0001},\"link\":\"%s\",\"nodes\":1,\"valid\":true}\n",
        mb, tp * pp * dp, phase, tp, pp, dp, link);
}

static void test_records_use_their_link(void **s)
{
    (void)s;
    char path[1200], err[COMET_ERRLEN] = "";
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    json_t *p = json_load_file(path, 0, NULL);
    assert_non_null(p);
    json_t *fits = json_object_get(json_object_get(p, "calibration"), "fits");
    /* tcp:x: every shared-memory fit again, slower */
    const char *groups[] = { "p2p", "collectives" };
    for (int g = 0; g < 2; g++) {
        json_t *arr = json_object_get(fits, groups[g]);
        const size_t n0 = json_array_size(arr);
        assert_true(n0 > 0);
        for (size_t i = 0; i < n0; i++) {
            json_t *f = json_deep_copy(json_array_get(arr, i));
            json_object_set_new(f, "link", json_string("tcp:x"));
            size_t j;
            json_t *seg;
            json_array_foreach(json_object_get(f, "segments"), j, seg)
            {
                json_object_set_new(seg, "alpha_us",
                    json_real(100 * json_number_value(json_object_get(seg, "alpha_us"))));
                json_object_set_new(seg, "beta_ns_per_byte",
                    json_real(10 * json_number_value(json_object_get(seg, "beta_ns_per_byte"))));
            }
            json_array_append_new(arr, f);
        }
    }
    char *text = json_dumps(p, 0);
    json_decref(p);
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    assert_int_equal(comet_model_hw_parse("p.json", text, strlen(text), &hw, err, sizeof err), 0);
    free(text);

    char rpath[256];
    snprintf(rpath, sizeof rpath, "/tmp/test_sysval_links_%ld.jsonl", (long)getpid());
    FILE *fp = fopen(rpath, "w");
    assert_non_null(fp);
    /* pairs over shm and tcp:x: tp=2, dp=2 (train), pp=2 (prefill, one
     * sequence a microbatch); then one over a link the profile lacks */
    const char *links[] = { "shm", "tcp:x" };
    for (int l = 0; l < 2; l++) {
        put_rec(fp, "train", 2, 1, 1, 4, links[l]);
        put_rec(fp, "train", 1, 1, 2, 2, links[l]);
        put_rec(fp, "prefill", 1, 2, 1, 1, links[l]);
    }
    put_rec(fp, "train", 2, 1, 1, 4, "tcp:none");
    fclose(fp);
    comet_results_set set = { 0 };
    assert_int_equal(comet_results_load(rpath, NULL, &set, NULL, err, sizeof err), 0);
    unlink(rpath);
    assert_int_equal((int)set.n, 7);

    comet_reports_sysv_row rows[8];
    int skipped = -1;
    char why[COMET_ERRLEN] = "";
    const int nr
        = comet_reports_system_validate(&hw, set.recs, set.n, rows, 8, &skipped, why, sizeof why);
    assert_int_equal(nr, 6);
    assert_int_equal(skipped, 1);
    assert_non_null(strstr(why, "tcp:none"));
    for (int i = 0; i < 3; i++) {
        const comet_reports_sysv_row *a = &rows[i], *b = &rows[i + 3];
        assert_string_equal(a->rec->link, "shm");
        assert_string_equal(b->rec->link, "tcp:x");
        /* the same ranks compute the same: the link changes no compute term
         * (to rounding: a kernel's compute is its time less its network) */
        const int same[] = { T_GEMM, T_ATTN, T_VEC, T_OPT, T_REC };
        for (size_t k = 0; k < sizeof same / sizeof *same; k++)
            assert_true(fabs(a->predicted[same[k]] - b->predicted[same[k]])
                <= 1e-6 * (a->predicted[same[k]] + 1e-12));
        /* the parallelism's own term is the slower link's where it is used,
         * and absent where it is not */
        const int t = i == 0 ? T_TP : i == 1 ? T_DP : T_PP;
        assert_true(a->predicted[t] > 0);
        assert_true(b->predicted[t] > a->predicted[t]);
        /* ... and the whole step slower by at least that much */
        assert_true(b->predicted_s - a->predicted_s
            >= b->predicted[t] - a->predicted[t] - 1e-6 * b->predicted_s);
        const int others[] = { T_TP, T_DP, T_PP };
        for (int k = 0; k < 3; k++)
            if (others[k] != t)
                assert_true(a->predicted[others[k]] == 0 && b->predicted[others[k]] == 0);
    }
    /* the pipeline's activation (a sequence, 128 KiB) crosses tcp:x at least
     * once on the critical path, at the piece of its ping-pong fit that size
     * falls in */
    comet_model_links shm, x;
    assert_int_equal(comet_model_links_for_transport(&hw, "shm", &shm), 0);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:x", &x), 0);
    const double b = 128.0 * 256 * 4;
    assert_true(rows[5].predicted[T_PP] - rows[2].predicted[T_PP]
        >= (comet_model_links_p2p_s(&x, b) - comet_model_links_p2p_s(&shm, b)) * (1 - 1e-9));
    comet_results_set_free(&set);
    comet_model_hw_free(&hw);
}

/* a record with the split timers (bubble_s apart, TP by kind) and
 * sequence parallelism, recomputation and context as given */
static void put_rec2(
    FILE *fp, const char *phase, const char *rec, int tp, int pp, int sp, int B, int mb, int ctx)
{
    fprintf(fp,
        "{\"schema\":\"comet.record.v2\",\"kind\":\"llm\",\"run_id\":\"r1\",\"machine_id\":\"m1\","
        "\"time\":\"2026-11-27T06:08:25Z\",\"op\":\"llm\",\"variant\":\"fused\",\"shape\":{"
        "\"hidden\":256,\"H\":4,\"d\":64,\"ffn\":1024,\"layers\":2,\"seq\":128,\"B\":%d,"
        "\"microbatch\":%d,\"context\":%d},\"threads\":1,\"ranks\":%d,\"params\":{"
        "\"phase\":\"%s\",\"recompute\":\"%s\",\"tp\":%d,\"pp\":%d,\"dp\":1,"
        "\"seq_parallel\":%s},\"stats\":{\"n\":3,\"median_s\":0.08,\"ci_lo_s\":0.07,"
        "\"ci_hi_s\":0.09,\"ci_level\":0.75,\"min_s\":0.07,\"max_s\":0.09,\"mean_s\":0.08,"
        "\"p90_s\":0.09,\"samples_s\":[0.07,0.08,0.09]},\"timers\":{\"gemm_s\":0.03,"
        "\"attention_s\":0.005,\"vector_s\":0.005,\"tp_s\":0.01,\"dp_s\":0,\"pp_s\":0,"
        "\"bubble_s\":0,\"optimizer_s\":0.002,\"recompute_s\":0,\"loss_s\":0.0001,"
        "\"tp_allreduce_s\":0.01,\"tp_allgather_s\":0,\"tp_reduce_scatter_s\":0},"
        "\"link\":\"shm\",\"nodes\":1,\"valid\":true}\n",
        B, mb, ctx, tp * pp, phase, rec, tp, pp, sp ? "true" : "false");
}

/* What the bench runs is what is predicted: its attention backward
 * recomputes the attention core (selective recomputation, booked as
 * attention; with full recomputation the rerun forward is its own term);
 * sequence parallelism changes the TP collectives, not the step's compute;
 * a decode step timed between barriers fills and drains its pipeline (the
 * bubble apart from the point-to-point where the record times it apart). */
static void test_records_as_run(void **s)
{
    (void)s;
    char path[1200], err[COMET_ERRLEN] = "";
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    assert_int_equal(comet_model_hw_load(path, &hw, err, sizeof err), 0);
    char rpath[256];
    snprintf(rpath, sizeof rpath, "/tmp/test_sysval_as_run_%ld.jsonl", (long)getpid());
    FILE *fp = fopen(rpath, "w");
    assert_non_null(fp);
    put_rec2(fp, "train", "none", 1, 1, 0, 4, 4, 0);
    put_rec2(fp, "train", "full", 1, 1, 0, 4, 4, 0);
    put_rec2(fp, "train", "none", 2, 1, 0, 4, 4, 0);
    put_rec2(fp, "train", "none", 2, 1, 1, 4, 4, 0);
    put_rec2(fp, "decode", "none", 1, 2, 0, 8, 4, 256);
    fclose(fp);
    comet_results_set set = { 0 };
    assert_int_equal(comet_results_load(rpath, NULL, &set, NULL, err, sizeof err), 0);
    unlink(rpath);
    comet_reports_sysv_row r[5];
    int skipped = -1;
    char why[COMET_ERRLEN] = "";
    assert_int_equal(
        comet_reports_system_validate(&hw, set.recs, set.n, r, 5, &skipped, why, sizeof why), 5);
    /* none: the recomputed core is attention time, more than the forward's */
    assert_true(r[0].predicted[T_REC] == 0);
    assert_true(r[1].predicted[T_REC] > 0);
    assert_true(r[0].predicted[T_ATTN] > r[1].predicted[T_ATTN]);
    /* sequence parallelism: the same GEMMs, other collectives */
    assert_true(
        fabs(r[2].predicted[T_GEMM] - r[3].predicted[T_GEMM]) <= 1e-6 * r[2].predicted[T_GEMM]);
    assert_true(r[2].predicted[T_TP] > 0 && r[3].predicted[T_TP] > 0);
    assert_true(r[2].predicted[T_TP] != r[3].predicted[T_TP]);
    /* decode over two stages, two microbatches: the fill and drain are one
     * stage's microbatch, apart from the point-to-point */
    assert_true(r[4].predicted[T_BUBBLE] > 0);
    assert_true(r[4].predicted[T_PP] > 0);
    const double stage_mb
        = (r[4].predicted[T_GEMM] + r[4].predicted[T_ATTN] + r[4].predicted[T_VEC])
        / 4; /* 2 microbatches x 2 stages' work, one rank's share */
    assert_true(r[4].predicted[T_BUBBLE] >= 0.5 * stage_mb);
    comet_results_set_free(&set);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[]
        = { cmocka_unit_test(test_records_use_their_link), cmocka_unit_test(test_records_as_run) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
