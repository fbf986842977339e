/* The pipeline's transfers on a step's critical path (system/step.c):
 * the closed forms sys_pp_1f1b_s and sys_pp_forward_s against a
 * discrete-event simulation of the schedules themselves (Megatron's 1F1B
 * and forward-only schedules, blocking point-to-point over full-duplex
 * links) over thousands of generated (pp, microbatches, forward, backward,
 * transfer) cases. */
#include "../../system/system_internal.h"
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_helpers.h"

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
#define urand()       comet_test_urand(&rng)
#define irand(lo, hi) comet_test_irand(&rng, lo, hi) /* inclusive */

enum { MAXP = 12, MAXM = 48, MAXOPS = 6 * MAXM };

/* One step of a stage's program: compute for d seconds (n == 0), or post
 * n messages and wait until all have moved. A message: forward activation
 * (dir 0) or backward gradient (dir 1) of microbatch k over link l (stages
 * l and l + 1), this stage its sender or its receiver. */
typedef struct {
    double d;
    int n, dir[2], k[2], l[2], send[2];
} step;

static void msg(step *st, int dir, int k, int l, int send)
{
    st->dir[st->n] = dir, st->k[st->n] = k, st->l[st->n] = l, st->send[st->n] = send;
    st->n++;
}

/* Stage s's program in Megatron's 1F1B (schedules.py,
 * forward_backward_pipelining_without_interleaving): min(p - s - 1, m)
 * warm-up forwards, each recv_forward / forward / send_forward; then per
 * remaining microbatch forward, send_forward_recv_backward, backward,
 * send_backward_recv_forward (the last: send_backward); then the cool-down
 * backwards, each recv_backward / backward / send_backward. The first stage
 * has no previous stage, the last no next: those messages drop out. */
static int program(int p, int m, int s, double F, double B, step *out)
{
    int n = 0, f = 0, b = 0;
    const int first = s == 0, last = s == p - 1;
    const int warm = p - s - 1 < m ? p - s - 1 : m, rem = m - warm;
#define NEW() (memset(&out[n], 0, sizeof out[n]), &out[n])
#define PUSH(st)                                                                                   \
    do {                                                                                           \
        if ((st)->n || (st)->d > 0)                                                                \
            n++;                                                                                   \
    } while (0)
    for (int i = 0; i < warm; i++, f++) {
        step *st = NEW();
        if (!first)
            msg(st, 0, f, s - 1, 0);
        PUSH(st);
        st = NEW();
        st->d = F;
        PUSH(st);
        st = NEW();
        if (!last)
            msg(st, 0, f, s, 1);
        PUSH(st);
    }
    if (rem > 0 && !first) {
        step *st = NEW();
        msg(st, 0, f, s - 1, 0);
        PUSH(st);
    }
    for (int i = 0; i < rem; i++) {
        step *st = NEW();
        st->d = F;
        PUSH(st);
        st = NEW();
        if (!last) {
            msg(st, 0, f, s, 1);
            msg(st, 1, b, s, 0);
        }
        PUSH(st);
        f++;
        st = NEW();
        st->d = B;
        PUSH(st);
        st = NEW();
        if (!first)
            msg(st, 1, b, s - 1, 1);
        if (i < rem - 1 && !first)
            msg(st, 0, f, s - 1, 0);
        PUSH(st);
        b++;
    }
    for (int i = 0; i < warm; i++, b++) {
        step *st = NEW();
        if (!last)
            msg(st, 1, b, s, 0);
        PUSH(st);
        st = NEW();
        st->d = B;
        PUSH(st);
        st = NEW();
        if (!first)
            msg(st, 1, b, s - 1, 1);
        PUSH(st);
    }
#undef NEW
#undef PUSH
    return n;
}

/* Simulates the step: each stage runs its program in order; a message
 * moves for t once its sender and its receiver have posted it and the
 * previous message of its link's direction has moved (the two directions
 * of a link apart: full duplex). Returns the step's end. */
