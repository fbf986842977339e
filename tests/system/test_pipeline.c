/* The pipeline's transfers on a step's critical path (system/step.c,
 * system/pipe.c): the closed forms sys_pp_1f1b_s and sys_pp_forward_s
 * against a discrete-event simulation of the schedules themselves
 * (Megatron's 1F1B and forward-only schedules, blocking point-to-point)
 * over thousands of generated (pp, microbatches, forward, backward,
 * transfer) cases; the replay of Megatron-LM's 1F1B and interleaved
 * programs (sys_pipe_megatron_s) against that simulation and its
 * properties. */
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

/* Megatron-LM's schedules replayed (system/pipe.c, schedules.py
 * @cfd2e21607): the step's time of p stages, m microbatches, v chunks. */
static double replay(int p, long m, int v, double F, double B, double t, double x)
{
    return sys_pipe_megatron_s(p, m, v, v > 1, F, B, t, x, 0);
}

/* A generated case: 1F1B (v = 1, p >= 2, any m) or interleaved (p >= 3,
 * v >= 2, m a multiple of p, as Megatron requires); links from far faster
 * than a stage to 100x slower, exchanges at one message's time (x = t,
 * full duplex) to 3x. */
static void gen(int *p, long *m, int *v, double *F, double *B, double *t, double *x, int i)
{
    *v = i % 3 ? irand(2, 6) : 1;
    *p = irand(*v > 1 ? 3 : 2, MAXP);
    *m = *v > 1 ? (long)*p * irand(1, 6) : irand(1, MAXM);
    *F = 0.01 + 3 * urand();
    *B = urand() < 0.2 ? *F : 0.01 + 6 * urand();
    const double scale[] = { 0, 0.05, 1, 10, 100 };
    *t = urand() * scale[irand(0, 4)];
    *x = i % 2 ? *t : *t * (1 + 2 * urand());
}

/* The replay of the 1F1B program equals this file's own simulation of it
 * (written apart: per-message bookkeeping, paired when posted in two-message
 * steps at both ends) for every generated case, exchanges slower than a
 * message and more than two stages included; so it equals the closed form
 * where that is exact (two stages; x = t) and is never above it. */
static void test_megatron_1f1b_replay(void **state)
{
    (void)state;
    double over = 0;
    for (int i = 0; i < 6000; i++) {
        const int p = irand(2, MAXP), m = irand(1, MAXM);
        const double F = 0.01 + 3 * urand(), B = 0.01 + 6 * urand();
        const double scale[] = { 0, 0.05, 1, 10, 100 };
        const double t = urand() * scale[irand(0, 4)];
        const double x = i % 2 ? t : t * (1 + 2 * urand());
        const double sim = sim_1f1b(p, m, F, B, t, x), rep = replay(p, m, 1, F, B, t, x);
        if (!(fabs(rep - sim) <= 1e-9 * sim))
            fail_msg("p=%d m=%d F=%g B=%g t=%g x=%g: replayed %.9g, simulated %.9g", p, m, F, B, t,
                x, rep, sim);
        const double nb = (m + p - 1) * (F + B), cf = nb + sys_pp_1f1b_s(p, m, F, B, t, x);
        if ((p == 2 || x == t) && !(fabs(rep - cf) <= 1e-9 * cf))
            fail_msg("p=%d m=%d x=t or two stages: replayed %.9g, closed form %.9g", p, m, rep, cf);
        if (!(cf >= rep * (1 - 1e-9)))
            fail_msg("p=%d m=%d: closed form %.9g below the replay %.9g", p, m, cf, rep);
        if (rep > nb && (cf - rep) / (rep - nb) > over)
            over = (cf - rep) / (rep - nb);
    }
    print_message(
        "1F1B replay = simulation; the closed form at most %.2g of the transfers above\n", over);
}

/* Megatron's programs: every rank runs m v forwards and m v backwards;
 * on each link and direction as many sends as receives (each message has
 * both its ends); the replay completes (no deadlock) for every (p, m, v)
 * Megatron accepts, from one group of p microbatches up. */
