/* A calibrated CPU profile as the system model's chips (system/profile.c,
 * system/cpu_vec.c): ranks of T cores joined by the profile's fitted link,
 * the memory-bound kernels at the profile's measured vector-op costs. */
#include "comet_model.h"
#include "comet_system.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static comet_model_hw hw;

static int setup(void **s)
{
    (void)s;
    char path[4096], err[512];
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    if (comet_model_hw_load(path, &hw, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **s)
{
    (void)s;
    comet_model_hw_free(&hw);
    return 0;
}

static comet_system_llm small(void)
{
    comet_system_llm m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "small");
    m.hidden = 256, m.heads = 4, m.head_dim = 64, m.kv_heads = 4, m.ffn = 1024, m.layers = 2;
    m.seq = 128, m.global_batch = 4, m.microbatch = 4, m.bytes_per_elem = 4;
    m.dtype = COMET_MODEL_FP32;
    return m;
}

/* Collectives and point-to-point between ranks come from the fitted link. */
static void test_link_fits(void **s)
{
    (void)s;
    comet_system sys;
    comet_model_links lk;
    char err[512];
    assert_int_equal(comet_model_links_for_transport(&hw, "shm", &lk), 0);
    assert_int_equal(
        comet_system_from_profile(&hw, COMET_MODEL_FP32, 1, 2, 1, "shm", &sys, err, sizeof err), 0);
    assert_int_equal(sys.link_fits, 1);
    assert_int_equal(sys.chips, 2);
    assert_int_equal(sys.hw.cores, 1);
    /* point-to-point: the piece of the fit the message falls in (the
     * fixture's shared-memory ping-pong steps at 16 KiB: the first piece
     * below it, the second above) */
    assert_true(lk.p2p_beta_s > 0 && lk.p2p_nseg == 2);
    assert_true(fabs(comet_system_p2p_s(&sys, 1, 2, 1024) - (lk.p2p_alpha_s + 1024 * lk.p2p_beta_s))
        < 1e-12);
    assert_true(fabs(comet_system_p2p_s(&sys, 1, 2, 1e6)
                    - (lk.p2p_seg_alpha_s[1] + 1e6 * lk.p2p_seg_beta_s[1]))
        < 1e-12);
    assert_true(lk.p2p_seg_from_bytes[1] == 16384);
    /* the all-reduce: the collective model over the fits (the same call with the
     * profile's links on a two-node description), growing with the bytes */
    double prev = 0;
    for (double b = 1024; b <= 16e6; b *= 4) {
        const double t = comet_system_coll_s(&sys, COMET_MODEL_ALLREDUCE, 1, 2, b);
        comet_model_hw two = hw;
        two.links = lk;
        two.clusters = 2;
        two.cluster_net.dims[0] = 2;
        two.cluster_net.dims[1] = 1;
        const comet_model_coll_cost c
            = comet_model_coll_time(&two, COMET_MODEL_ALLREDUCE, 2, b, COMET_MODEL_ALG_NONE);
        if (c.alg == COMET_MODEL_ALG_FIT)
            assert_true(fabs(t - c.cycles / (hw.clock_ghz * 1e9)) <= 1e-9 * t + 1e-15);
        assert_true(t > 0 && t >= prev);
        prev = t;
    }
    comet_system_free(&sys);
    /* a link without fits, a description that is not a CPU profile */
    assert_int_equal(comet_system_from_profile(
                         &hw, COMET_MODEL_FP32, 1, 2, 1, "tcp:none", &sys, err, sizeof err),
        -ENOENT);
    comet_model_hw a100;
    assert_int_equal(comet_model_hw_load("dgx-a100", &a100, err, sizeof err), 0);
    assert_int_equal(
        comet_system_from_profile(&a100, COMET_MODEL_FP32, 1, 2, 1, "shm", &sys, err, sizeof err),
        -EINVAL);
    comet_model_hw_free(&a100);
}

/* GELU's compute: its operations at the profile's measured per-element
 * costs, over the rank's cores; the step is never below its bound, and a
 * rank of two threads is never slower on its vector kernels. */
static void test_vector_costs(void **s)
{
    (void)s;
    comet_system_llm m = small();
    comet_system_opts o = { .phase = COMET_SYSTEM_TRAIN, .recompute = 0, .seq_parallel = 0 };
    comet_system_config c = { .tp = 1,
        .pp = 1,
        .dp = 1,
        .interleave = 1,
        .microbatch = 4,
        .order = { 0, 2, 1 },
        .recompute = COMET_SYSTEM_RECOMPUTE_NONE,
        .exec = COMET_SYSTEM_EXEC_KERNEL };
    double act[3] = { 0 };
    for (int t = 1; t <= 2; t++) {
        comet_system sys;
        comet_system_result r;
        char err[512];
        assert_int_equal(
            comet_system_from_profile(&hw, COMET_MODEL_FP32, t, 1, 1, NULL, &sys, err, sizeof err),
            0);
        assert_int_equal(comet_system_eval(&sys, &m, &o, &c, &r), 0);
        assert_true(r.feasible);
        assert_true(r.step_s >= r.bound_s);
        const comet_system_parts *p = &r.parts[0];
        for (int i = 0; i < p->n; i++)
            if (!strcmp(p->kernel[i], "act"))
                act[t] = p->compute_s[i];
        const double *cy = hw.vop_cycles, w = hw.simd_width > 0 ? hw.simd_width : 1;
        const double per = (cy[COMET_MODEL_VOP_EXP] + cy[COMET_MODEL_VOP_DIV]
                               + 4 * cy[COMET_MODEL_VOP_MUL] + 3 * cy[COMET_MODEL_VOP_ADD])
            / w;
        const double want = 4.0 * 128 * 1024 * per / (t * hw.clock_ghz * 1e9);
        assert_true(fabs(act[t] - want) <= 1e-5 * want);
        comet_system_free(&sys);
    }
    assert_true(act[2] <= act[1]);
}

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static int pick(int n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (unsigned long long)n);
}

