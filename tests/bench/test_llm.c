/* The decoder stack of `comet bench llm` (bench/llm_engine.c): a central
 * finite-difference check of the single-rank backward on a tiny model, and,
 * under mpiexec, every distributed grid of the ranks (tp x dp, uneven head
 * and FFN splits, microbatches, full recomputation, fused and unfused
 * attention) against the single-rank step of the same model: the loss and
 * every gradient, and the prefill and decode outputs. */
#include "comet_bench_llm.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int world_rank, world_size;

static comet_llm_cfg tiny(void)
{
    comet_llm_cfg c;
    memset(&c, 0, sizeof c);
    c.hidden = 12;
    c.heads = 3; /* 2 ranks: 2 + 1 heads */
    c.ffn = 20; /* 3 ranks: 7 + 7 + 6 columns */
    c.layers = 2;
    c.seq = 5;
    c.batch = 6;
    c.phase = COMET_LLM_TRAIN;
    c.attention_fused = 1;
    c.tp = c.dp = 1;
    c.threads = 1;
    c.seed = 7;
    return c;
}

/* The loss and the full gradient of c on this rank alone. */
static double single(comet_llm_cfg c, float *g)
{
    comet_llm *m = NULL;
    char err[256];
    double loss = NAN;
    c.tp = c.dp = c.pp = 1;
    c.seq_parallel = 0;
    assert_int_equal(comet_llm_create(MPI_COMM_SELF, &c, &m, err, sizeof err), 0);
    assert_int_equal(comet_llm_grads(m, &loss), 0);
    if (g)
        assert_int_equal(comet_llm_grads_full(m, g), 0);
    comet_llm_free(m);
    return loss;
}

/* Largest |a - b| / (|b| + scale) over n. */
static double maxrel(const float *a, const float *b, size_t n)
{
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - b[i]) / (fabs(b[i]) + 1e-3 * scale));
    return worst;
}

static void finite_differences(int batch, int seq)
{
    comet_llm_cfg c = tiny();
    c.batch = batch;
    c.seq = seq;
    const size_t n = comet_llm_nparams(&c);
    float *g = malloc(n * sizeof *g);
    assert_non_null(g);
    const double loss = single(c, g);
    assert_true(isfinite(loss) && loss > 0);
    /* every 7th parameter moved by +-h in the single-rank block (the full
     * layout), the loss recomputed */
    comet_llm *m = NULL;
    char err[256];
    assert_int_equal(comet_llm_create(MPI_COMM_SELF, &c, &m, err, sizeof err), 0);
    size_t np = 0;
    float *P = comet_llm_params_local(m, &np);
    assert_int_equal(np, n);
    int checked = 0, bad = 0;
    double gmax = 0;
    for (size_t i = 0; i < n; i++)
        gmax = fmax(gmax, fabs(g[i]));
    for (size_t i = 0; i < n; i += 7) {
        const float keep = P[i];
        const float h = 1e-2f * fmaxf(1.0f, fabsf(keep));
        double lp, lm;
        P[i] = keep + h;
        assert_int_equal(comet_llm_grads(m, &lp), 0);
        P[i] = keep - h;
        assert_int_equal(comet_llm_grads(m, &lm), 0);
        P[i] = keep;
        /* the steps as float holds them */
        const double fd2 = (lp - lm) / ((double)(keep + h) - (double)(keep - h));
        const double tol = 2e-2 * fabs(g[i]) + 2e-3 * gmax;
        if (fabs(fd2 - g[i]) > tol) {
            bad++;
            print_message("param %zu: backward %.6g, central difference %.6g\n", i, g[i], fd2);
        }
        checked++;
    }
    comet_llm_free(m);
    free(g);
    assert_true(checked > 50);
    assert_int_equal(bad, 0);
}

static void test_finite_differences(void **state)
{
    (void)state;
    finite_differences(2, 5);
}

/* One token: every product has one row (the GEMV path), forward and back. */
static void test_finite_differences_one_row(void **state)
{
    (void)state;
    finite_differences(1, 1);
}