static void test_megatron_programs(void **state)
{
    (void)state;
    for (int v = 1; v <= 6; v++)
        for (int p = v > 1 ? 3 : 2; p <= MAXP; p++)
            for (long m = v > 1 ? p : 1; m <= (v > 1 ? 6L * p : MAXM); m += v > 1 ? p : 1) {
                const long per = 6 * m * v + 8;
                unsigned char *ops = malloc((size_t)per);
                long sends[MAXP][2] = { { 0 } }, recvs[MAXP][2] = { { 0 } };
                assert_non_null(ops);
                for (int r = 0; r < p; r++) {
                    const long n = sys_pipe_megatron_program(p, m, v, v > 1, r, ops);
                    assert_true(n > 0 && n <= per);
                    long nf = 0, nbk = 0;
                    const int lp = (r + p - 1) % p;
                    for (long k = 0; k < n; k++) {
                        nf += ops[k] == 16;
                        nbk += ops[k] == 32;
                        if (ops[k] & 1)
                            sends[lp][1]++; /* a gradient back over the link behind */
                        if (ops[k] & 2)
                            recvs[lp][0]++;
                        if (ops[k] & 4)
                            sends[r][0]++; /* an activation on over the link ahead */
                        if (ops[k] & 8)
                            recvs[r][1]++;
                    }
                    assert_int_equal(nf, m * v);
                    assert_int_equal(nbk, m * v);
                }
                free(ops);
                for (int l = 0; l < p; l++) {
                    assert_int_equal(sends[l][0], recvs[l][0]);
                    assert_int_equal(sends[l][1], recvs[l][1]);
                    /* the ring's last link carries messages only interleaved */
                    if (l == p - 1 && v == 1)
                        assert_int_equal(sends[l][0] + sends[l][1], 0);
                }
                assert_false(isnan(replay(p, m, v, 1, 2, 0.3, 0.5)));
            }
    /* what Megatron refuses: no replay */
    assert_true(isnan(replay(2, 4, 2, 1, 2, 0.1, 0.1)));
    assert_true(isnan(replay(4, 6, 2, 1, 2, 0.1, 0.1)));
    assert_true(isnan(sys_pp_megatron_s(4, 6, 3, 1, 2, 0.1, 0.1, 0, 0)));
}

/* The programs move the right tensors: matching each link's messages in
 * the order posted (as NCCL does), every forward of chunk c, microbatch j
 * finds (c, j)'s activation as the last one received for chunk c
 * (schedules.py: input_tensors[c][-1]) and every backward pops (c, j)'s
 * gradient first from chunk c's queue (output_tensor_grads[c].pop(0)); a
 * send carries the output of the rank's latest forward (activation) or
 * latest backward (gradient), the ring's last rank feeding chunk c + 1 of
 * the first. */
static long fwd_label(int p, int v, long k, int bwd)
{
    const long pv = (long)p * v, c = (k % pv) / p;
    return (bwd ? v - 1 - c : c) * 100000 + (k / pv) * p + k % p; /* chunk, microbatch */
}