/* Case n's step on `chips` ranks of T threads, `host` of them a host: 0
 * and *r when feasible (never below its bound), -1 when not. */
static int eval_ranks_on(const comet_model_hw *h, int n, int T, int chips, int host,
    const comet_system_llm *m, const comet_system_opts *o, const comet_system_config *c,
    comet_system_result *r)
{
    comet_system sys;
    char err[512];
    assert_int_equal(
        comet_system_from_profile(h, COMET_MODEL_FP32, T, chips, host, NULL, &sys, err, sizeof err),
        0);
    const int rc = comet_system_eval(&sys, m, o, c, r);
    comet_system_free(&sys);
    if (rc || !r->feasible)
        return -1;
    if (!(r->step_s >= r->bound_s * (1 - 1e-9)))
        fail_msg("case %d: step %g below its bound %g", n, r->step_s, r->bound_s);
    return 0;
}

static int eval_ranks(int n, int T, int chips, int host, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, comet_system_result *r)
{
    return eval_ranks_on(&hw, n, T, chips, host, m, o, c, r);
}

/* Generated ranks of a calibrated CPU (threads split each GEMM, one-row
 * products as GEMV streams, weights read before use, a benchmarked step's
 * pipeline filled and drained): every step at least its bound, and the same
 * replica on twice the data-parallel ranks (half the batch each) never
 * slower on its compute. 3000 cases. */
static void test_generated_ranks(void **s)
{
    (void)s;
    static const int hid[] = { 64, 128, 256, 384, 512, 768 }, thr[] = { 1, 2, 3, 4 };
    int checked = 0;
    for (int n = 0; n < 3000; n++) {
        comet_system_llm m = small();
        m.hidden = hid[pick(6)];
        m.heads = m.hidden / 64;
        m.head_dim = 64;
        m.kv_heads = m.heads;
        m.ffn = 4 * m.hidden;
        m.layers = 1 + pick(4);
        m.seq = 1 << pick(9);
        m.global_batch = 1 << pick(5);
        const int ph = pick(3), T = thr[pick(4)];
        comet_system_opts o = { .phase = ph == 0 ? COMET_SYSTEM_TRAIN
                : ph == 1                        ? COMET_SYSTEM_PREFILL
                                                 : COMET_SYSTEM_DECODE,
            .context = ph == 2 ? 1 + pick(512) : 0,
            .one_step = pick(2) };
        comet_system_config c = { .tp = 1 << pick(2),
            .pp = 1,
            .dp = 1,
            .interleave = 1,
            .order = { 0, 2, 1 },
            .recompute = (comet_system_recompute)pick(3),
            .exec = COMET_SYSTEM_EXEC_KERNEL };
        if (ph != 0)
            c.recompute = COMET_SYSTEM_RECOMPUTE_NONE;
        o.recompute = (int)c.recompute;
        if (m.heads % c.tp)
            c.tp = 1;
        c.microbatch = m.global_batch;
        m.microbatch = c.microbatch;
        double prev = INFINITY;
        for (int dp = 1; dp <= 2 && m.global_batch / dp >= 1; dp++) {
            c.dp = dp;
            c.microbatch = m.global_batch / dp;
            o.microbatch = c.microbatch;
            comet_system_result r;
            if (eval_ranks(n, T, c.tp * dp, 1, &m, &o, &c, &r))
                break;
            /* compute: the replica's share of the batch on each rank */
            const double comp = r.breakdown.compute_s + r.breakdown.memory_s;
            if (!(comp <= prev * (1 + 1e-9)))
                fail_msg("case %d: dp %d computes %g s, dp %d %g s", n, dp, comp, dp - 1, prev);
            prev = comp;
            checked++;
        }
    }
    assert_true(checked > 3000);
}

