/* The pipeline's transfers on a step's critical path (system/step.c):
 * the closed forms sys_pp_1f1b_s and sys_pp_forward_s against a
 * discrete-event simulation of the schedules themselves over thousands of
 * generated (pp, microbatches, forward, backward, transfer) cases. */
#include "../../system/system_internal.h"
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

enum { MAXP = 12, MAXM = 48, MAXOPS = 2 * MAXM };

/* Stage s's 1F1B program (Narayanan et al. 2021; bench/llm_engine.c's
 * train_grads): min(p - s - 1, m) forwards, then a forward and a backward
 * in turn, then the remaining backwards. Ops: +k+1 forward of k, -(k+1) its
 * backward. */
static int program(int p, int m, int s, int *op)
{
    int n = 0, f = 0, b = 0;
    const int warm = p - s - 1 < m ? p - s - 1 : m;
    while (f < warm)
        op[n++] = ++f;
    while (f < m) {
        op[n++] = ++f;
        op[n++] = -(++b);
    }
    while (b < m)
        op[n++] = -(++b);
    return n;
}

/* Simulates the 1F1B step: each stage runs its program in order, an op
 * starts when the stage is free and (but on the first stage's forwards and
 * the last stage's backwards) its message has arrived; a stage posts its
 * send at the op's end and goes on; a message occupies its link's direction
 * for t (duplex: the two directions apart; else one medium for both), one
 * message after the other in the order sent; block: the sender waits until
 * its message has arrived. Returns the step's end. */
static double sim_1f1b(int p, int m, double F, double B, double t, int duplex, int block)
{
    static int op[MAXP][MAXOPS];
    int nop[MAXP], next[MAXP];
    double freeat[MAXP], arr_f[MAXP][MAXM], arr_b[MAXP][MAXM], wire[MAXP][2];
    int got_f[MAXP][MAXM], got_b[MAXP][MAXM];
    memset(got_f, 0, sizeof got_f);
    memset(got_b, 0, sizeof got_b);
    memset(wire, 0, sizeof wire);
    for (int s = 0; s < p; s++) {
        nop[s] = program(p, m, s, op[s]);
        next[s] = 0;
        freeat[s] = 0;
    }
    double end = 0;
    for (int left = 1; left;) {
        left = 0;
        int moved = 0;
        for (int s = 0; s < p; s++) {
            while (next[s] < nop[s]) {
                const int o = op[s][next[s]], k = (o > 0 ? o : -o) - 1;
                double start = freeat[s];
                if (o > 0 && s > 0) {
                    if (!got_f[s][k])
                        break;
                    start = fmax(start, arr_f[s][k]);
                } else if (o < 0 && s < p - 1) {
                    if (!got_b[s][k])
                        break;
                    start = fmax(start, arr_b[s][k]);
                }
                double fin = start + (o > 0 ? F : B);
                if (o > 0 && s < p - 1) { /* activation to s + 1 over link s */
                    double *w = &wire[s][0];
                    const double go = fmax(fin, *w);
                    *w = go + t;
                    arr_f[s + 1][k] = go + t;
                    got_f[s + 1][k] = 1;
                    if (block)
                        fin = go + t;
                } else if (o < 0 && s > 0) { /* gradient to s - 1 over link s - 1 */
                    double *w = &wire[s - 1][duplex ? 1 : 0];
                    const double go = fmax(fin, *w);
                    *w = go + t;
                    arr_b[s - 1][k] = go + t;
                    got_b[s - 1][k] = 1;
                    if (block)
                        fin = go + t;
                }
                freeat[s] = fin;
                end = fmax(end, fin);
                next[s]++;
                moved = 1;
            }
            left |= next[s] < nop[s];
        }
        if (left && !moved)
            fail_msg("the 1F1B simulation deadlocked at p=%d m=%d", p, m);
    }
    return end;
}

/* Simulates a forward-only step with blocking sends: stage s receives
 * microbatch k (the transfer starts once the sender has computed it and the
 * receiver is free: a blocking send completes when its receiver takes it),
 * computes f, sends it on and waits for that send. Returns the step's end. */
static double sim_forward(int p, int m, double F, double t)
{
    double freeat[MAXP] = { 0 }, ready[MAXP] = { 0 }, end = 0;
    for (int k = 0; k < m; k++)
        for (int s = 0; s < p; s++) {
            const double start = s == 0 ? freeat[0] : ready[s];
            const double fin = start + F;
            if (s < p - 1) {
                const double go = fmax(fin, freeat[s + 1]); /* the receiver is there */
                ready[s + 1] = go + t;
                freeat[s] = go + t;
                /* the receiver is busy from go until its message is in */
                freeat[s + 1] = go + t;
            } else {
                freeat[s] = fin;
                end = fmax(end, fin);
            }
        }
    return end;
}