static void test_megatron_dataflow(void **state)
{
    (void)state;
    enum { MAXV = 6, MAXN = 6 * MAXP * MAXV };
    static long sent[MAXP][2][MAXN], q[MAXV][MAXN];
    static unsigned char ops[6 * MAXN + 8];
    int checked = 0;
    for (int v = 1; v <= MAXV; v++)
        for (int p = v > 1 ? 3 : 2; p <= MAXP; p++)
            for (long m = v > 1 ? p : 1; m <= 6L * p; m += v > 1 ? p : 1) {
                long nsent[MAXP][2] = { { 0 } };
                for (int r = 0; r < p; r++) { /* what each rank sends, in order */
                    const long n = sys_pipe_megatron_program(p, m, v, v > 1, r, ops);
                    long kf = 0, kb = 0, lastf = -1, lastb = -1;
                    for (long i = 0; i < n; i++) {
                        if (ops[i] == 16)
                            lastf = fwd_label(p, v, kf++, 0);
                        else if (ops[i] == 32)
                            lastb = fwd_label(p, v, kb++, 1);
                        if (ops[i] & 4) /* activation on: chunk c + 1 past the ring's end */
                            sent[r][0][nsent[r][0]++] = lastf + (r == p - 1 ? 100000 : 0);
                        if (ops[i] & 1)
                            sent[(r + p - 1) % p][1][nsent[(r + p - 1) % p][1]++]
                                = lastb - (r == 0 ? 100000 : 0);
                    }
                }
                for (int r = 0; r < p; r++) { /* what each receives, and uses */
                    const long n = sys_pipe_megatron_program(p, m, v, v > 1, r, ops);
                    long kf = 0, kb = 0, got[2] = { 0, 0 }, last[MAXV], head[MAXV] = { 0 },
                         tail[MAXV] = { 0 };
                    for (int c = 0; c < v; c++)
                        last[c] = -1;
                    const int lp = (r + p - 1) % p;
                    for (long i = 0; i < n; i++) {
                        if (ops[i] & 2) {
                            const long x = sent[lp][0][got[0]++];
                            last[x / 100000] = x;
                        }
                        if (ops[i] & 8) {
                            const long x = sent[r][1][got[1]++], c = x / 100000;
                            q[c][tail[c]++] = x;
                        }
                        if (ops[i] == 16) {
                            const long want = fwd_label(p, v, kf++, 0), c = want / 100000;
                            if (!(r == 0 && c == 0) && last[c] != want)
                                fail_msg("p=%d m=%ld v=%d rank %d: forward %ld found %ld", p, m, v,
                                    r, want, last[c]);
                        }
                        if (ops[i] == 32) {
                            const long want = fwd_label(p, v, kb++, 1), c = want / 100000;
                            if (!(r == p - 1 && c == v - 1)) {
                                if (head[c] >= tail[c] || q[c][head[c]] != want)
                                    fail_msg("p=%d m=%ld v=%d rank %d: backward %ld without its "
                                             "gradient",
                                        p, m, v, r, want);
                                head[c]++;
                            }
                        }
                    }
                    assert_int_equal(got[0], nsent[lp][0]);
                    assert_int_equal(got[1], nsent[r][1]);
                    for (int c = 0; c < v; c++)
                        assert_int_equal(head[c], tail[c]);
                    checked++;
                }
            }
    print_message("%d rank programs move the right tensors\n", checked);
}

/* Properties over generated cases of both schedules:
 * - without transfers the replay is the compute-only schedule, m (F + B) +
 *   (p - 1)(F + B) / v (Narayanan et al. 2021's bubble), and never faster
 *   with them; nor faster than microbatch 0's own chain, p (F + B) plus its
 *   2 (p v - 1) transfers;
 * - slower links, slower exchanges, slower compute: never faster;
 * - more microbatches: a longer step; with x = t never a longer step per
 *   microbatch (with x > t it can be: the steady state's paired exchanges
 *   pace it, the fill's lone messages do not);
 * - the interleaved program with one chunk (what Megatron runs for a
 *   virtual pipeline size of 1) equals 1F1B without transfers (with them
 *   it differs: its combined calls move both links' messages at once);
 * - sys_pp_megatron_s (memoised, extrapolated where the replay is affine
 *   in m) equals the full replay's time beyond the compute. */