/* One distributed configuration against the single-rank step. */
static void check_grid(comet_llm_cfg c, const char *what)
{
    const size_t n = comet_llm_nparams(&c);
    float *ref = malloc(n * sizeof *ref), *g = malloc(n * sizeof *g);
    assert_non_null(ref);
    assert_non_null(g);
    /* the reference: one rank, the whole batch at once, fused attention,
     * nothing recomputed */
    comet_llm_cfg base = c;
    base.microbatch = 0;
    base.recompute_full = 0;
    base.attention_fused = 1;
    base.seq_parallel = 0;
    base.threads = 1;
    const double lref = single(base, ref);
    comet_llm *m = NULL;
    char err[256];
    int rc = comet_llm_create(MPI_COMM_WORLD, &c, &m, err, sizeof err);
    if (rc)
        print_message("%s: %s\n", what, err);
    assert_int_equal(rc, 0);
    double loss = NAN;
    assert_int_equal(comet_llm_grads(m, &loss), 0);
    assert_int_equal(comet_llm_grads_full(m, g), 0);
    const double e = maxrel(g, ref, n);
    if (world_rank == 0)
        print_message(
            "%s: loss %.9g (single rank %.9g), worst gradient error %.3g\n", what, loss, lref, e);
    assert_true(fabs(loss - lref) <= 1e-5 * fabs(lref));
    assert_true(e < 2e-3);
    comet_llm_free(m);
    free(ref);
    free(g);
}

static void test_grids(void **state)
{
    (void)state;
    comet_llm_cfg c = tiny();
    /* every tp x pp x dp of the ranks (3 layers: 3 stages one each, 2 stages
     * 2 + 1, an uneven split) */
    c.layers = 3;
    for (int tp = 1; tp <= world_size; tp++)
        for (int pp = 1; pp <= world_size / tp; pp++) {
            if (world_size % (tp * pp))
                continue;
            c.tp = tp;
            c.pp = pp;
            c.dp = world_size / (tp * pp);
            char what[96];
            for (int v = 0; v < 6; v++) {
                comet_llm_cfg x = c;
                x.attention_fused = v != 1;
                x.recompute_full = v == 2;
                /* the rank's threads split each GEMM by columns (30 tokens)
                 * and by rows (a batch of 12: 60 tokens) */
                x.threads = v >= 4 ? 2 : 1;
                if (v == 5)
                    x.batch = 12;
                /* a pipeline needs microbatches: 1F1B over 6 / dp of one sequence */
                x.microbatch = v == 3 || pp > 1 ? 1 : 0;
                snprintf(what, sizeof what, "tp=%d pp=%d dp=%d %s%s%s threads %d batch %d", x.tp,
                    x.pp, x.dp, x.attention_fused ? "fused" : "unfused",
                    x.recompute_full ? " recompute" : "", x.microbatch ? " microbatch 1" : "",
                    x.threads, x.batch);
                check_grid(x, what);
            }
        }
}

/* Sequence parallelism over every tp x pp x dp grid with tp >= 2 (1 rank:
 * none; 2 ranks tp=2; 3 ranks tp=3): the loss and every gradient against
 * the single-rank step. The microbatches' tokens split unevenly: seq 5 over
 * 2 ranks 3 + 2, over 3 ranks 2 + 2 + 1 (one sequence a microbatch); 6 or 10
 * tokens (whole batches) over 2 and 3 ranks evenly or 4 + 3 + 3. */
static void test_seq_parallel(void **state)
{
    (void)state;
    comet_llm_cfg c = tiny();
    c.layers = 3;
    c.seq_parallel = 1;
    int grids = 0;
    char err[256];
    for (int tp = 2; tp <= world_size; tp++)
        for (int pp = 1; pp <= world_size / tp; pp++) {
            if (world_size % (tp * pp))
                continue;
            c.tp = tp;
            c.pp = pp;
            c.dp = world_size / (tp * pp);
            /* (the unfused attention is independent of the split: test_grids) */
            for (int v = 0; v < 5; v++) {
                if (v == 1)
                    continue;
                comet_llm_cfg x = c;
                x.recompute_full = v == 2;
                x.microbatch = v == 3 || pp > 1 ? 1 : v == 4 ? 2 : 0;
                assert_int_equal(comet_llm_check(&x, world_size, err, sizeof err), 0);
                char what[128];
                snprintf(what, sizeof what, "sp tp=%d pp=%d dp=%d%s microbatch %d", x.tp, x.pp,
                    x.dp, x.recompute_full ? " recompute" : "", x.microbatch);
                check_grid(x, what);
                grids++;
            }
        }
    if (world_size > 1)
        assert_true(grids >= 4);
    /* tp = 1 or fewer tokens than tp ranks: refused */
    c = tiny();
    c.seq_parallel = 1;
    assert_int_not_equal(comet_llm_check(&c, 1, err, sizeof err), 0);
    c.tp = 3;
    c.seq = 2;
    c.microbatch = 1;
    assert_int_not_equal(comet_llm_check(&c, 3, err, sizeof err), 0);
}