static double sim_1f1b(int p, int m, double F, double B, double t, double x)
{
    static step prog[MAXP][MAXOPS];
    static double post[MAXP][2][MAXM][2], done[MAXP][2][MAXM]; /* [link][dir][k][send] */
    static int paired[MAXP][2][MAXM][2]; /* posted by a step of two messages */
    int nst[MAXP], next[MAXP];
    double clock[MAXP];
    for (int l = 0; l < MAXP; l++)
        for (int d = 0; d < 2; d++)
            for (int k = 0; k < MAXM; k++)
                post[l][d][k][0] = post[l][d][k][1] = done[l][d][k] = -1;
    for (int s = 0; s < p; s++) {
        nst[s] = program(p, m, s, F, B, prog[s]);
        next[s] = 0;
        clock[s] = 0;
    }
    for (int left = 1; left;) {
        left = 0;
        int moved = 0;
        for (int s = 0; s < p; s++) {
            while (next[s] < nst[s]) {
                const step *st = &prog[s][next[s]];
                if (!st->n) {
                    clock[s] += st->d;
                    next[s]++;
                    moved = 1;
                    continue;
                }
                double end = clock[s];
                int ok = 1;
                for (int i = 0; i < st->n; i++) {
                    double *me = &post[st->l[i]][st->dir[i]][st->k[i]][st->send[i]];
                    if (*me < 0) {
                        *me = clock[s];
                        paired[st->l[i]][st->dir[i]][st->k[i]][st->send[i]] = st->n == 2;
                    }
                }
                for (int i = 0; i < st->n && ok; i++) {
                    const int l = st->l[i], d = st->dir[i], k = st->k[i];
                    if (done[l][d][k] < 0) {
                        const double ps = post[l][d][k][1], pr = post[l][d][k][0];
                        if (ps < 0 || pr < 0 || (k > 0 && done[l][d][k - 1] < 0)) {
                            ok = 0;
                            break;
                        }
                        const double go = fmax(fmax(ps, pr), k > 0 ? done[l][d][k - 1] : 0);
                        /* posted paired at both ends: the two ways at once */
                        done[l][d][k] = go + (paired[l][d][k][0] && paired[l][d][k][1] ? x : t);
                    }
                    end = fmax(end, done[l][d][k]);
                }
                if (!ok)
                    break;
                clock[s] = end;
                next[s]++;
                moved = 1;
            }
            left |= next[s] < nst[s];
        }
        if (left && !moved)
            fail_msg("the 1F1B simulation deadlocked at p=%d m=%d", p, m);
    }
    double end = 0;
    for (int s = 0; s < p; s++)
        end = fmax(end, clock[s]);
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
 * microbatches and the reverse; with a paired exchange x slower than one
 * message (up to 3x): equal with two stages, never below with more. */
static void test_1f1b_closed_form(void **state)
{
    (void)state;
    double worst = 0, over = 0;
    for (int i = 0; i < 6000; i++) {
        const int p = irand(2, MAXP), m = irand(1, MAXM);
        const double F = 0.01 + 3 * urand(), B = 0.01 + 6 * urand();
        const double scale[] = { 0, 0.05, 1, 10, 100 };
        const double t = urand() * scale[irand(0, 4)];
        const double x = i % 2 ? t : t * (1 + 2 * urand());
        const double sim = sim_1f1b(p, m, F, B, t, x);
        const double nb = (m + p - 1) * (F + B);
        const double cf = nb + sys_pp_1f1b_s(p, m, F, B, t, x);
        const double err = fabs(cf - sim) / sim;
        if (x == t || p == 2) {
            if (err > worst)
                worst = err;
            if (err > 1e-9)
                fail_msg("p=%d m=%d F=%g B=%g t=%g x=%g: simulated %.9g, closed form %.9g", p, m, F,
                    B, t, x, sim, cf);
        } else {
            if (cf < sim * (1 - 1e-9))
                fail_msg("p=%d m=%d F=%g B=%g t=%g x=%g: closed form %.9g below the simulated "
                         "%.9g",
                    p, m, F, B, t, x, cf, sim);
            if (sim > nb && (cf - sim) / (sim - nb) > over)
                over = (cf - sim) / (sim - nb);
        }
        /* physics: no faster than the schedule without transfers plus one
         * round trip (the fill), no slower than every transfer in turn, each
         * an exchange */
        const double fill = 2.0 * (p - 1) * t, serial = fill + 2.0 * m * x;
        assert_true(cf >= nb + fill - 1e-9 * cf);
        assert_true(cf <= nb + serial + 1e-9 * cf);
        /* a slower link, or a slower exchange, never makes the step faster */
        assert_true(sys_pp_1f1b_s(p, m, F, B, t * 1.5, x * 1.5) >= sys_pp_1f1b_s(p, m, F, B, t, x));
        assert_true(sys_pp_1f1b_s(p, m, F, B, t, x * 1.5) >= sys_pp_1f1b_s(p, m, F, B, t, x));
        /* an exchange at one message's time is the full-duplex schedule */
        assert_true(sys_pp_1f1b_s(p, m, F, B, t, t) == sys_pp_1f1b_s(p, m, F, B, t, 0));
    }
    print_message("1F1B closed form vs simulation: worst relative difference %.2g; with slower "
                  "exchanges over more stages at most %.2g of the transfers above\n",
        worst, over);
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
    assert_true(sys_pp_1f1b_s(1, 8, 1, 2, 5, 5) == 0);
    assert_true(sys_pp_1f1b_s(4, 8, 1, 2, 0, 0) == 0);
    assert_true(sys_pp_forward_s(1, 8, 5) == 0);
    /* one microbatch: its round trip, pp - 1 links each way */
    assert_true(fabs(sys_pp_1f1b_s(4, 1, 1, 2, 0.5, 0.5) - 3.0) < 1e-12);
    /* two stages, four microbatches: a0 and g3 alone, three pairs */
    assert_true(fabs(sys_pp_1f1b_s(2, 4, 1, 2, 0.5, 0.9) - (2 * 0.5 + 3 * 0.9)) < 1e-12);
    assert_true(fabs(sys_pp_forward_s(4, 1, 0.5) - 1.5) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1f1b_closed_form),
        cmocka_unit_test(test_forward_closed_form),
        cmocka_unit_test(test_degenerate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