static void test_megatron_props(void **state)
{
    (void)state;
    int differ = 0;
    for (int i = 0; i < 4000; i++) {
        int p, v;
        long m;
        double F, B, t, x;
        gen(&p, &m, &v, &F, &B, &t, &x, i);
        const long u = v > 1 ? p : 1;
        const double T = replay(p, m, v, F, B, t, x);
        const double nb = ((double)m + (p - 1.0) / v) * (F + B);
        if (!(T >= nb * (1 - 1e-12)))
            fail_msg("p=%d m=%ld v=%d: %.9g below the compute-only %.9g", p, m, v, T, nb);
        const double T0 = replay(p, m, v, F, B, 0, 0);
        if (!(fabs(T0 - nb) <= 1e-9 * nb))
            fail_msg("p=%d m=%ld v=%d F=%g B=%g: without transfers %.9g, not %.9g", p, m, v, F, B,
                T0, nb);
        assert_true(T >= p * (F + B) + 2.0 * (p * v - 1) * t - 1e-9 * T);
        const double k = 1 + urand();
        assert_true(replay(p, m, v, F, B, t * k, x * k) >= T * (1 - 1e-12));
        assert_true(replay(p, m, v, F, B, t, x * k) >= T * (1 - 1e-12));
        assert_true(replay(p, m, v, F * k, B, t, x) >= T * (1 - 1e-12));
        assert_true(replay(p, m, v, F, B * k, t, x) >= T * (1 - 1e-12));
        const double T2 = replay(p, m + u, v, F, B, t, x);
        assert_true(T2 >= T * (1 - 1e-12));
        if (x == t && !(T2 / (m + u) <= T / m * (1 + 1e-12)))
            fail_msg("p=%d m=%ld v=%d x=t: %.9g a microbatch with %ld more, %.9g before", p, m, v,
                T2 / (m + u), u, T / m);
        if (v == 1 && p >= 3 && m % p == 0) {
            const double il0 = sys_pipe_megatron_s(p, m, 1, 1, F, B, 0, 0, 0);
            assert_true(fabs(il0 - T0) <= 1e-9 * T0);
            differ += fabs(sys_pipe_megatron_s(p, m, 1, 1, F, B, t, x, 0) - T) > 1e-9 * T;
        }
        /* the fast path against the full replay, up to 12 groups (v > 1) or
         * 4 p + 8 microbatches */
        const long mm = v > 1 ? (long)p * irand(1, 12) : irand(1, 4 * p + 8);
        const double full = replay(p, mm, v, F, B, t, x);
        const double want = t > 0 ? fmax(0, full - ((double)mm + (p - 1.0) / v) * (F + B)) : 0;
        const double got = sys_pp_megatron_s(p, mm, v, F, B, t, x, 0, 0);
        if (!(fabs(got - want) <= 1e-9 * full))
            fail_msg("p=%d m=%ld v=%d F=%g B=%g t=%g x=%g: fast %.12g, replay %.12g", p, mm, v, F,
                B, t, x, got, want);
        assert_true(sys_pp_megatron_s(p, mm, v, F, B, t, x, 0, 0) == got); /* memoised: the same */
    }
    print_message(
        "one-chunk interleaved program differs from 1F1B with transfers in %d cases\n", differ);
}

/* The replay over ports (sys_pipe_megatron_ports_s): unshared, the same
 * time as the replay; shared (a rank's messages to both neighbours through
 * one port), 1F1B unchanged (its calls use one link), interleaved never
 * faster than unshared and never slower than unshared with every message
 * twice as long (a port carries at most two at once: each moves at half
 * rate or more); the same physics as the replay (monotone, the compute-only
 * schedule without transfers, more microbatches never faster, with x = t
 * never slower per microbatch); with Megatron's scatter/gather (part of
 * each transfer the receiver's all-gather after the wait) within its
 * bounds; and sys_pp_megatron_s's fast path equal to the full replays. */