/* SP's collectives: every TP second an all-gather or a reduce-scatter
 * (but the LayerNorm gradients' one all-reduce); without SP all-reduces. */
static void test_tp_kinds(void **state)
{
    (void)state;
    if (world_size < 2)
        skip();
    for (int sp = 0; sp < 2; sp++) {
        comet_llm_cfg c = tiny();
        c.tp = world_size;
        c.seq_parallel = sp;
        comet_llm *m = NULL;
        char err[256];
        assert_int_equal(comet_llm_create(MPI_COMM_WORLD, &c, &m, err, sizeof err), 0);
        double loss, t[COMET_LLM_NTIMERS], k[COMET_LLM_TP_NKINDS];
        assert_int_equal(comet_llm_step(m, &loss), 0);
        comet_llm_timers(m, t);
        comet_llm_tp_timers(m, k);
        const double sum = k[0] + k[1] + k[2];
        assert_true(fabs(sum - t[COMET_LLM_T_TP]) <= 1e-9 + 1e-9 * t[COMET_LLM_T_TP]);
        assert_true(t[COMET_LLM_T_TP] > 0);
        if (sp) {
            assert_true(k[COMET_LLM_TP_ALLGATHER] > 0 && k[COMET_LLM_TP_REDUCE_SCATTER] > 0);
        } else {
            assert_true(k[COMET_LLM_TP_ALLGATHER] == 0 && k[COMET_LLM_TP_REDUCE_SCATTER] == 0);
        }
        assert_true(k[COMET_LLM_TP_ALLREDUCE] > 0);
        assert_true(t[COMET_LLM_T_PP] == 0 && t[COMET_LLM_T_BUBBLE] == 0);
        comet_llm_free(m);
    }
}

/* A pipeline's receives split into the wait for the message (bubble) and
 * the transfer (pp): the last stage waits for its first activation, which
 * the first stage sends only after a whole forward of its layers, so its
 * bubble is positive; without a pipeline both are 0. */
static void test_pipeline_timers(void **state)
{
    (void)state;
    if (world_size < 2)
        skip();
    comet_llm_cfg c = tiny();
    c.layers = world_size;
    c.pp = world_size;
    c.microbatch = 1;
    comet_llm *m = NULL;
    char err[256];
    assert_int_equal(comet_llm_create(MPI_COMM_WORLD, &c, &m, err, sizeof err), 0);
    double loss, t[COMET_LLM_NTIMERS];
    assert_int_equal(comet_llm_step(m, &loss), 0);
    comet_llm_timers(m, t);
    const int stage = world_rank; /* tp = dp = 1 */
    if (stage > 0) {
        assert_true(t[COMET_LLM_T_BUBBLE] > 0);
        assert_true(t[COMET_LLM_T_PP] > 0);
    }
    /* every stage receives (gradients back, activations forward) */
    assert_true(t[COMET_LLM_T_PP] > 0);
    comet_llm_free(m);
}

/* The inference phases: each rank's outputs against the single-rank run. */
static void check_inference(comet_llm_phase ph)
{
    comet_llm_cfg c = tiny();
    c.phase = ph;
    c.layers = 3;
    c.context = ph == COMET_LLM_DECODE ? 9 : 0;
    comet_llm *r = NULL, *m = NULL;
    char err[256];
    assert_int_equal(comet_llm_create(MPI_COMM_SELF, &c, &r, err, sizeof err), 0);
    assert_int_equal(comet_llm_step(r, NULL), 0);
    size_t tr, tm;
    const float *yr = comet_llm_output(r, &tr);
    for (int tp = 1; tp <= world_size; tp++)
        for (int pp = 1; pp <= world_size / tp; pp++)
            for (int sp = 0; sp <= (tp > 1); sp++) {
                if (world_size % (tp * pp))
                    continue;
                comet_llm_cfg x = c;
                x.tp = tp;
                x.pp = pp;
                x.dp = world_size / (tp * pp);
                /* SP: a microbatch's tokens over the tp ranks (prefill 5 of
                 * one sequence, decode 3 sequences' one each: uneven) */
                x.microbatch = sp && ph == COMET_LLM_DECODE ? 3 : 1;
                x.attention_fused = tp % 2;
                x.seq_parallel = sp;
                assert_int_equal(comet_llm_create(MPI_COMM_WORLD, &x, &m, err, sizeof err), 0);
                assert_int_equal(comet_llm_step(m, NULL), 0);
                const float *y = comet_llm_output(m, &tm);
                size_t first, rows, mt;
                comet_llm_shard(m, &first, &rows, &mt);
                const int dpr = world_rank / tp % x.dp, stage = world_rank / (tp * x.dp);
                const size_t nmb = tr / x.dp / mt; /* microbatches of a replica */
                assert_int_equal(tm, nmb * rows);
                assert_true(sp ? rows < mt : rows == mt && first == 0);
                if (stage == pp - 1) { /* the last stage holds the output */
                    double e = 0;
                    for (size_t k = 0; k < nmb; k++)
                        e = fmax(e,
                            maxrel(y + k * rows * c.hidden,
                                yr + ((size_t)dpr * nmb * mt + k * mt + first) * c.hidden,
                                rows * c.hidden));
                    print_message("%s tp=%d pp=%d dp=%d%s rank %d: worst output error %.3g\n",
                        comet_llm_phase_name(ph), x.tp, x.pp, x.dp, sp ? " sp" : "", world_rank, e);
                    assert_true(e < 1e-4);
                }
                comet_llm_free(m);
            }
    comet_llm_free(r);
}

