/* dist.c: the distributed kernels' LayerNorm passes and unfused staging,
 * each against its --explain text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_util.h"
#include "mfixture.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fused distributed LayerNorm's local passes at their measured cost
 * (vector.dist_ln_*): the slice's LayerNorm row pass replaced by rows x
 * (width x per element + per row); softmax and the unfused kernels keep
 * theirs; unmeasured, nothing changes. */
static void test_dist_ln_passes(void **s)
{
    (void)s;
    comet_model_hw cpu;
    char err[COMET_ERRLEN];
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &cpu, err, sizeof err)
        != 0)
        fail_msg("%s", err);
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_LAYERNORM;
    pb.M = 128, pb.N = 512, pb.K = 64;
    comet_model_dist_pred a, b;
    assert_int_equal(comet_model_dist_predict(&cpu, &pb, 1, 1, 2, NULL, &a), 0);
    comet_model_hw m = cpu;
    m.dist_ln_row_cycles = 100;
    m.dist_ln_elem_cycles = 3;
    assert_int_equal(comet_model_dist_predict(&m, &pb, 1, 1, 2, NULL, &b), 0);
    /* the slice as the model evaluates it: 128 x 256 */
    comet_model_hw one = cpu;
    one.cores = 1, one.clusters = 1, one.cluster_net.dims[0] = one.cluster_net.dims[1] = 1;
    one.n_outer = 0;
    one.dram.bw = cpu.dram.bw / 2;
    comet_model_problem sl = pb;
    sl.N = 256;
    comet_model_mapping mp;
    comet_model_local_mapping(&one, &sl, 0, 0, 1, 1, &mp);
    comet_model_result r;
    comet_model_eval(&one, &sl, &mp, &r);
    const double hz = cpu.clock_ghz * 1e9;
    const double want = fmax(r.cycles - r.t_pass + 128 * (256 * 3.0 + 100), r.bound_cycles) / hz;
    if (fabs(b.local_s - want) > 1e-9 * want)
        fail_msg("local %g s, want %g s", b.local_s, want);
    assert_true(fabs(a.local_s - r.seconds) <= 1e-12 * r.seconds);
    /* softmax, and the unfused LayerNorm: unchanged */
    comet_model_dist_pred c, d;
    assert_int_equal(comet_model_dist_predict(&m, &pb, 0, 1, 2, NULL, &c), 0);
    assert_int_equal(comet_model_dist_predict(&cpu, &pb, 0, 1, 2, NULL, &d), 0);
    assert_true(c.local_s == d.local_s);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    assert_int_equal(comet_model_dist_predict(&m, &pb, 1, 1, 2, NULL, &c), 0);
    assert_int_equal(comet_model_dist_predict(&cpu, &pb, 1, 1, 2, NULL, &d), 0);
    assert_true(c.local_s == d.local_s);
    /* explain prints the same prediction term by term: its total is it */
    for (int fused = 0; fused <= 1; fused++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&buf, &len);
        assert_non_null(fp);
        assert_int_equal(comet_model_dist_explain(&m, &pb, fused, 1, 2, NULL, fp), 0);
        fclose(fp);
        const char *t = strstr(buf, "total   = local + collectives = ");
        assert_non_null(t);
        assert_non_null(strstr(buf, "coll 1  = "));
        assert_int_equal(comet_model_dist_predict(&m, &pb, fused, 1, 2, NULL, &c), 0);
        const double ms = strtod(t + strlen("total   = local + collectives = "), NULL);
        if (fabs(ms - c.seconds * 1e3) > 1e-3 * ms)
            fail_msg("explain total %g ms, predicted %g ms", ms, c.seconds * 1e3);
        free(buf);
    }
    comet_model_hw_free(&cpu);
}
/* The unfused distributed baselines copy whole rows out of the gathered
 * slices before their row pass (and GEMM-Softmax/LayerNorm their slice back):
 * read and written at the bandwidth of the level the gathered intermediate
 * fits in, one core's share (cpu2: 64 KiB L2 at 30 B/cycle, a 1 MiB LLC a core
 * draws 25 B/cycle from, DRAM 4 B/cycle a core). */
static void test_dist_stage(void **s)
{
    (void)s;
    comet_model_hw cpu;
    char err[COMET_ERRLEN];
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &cpu, err, sizeof err)
        != 0)
        fail_msg("%s", err);
    static const struct {
        comet_model_op op;
        double M, N, heads, want_cycles;
    } c[] = {
        /* 256 KiB gathered: the LLC; 2 x 128 x (512 + 256) x 4 B */
        { COMET_MODEL_GEMM_SOFTMAX, 128, 512, 0, 2 * 128 * (512 + 256) * 4 / 25.0 },
        { COMET_MODEL_GEMM_LAYERNORM, 128, 512, 0, 2 * 128 * (512 + 256) * 4 / 25.0 },
        /* 8 MiB: DRAM */
        { COMET_MODEL_GEMM_SOFTMAX, 1024, 2048, 0, 2 * 1024 * (2048 + 1024) * 4 / 4.0 },
        /* attention, per head the slices and the staged rows (256 KiB x 2):
         * the LLC; 2 heads x 2 x 128 x 512 x 4 B, no copy back */
        { COMET_MODEL_ATTENTION, 128, 512, 2, 2 * 2 * 128 * 512 * 4 / 25.0 },
        /* 16 x 16 rows: 2 KiB, in L2 */
        { COMET_MODEL_GEMM_SOFTMAX, 16, 16, 0, 2 * 16 * (16 + 8) * 4 / 30.0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        comet_model_problem pb;
        memset(&pb, 0, sizeof pb);
        pb.op = c[i].op;
        if (pb.op == COMET_MODEL_ATTENTION) {
            pb.heads = c[i].heads, pb.lq = c[i].M, pb.lk = c[i].N, pb.d = 64;
        } else {
            pb.M = c[i].M, pb.N = c[i].N, pb.K = 64;
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&buf, &len);
        assert_non_null(fp);
        assert_int_equal(comet_model_dist_explain(&cpu, &pb, 0, 1, 2, NULL, fp), 0);
        fclose(fp);
        const char *t = strstr(buf, "stage   = ");
        assert_non_null(t);
        t = strstr(t, "-> ");
        assert_non_null(t);
        const double cyc = strtod(t + 3, NULL) * 1e-3 * cpu.clock_ghz * 1e9;
        if (fabs(cyc - c[i].want_cycles) > 1e-3 * c[i].want_cycles)
            fail_msg("case %zu: stage %g cycles, want %g", i, cyc, c[i].want_cycles);
        free(buf);
        /* the fused kernels stage nothing */
        fp = open_memstream(&buf, &len);
        assert_int_equal(comet_model_dist_explain(&cpu, &pb, 1, 1, 2, NULL, fp), 0);
        fclose(fp);
        assert_null(strstr(buf, "stage   = "));
        free(buf);
    }
    comet_model_hw_free(&cpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_ln_passes),
        cmocka_unit_test(test_dist_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