static void test_megatron_ports(void **state)
{
    (void)state;
    double most = 0;
    for (int i = 0; i < 3000; i++) {
        int p, v;
        long m;
        double F, B, t, x;
        gen(&p, &m, &v, &F, &B, &t, &x, i);
        const int il = v > 1;
        const double T = replay(p, m, v, F, B, t, x);
        const double U = sys_pipe_megatron_ports_s(p, m, v, il, F, B, t, x, 0, 0);
        const double S = sys_pipe_megatron_ports_s(p, m, v, il, F, B, t, x, 1, 0);
        if (!(fabs(U - T) <= 1e-9 * T))
            fail_msg("p=%d m=%ld v=%d: unshared ports %.12g, replay %.12g", p, m, v, U, T);
        if (v == 1 && !(fabs(S - T) <= 1e-9 * T))
            fail_msg("p=%d m=%ld 1F1B: shared ports %.12g, replay %.12g", p, m, S, T);
        assert_true(S >= T * (1 - 1e-12));
        assert_true(S <= replay(p, m, v, F, B, 2 * t, 2 * x) * (1 + 1e-9));
        const double nb = ((double)m + (p - 1.0) / v) * (F + B);
        assert_true(
            fabs(sys_pipe_megatron_ports_s(p, m, v, il, F, B, 0, 0, 1, 0) - nb) <= 1e-9 * nb);
        if (T > nb * (1 + 1e-9) && (S - nb) / (T - nb) > most)
            most = (S - nb) / (T - nb);
        const double k = 1 + urand();
        assert_true(
            sys_pipe_megatron_ports_s(p, m, v, il, F, B, t * k, x * k, 1, 0) >= S * (1 - 1e-12));
        assert_true(
            sys_pipe_megatron_ports_s(p, m, v, il, F, B, t, x * k, 1, 0) >= S * (1 - 1e-12));
        assert_true(
            sys_pipe_megatron_ports_s(p, m, v, il, F * k, B, t, x, 1, 0) >= S * (1 - 1e-12));
        assert_true(
            sys_pipe_megatron_ports_s(p, m, v, il, F, B * k, t, x, 1, 0) >= S * (1 - 1e-12));
        const long u = v > 1 ? p : 1;
        const double S2 = sys_pipe_megatron_ports_s(p, m + u, v, il, F, B, t, x, 1, 0);
        assert_true(S2 >= S * (1 - 1e-12));
        if (x == t)
            assert_true(S2 / (m + u) <= S / m * (1 + 1e-12));
        /* Megatron's scatter/gather: L of each t is the receiver's
         * all-gather after the call's wait, its received tensors in turn:
         * no faster than the messages shortened by L alone, no slower than
         * lengthened by L (a call gathers at most two); shared ports: no
         * faster than unshared; the ports engine unshared = the replay */
        const double L = t * urand();
        const double TL = sys_pipe_megatron_s(p, m, v, il, F, B, t, x, L);
        const double SL = sys_pipe_megatron_ports_s(p, m, v, il, F, B, t, x, 1, L);
        assert_true(TL >= sys_pipe_megatron_s(p, m, v, il, F, B, t - L, x - L, 0) * (1 - 1e-12));
        assert_true(TL <= sys_pipe_megatron_s(p, m, v, il, F, B, t + L, x + L, 0) * (1 + 1e-12));
        assert_true(
            fabs(sys_pipe_megatron_ports_s(p, m, v, il, F, B, t, x, 0, L) - TL) <= 1e-9 * TL);
        assert_true(SL >= TL * (1 - 1e-12));
        if (v == 1)
            assert_true(fabs(SL - TL) <= 1e-9 * TL);
        const long mm = v > 1 ? (long)p * irand(1, 12) : irand(1, 4 * p + 8);
        for (int sh = 0; sh < 2; sh++) { /* the fast path, with gathers */
            const double full = sh ? sys_pipe_megatron_ports_s(p, mm, v, il, F, B, t, x, 1, L)
                                   : sys_pipe_megatron_s(p, mm, v, il, F, B, t, x, L);
            const double want = t > 0 ? fmax(0, full - ((double)mm + (p - 1.0) / v) * (F + B)) : 0;
            const double got = sys_pp_megatron_s(p, mm, v, F, B, t, x, sh, L);
            if (!(fabs(got - want) <= 1e-9 * full))
                fail_msg("p=%d m=%ld v=%d F=%g B=%g t=%g x=%g L=%g shared %d: fast %.12g, replay "
                         "%.12g",
                    p, mm, v, F, B, t, x, L, sh, got, want);
        }
    }
    print_message("a shared port: the interleaved transfers at most %.3gx the unshared\n", most);
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
        cmocka_unit_test(test_megatron_1f1b_replay),
        cmocka_unit_test(test_megatron_programs),
        cmocka_unit_test(test_megatron_dataflow),
        cmocka_unit_test(test_megatron_props),
        cmocka_unit_test(test_megatron_ports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