/* Ranks sharing one machine (validate --system's records of one host):
 * each rank's compute at the share of a core the profile measured with that
 * many cores busy (comet_model_gms_core_share), memory and network as
 * before; sharing the host is never faster, the step never below its bound,
 * and more ranks a host than chips is refused. 2000 generated cases. */
/* A generated step of the small model's family for dp data-parallel
 * replicas: width 64-256, 1-3 layers, 2-256 tokens, batch batch0 << (0 ..
 * nbatch - 1) sequences, a random phase (decode: 1 .. ctx tokens cached),
 * tp 1 or 2 where the heads split, kernel by kernel, one step timed alone. */
static void gen_step(int dp, int batch0, int nbatch, int ctx, comet_system_llm *m,
    comet_system_opts *o, comet_system_config *c)
{
    *m = small();
    m->hidden = 64 << pick(3);
    m->heads = m->hidden / 64;
    m->kv_heads = m->heads;
    m->ffn = 4 * m->hidden;
    m->layers = 1 + pick(3);
    m->seq = 1 << (1 + pick(8));
    m->global_batch = batch0 << pick(nbatch);
    const int ph = pick(3), tp = 1 + pick(2);
    *o = (comet_system_opts) { .phase = ph == 0 ? COMET_SYSTEM_TRAIN
            : ph == 1                           ? COMET_SYSTEM_PREFILL
                                                : COMET_SYSTEM_DECODE,
        .context = ph == 2 ? 1 + pick(ctx) : 0,
        .one_step = 1 };
    *c = (comet_system_config) { .tp = m->heads % tp ? 1 : tp,
        .pp = 1,
        .dp = dp,
        .interleave = 1,
        .order = { 0, 2, 1 },
        .recompute = COMET_SYSTEM_RECOMPUTE_NONE,
        .exec = COMET_SYSTEM_EXEC_KERNEL };
    c->microbatch = m->global_batch / dp;
    m->microbatch = c->microbatch;
    o->microbatch = c->microbatch;
}

static void test_host_ranks(void **s)
{
    (void)s;
    comet_system sys;
    char err[512];
    assert_int_equal(
        comet_system_from_profile(&hw, COMET_MODEL_FP32, 1, 2, 3, NULL, &sys, err, sizeof err),
        -EINVAL);
    assert_int_equal(
        comet_system_from_profile(&hw, COMET_MODEL_FP32, 1, 2, 0, NULL, &sys, err, sizeof err),
        -EINVAL);
    /* the fixture's grid: the per-core rate at 2 busy cores against 1 */
    const double want = comet_model_gms_core_share(&hw, 2) / comet_model_gms_core_share(&hw, 1);
    assert_true(want > 0 && want <= 1);
    int checked = 0, shares = 0;
    for (int n = 0; n < 2000; n++) {
        const int T = 1 + pick(2), dp = 1 + pick(2);
        comet_system_llm m;
        comet_system_opts o;
        comet_system_config c;
        gen_step(dp, 2, 3, 256, &m, &o, &c);
        const int chips = c.tp * c.dp;
        double prev = 0, act1 = 0;
        for (int h = 1; h <= chips; h++) {
            comet_system_result r;
            if (eval_ranks(n, T, chips, h, &m, &o, &c, &r))
                break;
            if (!(r.step_s >= prev * (1 - 1e-9)))
                fail_msg(
                    "case %d: %d ranks a host %g s, %d ranks %g s", n, h, r.step_s, h - 1, prev);
            prev = r.step_s;
            /* the GELU kernel (a vector kernel, no memory in its compute) */
            double act = 0;
            for (int i = 0; i < r.parts[0].n; i++)
                if (!strcmp(r.parts[0].kernel[i], "act"))
                    act = r.parts[0].compute_s[i];
            if (h == 1)
                act1 = act;
            else if (T == 1 && h == 2 && act1 > 0 && act > 0) {
                /* one thread a rank, two ranks: the measured two-core share */
                const double got = act1 / act;
                if (fabs(got - want) > 1e-5 * want)
                    fail_msg("case %d: compute share %g, the grid's %g", n, got, want);
                shares++;
            }
            checked++;
        }
    }
    assert_true(checked > 2000);
    assert_true(shares > 100); /* the two-core share was checked, not skipped */
}