static void test_prefill(void **state)
{
    (void)state;
    check_inference(COMET_LLM_PREFILL);
}

static void test_decode(void **state)
{
    (void)state;
    check_inference(COMET_LLM_DECODE);
}

/* Training steps move the loss down, the same on every grid. */
static void test_steps(void **state)
{
    (void)state;
    comet_llm_cfg c = tiny();
    c.tp = world_size;
    c.heads = 3;
    comet_llm *m = NULL;
    char err[256];
    assert_int_equal(comet_llm_create(MPI_COMM_WORLD, &c, &m, err, sizeof err), 0);
    double first = 0, last = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(comet_llm_step(m, i ? &last : &first), 0);
        double t[COMET_LLM_NTIMERS];
        comet_llm_timers(m, t);
        for (int k = 0; k < COMET_LLM_NTIMERS; k++)
            assert_true(t[k] >= 0);
    }
    assert_true(last < first);
    comet_llm_free(m);
}

static void test_check(void **state)
{
    (void)state;
    comet_llm_cfg c = tiny();
    char err[256];
    assert_int_equal(comet_llm_check(&c, 1, err, sizeof err), 0);
    c.tp = 2;
    assert_int_not_equal(comet_llm_check(&c, 1, err, sizeof err), 0);
    c.tp = 4; /* more ranks than heads */
    assert_int_not_equal(comet_llm_check(&c, 4, err, sizeof err), 0);
    c = tiny();
    c.dp = 4; /* 4 does not divide the batch of 6 */
    assert_int_not_equal(comet_llm_check(&c, 4, err, sizeof err), 0);
    c = tiny();
    c.phase = COMET_LLM_DECODE; /* no context */
    assert_int_not_equal(comet_llm_check(&c, 1, err, sizeof err), 0);
    assert_true(comet_llm_flops(&c) > 0);
}

/* The bench's sets: every configuration valid for its ranks and within the
 * cores; the full set adds tp=2 with sequence parallelism for every phase
 * and both model sizes, the quick set none; one core: one rank of one thread. */
static void test_sets(void **state)
{
    (void)state;
    comet_llm_cfg cf[64];
    char err[256];
    for (int full = 0; full < 2; full++)
        for (int cores = 1; cores <= 2; cores++) {
            const int n = comet_bench_llm_set(full, cores, cf, 64);
            int sp = 0;
            assert_true(n > 0);
            for (int i = 0; i < n; i++) {
                const int ranks = cf[i].tp * cf[i].dp * (cf[i].pp > 1 ? cf[i].pp : 1);
                if (comet_llm_check(&cf[i], ranks, err, sizeof err))
                    fail_msg("set %d/%d configuration %d: %s", full, cores, i, err);
                assert_true(ranks * cf[i].threads <= cores);
                sp += cf[i].seq_parallel;
            }
            assert_int_equal(sp, full && cores >= 2 ? 6 : 0);
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_sets),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_finite_differences_one_row),
        cmocka_unit_test(test_grids),
        cmocka_unit_test(test_seq_parallel),
        cmocka_unit_test(test_tp_kinds),
        cmocka_unit_test(test_pipeline_timers),
        cmocka_unit_test(test_prefill),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_steps),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return rc;
}