/* The closed form equals the simulation over generated cases, from links
 * far faster than a stage to links 100x slower, pipelines longer than their
 * microbatches and the reverse. */
static void test_1f1b_closed_form(void **state)
{
    (void)state;
    double worst = 0;
    for (int i = 0; i < 6000; i++) {
        const int p = irand(2, MAXP), m = irand(1, MAXM);
        const double F = 0.01 + 3 * urand(), B = 0.01 + 6 * urand();
        const double scale[] = { 0, 0.05, 1, 10, 100 };
        const double t = urand() * scale[irand(0, 4)];
        const double sim = sim_1f1b(p, m, F, B, t, 1, 0);
        const double nb = (m + p - 1) * (F + B);
        const double cf = nb + sys_pp_1f1b_s(p, m, F, B, t);
        const double err = fabs(cf - sim) / sim;
        if (err > worst)
            worst = err;
        if (err > 1e-9)
            fail_msg("p=%d m=%d F=%g B=%g t=%g: simulated %.9g, closed form %.9g", p, m, F, B, t,
                sim, cf);
        /* physics: no faster than the schedule without transfers plus one
         * round trip (the fill), no slower than every transfer in turn */
        const double fill = 2.0 * (p - 1) * t, serial = fill + 2.0 * m * t;
        assert_true(cf >= nb + fill - 1e-9 * cf);
        assert_true(cf <= nb + serial + 1e-9 * cf);
        /* a slower link never makes the step faster */
        assert_true(sys_pp_1f1b_s(p, m, F, B, t * 1.5) >= sys_pp_1f1b_s(p, m, F, B, t));
    }
    print_message("1F1B closed form vs simulation: worst relative difference %.2g\n", worst);
}

/* What the closed form is not: a medium shared by both directions and a
 * sender blocked on its own sends cost at least as much (the same schedule,
 * simulated), and for some cases strictly more. */
static void test_1f1b_duplex_matters(void **state)
{
    (void)state;
    int half_more = 0, block_more = 0;
    for (int i = 0; i < 2000; i++) {
        const int p = irand(2, 8), m = irand(1, 32);
        const double F = 0.1 + urand(), B = 0.1 + 2 * urand(), t = 3 * urand();
        const double full = sim_1f1b(p, m, F, B, t, 1, 0);
        const double half = sim_1f1b(p, m, F, B, t, 0, 0);
        const double blk = sim_1f1b(p, m, F, B, t, 1, 1);
        assert_true(half >= full - 1e-9 * full);
        assert_true(blk >= full - 1e-9 * full);
        half_more += half > full * (1 + 1e-9);
        block_more += blk > full * (1 + 1e-9);
    }
    assert_true(half_more > 0);
    assert_true(block_more > 0);
}

static void test_forward_closed_form(void **state)
{
    (void)state;
    for (int i = 0; i < 6000; i++) {
        const int p = irand(2, MAXP), m = irand(1, MAXM);
        const double F = 0.01 + 3 * urand();
        const double scale[] = { 0, 0.05, 1, 10, 100 };
        const double t = urand() * scale[irand(0, 4)];
        const double sim = sim_forward(p, m, F, t);
        const double cf = (m + p - 1) * F + sys_pp_forward_s(p, m, t);
        if (fabs(cf - sim) > 1e-9 * sim)
            fail_msg("forward-only p=%d m=%d F=%g t=%g: simulated %.9g, closed form %.9g", p, m, F,
                t, sim, cf);
        assert_true(sys_pp_forward_s(p, m, t) >= (p - 1) * t - 1e-12);
    }
}

/* No transfers, no pipeline, no time. */
static void test_degenerate(void **state)
{
    (void)state;
    assert_true(sys_pp_1f1b_s(1, 8, 1, 2, 5) == 0);
    assert_true(sys_pp_1f1b_s(4, 8, 1, 2, 0) == 0);
    assert_true(sys_pp_forward_s(1, 8, 5) == 0);
    /* one microbatch: its round trip, pp - 1 links each way */
    assert_true(fabs(sys_pp_1f1b_s(4, 1, 1, 2, 0.5) - 3.0) < 1e-12);
    assert_true(fabs(sys_pp_forward_s(4, 1, 0.5) - 1.5) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_closed_form),
        cmocka_unit_test(test_1f1b_duplex_matters),
        cmocka_unit_test(test_forward_closed_form),
        cmocka_unit_test(test_degenerate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