/* The cold reads a profile measured (gemm.cold_read: what packing a GEMM's
 * weights from DRAM adds; gemm.cold_gemv_cycles_per_byte: a decode step's
 * attention over its KV cache in DRAM), over 2000 generated cases with
 * random tables: a step is never faster with them than without, never below
 * its bound; one whose weights and KV cache fit the host's LLC keeps the
 * costs it had; where the attention's cold rate sets its time, twice the
 * cycles per byte is twice the time (one row: the score kernel). */
static void test_cold_reads(void **s)
{
    (void)s;
    int checked = 0, doubled = 0;
    for (int n = 0; n < 2000; n++) {
        comet_model_hw cold = hw;
        cold.cold_rows = 8;
        cold.cold_nn = 1 + pick(4);
        cold.cold_nk = 1 + pick(4);
        for (int i = 0; i < cold.cold_nn; i++)
            cold.cold_N[i] = 64 << (2 * i);
        for (int i = 0; i < cold.cold_nk; i++)
            cold.cold_K[i] = 64 << (2 * i);
        for (int i = 0; i < cold.cold_nn * cold.cold_nk; i++)
            cold.cold_cpb[i] = pick(1000) / 500.0;
        cold.cold_gemv_cpb = (1 + pick(1000)) / 200.0;
        /* an LLC the step overflows (the cold rates apply) or one it fits in */
        const int fits = pick(3) == 0;
        cold.gb.capacity = fits ? 1e15 : 1024;
        const int T = 1 + pick(2);
        comet_system_llm m;
        comet_system_opts o;
        comet_system_config c;
        gen_step(1, 1, 4, 1024, &m, &o, &c);
        const int ph = o.phase == COMET_SYSTEM_DECODE ? 2 : 0;
        comet_system_result r0, r1;
        if (eval_ranks_on(&hw, n, T, c.tp, c.tp, &m, &o, &c, &r0)
            || eval_ranks_on(&cold, n, T, c.tp, c.tp, &m, &o, &c, &r1))
            continue;
        if (!(r1.step_s >= r0.step_s * (1 - 1e-9)))
            fail_msg("case %d: %g s with the cold reads, %g s without", n, r1.step_s, r0.step_s);
        if (fits && r1.step_s != r0.step_s) /* nothing read cold: the costs it had */
            fail_msg("case %d: a step inside the LLC moved: %g s, %g s", n, r1.step_s, r0.step_s);
        checked++;
        if (ph != 2 || fits)
            continue;
        /* the decode attention at a cold rate 100x the tables' (it sets the
         * time), then twice that */
        double sc[2] = { 0, 0 };
        for (int k = 0; k < 2; k++) {
            comet_model_hw big = cold;
            big.cold_gemv_cpb = 100.0 * (k + 1);
            comet_system_result r;
            if (eval_ranks_on(&big, n, T, c.tp, c.tp, &m, &o, &c, &r))
                break;
            for (int i = 0; i < r.parts[0].n; i++)
                if (!strcmp(r.parts[0].kernel[i], "score"))
                    sc[k] = r.parts[0].compute_s[i];
        }
        if (sc[0] > 0 && sc[1] > 0) {
            if (fabs(sc[1] / sc[0] - 2) > 1e-5)
                fail_msg("case %d: score %g s at 100 cycles/B, %g s at 200", n, sc[0], sc[1]);
            doubled++;
        }
    }
    assert_true(checked > 1500);
    assert_true(doubled > 200);
}

/* 1F1B's paired exchanges over a link with a measured exchange
 * (calibration.fits.exchange): over generated two-stage training steps and
 * generated exchange fits, the step is never below its bound, never faster
 * than over the same link without the exchange fit when the exchange is
 * no faster than one message (equal when the fit says one message's
 * time), the pipeline term is 2 t + (m - 1) x, and a second replica on
 * twice the ranks (half the batch each) is never slower. */
static void test_exchange_steps(void **s)
{
    (void)s;
    comet_system_llm m = small();
    comet_system_opts o = { .phase = COMET_SYSTEM_TRAIN };
    for (int n = 0; n < 2000; n++) {
        comet_system sys;
        char err[512];
        assert_int_equal(
            comet_system_from_profile(&hw, COMET_MODEL_FP32, 1, 4, 1, "shm", &sys, err, sizeof err),
            0);
        m.hidden = 64 << pick(4);
        m.heads = m.hidden / 64;
        m.kv_heads = m.heads;
        m.ffn = 4 * m.hidden;
        m.layers = 2 << pick(3);
        m.seq = 64 << pick(3);
        m.global_batch = 2 << pick(4);
        const int mb = 1 << pick(2);
        comet_system_config c = { .tp = 1,
            .pp = 2,
            .dp = 1,
            .interleave = 1,
            .microbatch = mb <= m.global_batch ? mb : 1,
            .order = { 0, 2, 1 },
            .recompute = COMET_SYSTEM_RECOMPUTE_NONE,
            .exec = COMET_SYSTEM_EXEC_KERNEL };
        const double bytes = (double)c.microbatch * m.seq * m.hidden * m.bytes_per_elem;
        comet_system_result r0, r1, r2;
        sys.hw.links.xch_nseg = 0;
        assert_int_equal(comet_system_eval(&sys, &m, &o, &c, &r0), 0);
        const double t = comet_system_p2p_s(&sys, 1, 2, bytes);
        assert_true(comet_system_exchange_s(&sys, 1, 2, bytes) == t);
        /* a generated exchange: one or two pieces, 0.5-3x one message */
        comet_model_links *l = &sys.hw.links;
        const double k = 0.5 + 2.5 * pick(1000) / 999.0;
        l->xch_nseg = 1 + pick(2);
        l->xch_seg_from_bytes[0] = 0;
        l->xch_seg_alpha_s[0] = k * l->p2p_alpha_s;
        l->xch_seg_beta_s[0] = k * l->p2p_beta_s;
        l->xch_seg_from_bytes[1] = bytes * (0.5 + pick(2));
        l->xch_seg_alpha_s[1] = k * (l->p2p_alpha_s + 1e-4);
        l->xch_seg_beta_s[1] = k * l->p2p_beta_s;
        const double x = comet_system_exchange_s(&sys, 1, 2, bytes);
        assert_int_equal(comet_system_eval(&sys, &m, &o, &c, &r1), 0);
        assert_true(r0.feasible && r1.feasible);
        if (!(r1.step_s >= r1.bound_s * (1 - 1e-9)))
            fail_msg("case %d: step %g below its bound %g", n, r1.step_s, r1.bound_s);
        const double mbs = (double)m.global_batch / c.microbatch;
        const double want = x > t ? 2 * t + (mbs - 1) * x : (mbs + 1) * t;
        if (fabs(r1.breakdown.pp_s - want) > 1e-9 * want)
            fail_msg("case %d: pipeline %g, want 2 t + (m - 1) x = %g", n, r1.breakdown.pp_s, want);
        if (x >= t)
            assert_true(r1.step_s >= r0.step_s * (1 - 1e-12));
        else
            assert_true(r1.step_s == r0.step_s);
        /* twice the ranks: a second replica, half the batch each */
        comet_system_config c2 = c;
        c2.dp = 2;
        if (m.global_batch / 2 >= c.microbatch) {
            assert_int_equal(comet_system_eval(&sys, &m, &o, &c2, &r2), 0);
            if (r2.feasible && !(r2.step_s - r2.breakdown.dp_s <= r1.step_s * (1 + 1e-9)))
                fail_msg("case %d: two replicas %g (without their all-reduce) slower than one %g",
                    n, r2.step_s - r2.breakdown.dp_s, r1.step_s);
        }
        comet_system_free(&sys);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_fits),
        cmocka_unit_test(test_vector_costs),
        cmocka_unit_test(test_generated_ranks),
        cmocka_unit_test(test_host_ranks),
        cmocka_unit_test(test_cold_reads),
        cmocka_unit_test(test_exchange_steps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
