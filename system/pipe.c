/* DeepSpeed's pipeline engine as it ran in 2021 (microsoft/DeepSpeed
 * deepspeed/runtime/pipe/schedule.py TrainSchedule, unchanged from its
 * first commit 65c2f97 of 2020-09 to b528f50 of 2023-03; p2p.py and
 * engine.py @1fc74cb of 2021-10-13): every stage runs 2 (m + p - 1)
 * steps; on a step an even stage of an even step (odd of odd) runs a
 * forward, the others a backward, each step's transfers first, in the
 * order schedule.py lists them (forward step: RecvActivation, SendGrad;
 * backward step: SendActivation, RecvGrad), each a blocking NCCL
 * send/recv (p2p.py: async_op must be False) that starts when both ends
 * have reached it. This file replays that program event by event: the
 * pipeline's time follows from the schedule and the three durations, no
 * constant of its own. docs/system.md ("DeepSpeed's pipeline engine"). */
#include "system_internal.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OP_F, OP_B, OP_SEND_ACT, OP_RECV_ACT, OP_SEND_GRAD, OP_RECV_GRAD };

/* schedule.py's _step_to_micro_batch: the microbatch stage s works on at
 * `step` and whether it is a forward */
static int micro_of(int step, int p, int s, int *fwd)
{
    const int es = step % 2 == 0, ss = s % 2 == 0;
    *fwd = es == ss;
    if (es && ss)
        return step / 2 - s / 2;
    if (!es && !ss)
        return (step - 1) / 2 - s / 2;
    if (es) /* even step, odd stage: backward */
        return step / 2 - p + (s + 1) / 2;
    return (step - 1) / 2 - p + 1 + s / 2;
}

/* Stage s's instructions in order; returns how many. */
static int program(int m, int p, int s, unsigned char *ops)
{
    int n = 0, prev = -1;
    for (int step = 0; step < 2 * (m + p - 1); step++) {
        int fwd;
        const int mb = micro_of(step, p, s, &fwd);
        const int ok = mb >= 0 && mb < m, pok = prev >= 0 && prev < m;
        if (fwd) {
            if (ok && s > 0)
                ops[n++] = OP_RECV_ACT;
            if (pok && s > 0)
                ops[n++] = OP_SEND_GRAD;
        } else {
            if (pok && s < p - 1)
                ops[n++] = OP_SEND_ACT;
            if (ok && s < p - 1)
                ops[n++] = OP_RECV_GRAD;
        }
        if (ok)
            ops[n++] = fwd ? OP_F : OP_B;
        prev = mb;
    }
    return n;
}

/* The operation on stage `peer` that pairs with `op` on stage s. */
static int partner(int op, int s, int *peer)
{
    switch (op) {
    case OP_SEND_ACT:
        *peer = s + 1;
        return OP_RECV_ACT;
    case OP_RECV_ACT:
        *peer = s - 1;
        return OP_SEND_ACT;
    case OP_SEND_GRAD:
        *peer = s - 1;
        return OP_RECV_GRAD;
    default: /* OP_RECV_GRAD */
        *peer = s + 1;
        return OP_SEND_GRAD;
    }
}

double sys_pipe_deepspeed_s(int m, int p, double F, double B, double c)
{
    if (m < 1 || p < 1)
        return NAN;
    if (p == 1)
        return m * (F + B);
    const int per = 6 * (m + p); /* at most 3 instructions a step */
    unsigned char *ops = malloc((size_t)p * (size_t)per);
    int *len = malloc(sizeof(int) * 2 * (size_t)p);
    double *t = calloc((size_t)p, sizeof *t);
    if (!ops || !len || !t) {
        free(ops);
        free(len);
        free(t);
        return NAN;
    }
    int *pc = len + p;
    for (int s = 0; s < p; s++) {
        len[s] = program(m, p, s, ops + (size_t)s * per);
        pc[s] = 0;
    }
    double end = 0;
    for (;;) {
        int moved = 0, done = 1;
        for (int s = 0; s < p; s++) {
            const unsigned char *o = ops + (size_t)s * per;
            while (pc[s] < len[s]) {
                const int op = o[pc[s]];
                if (op == OP_F || op == OP_B) {
                    t[s] += op == OP_F ? F : B;
                    pc[s]++;
                    moved = 1;
                    continue;
                }
                int peer;
                const int want = partner(op, s, &peer);
                if (pc[peer] >= len[peer] || ops[(size_t)peer * per + pc[peer]] != want)
                    break; /* the peer has not reached it yet */
                const double at = fmax(t[s], t[peer]) + c;
                t[s] = t[peer] = at;
                pc[s]++;
                pc[peer]++;
                moved = 1;
            }
            if (pc[s] < len[s])
                done = 0;
        }
        if (done)
            break;
        if (!moved) { /* cannot happen for schedule.py's program (a test checks) */
            end = NAN;
            break;
        }
    }
    if (!isnan(end))
        for (int s = 0; s < p; s++)
            end = fmax(end, t[s]);
    free(ops);
    free(len);
    free(t);
    return end;
}

int comet_system_pipe_engine_parse(const char *s, comet_system_pipe_engine *e)
{
    if (s && !strcmp(s, "megatron"))
        *e = COMET_SYSTEM_PIPE_MEGATRON;
    else if (s && !strcmp(s, "deepspeed"))
        *e = COMET_SYSTEM_PIPE_DEEPSPEED;
    else
        return -EINVAL;
    return 0;
}

/* 1F1B as Megatron runs it (sys_pp_1f1b_s; schedules.py,
 * forward_backward_pipelining_without_interleaving): every point-to-point
 * call blocks until its messages have moved, and a message moves (t) once
 * its sender and its receiver have both posted it (a rendezvous: NCCL's
 * send/recv, MPI's above the eager size). In the steady state a stage posts
 * send_forward_recv_backward after each forward and
 * send_backward_recv_forward after each backward: on a full-duplex link
 * the activation going out and the gradient coming in move at once, t an
 * exchange. One microbatch's round trip through the pipeline is the fill,
 * 2 (pp - 1) t. Beyond it a stage with neighbours on both sides exchanges
 * twice a microbatch, 2 t; the first and last stages once, t: with two
 * stages (m + 1) t in all, with more 2 (pp - 1) t + 2 (m - 2) t plus, for
 * the microbatch whose exchanges meet the drain, t, or 2 t - min(f, b) or 3 t
 * - (f + b) when the link is slower than a stage's compute. Equal to a
 * discrete-event simulation of the schedule over thousands of generated
 * cases (tests/system/test_pipeline.c).
 *
 * x: a paired exchange, both of its messages moved (the link's own
 * measurement, bench collectives --colls exchange; x = t on a link whose two
 * directions move at once at full rate). A message posted in a pair at both
 * its ends (send_forward_recv_backward against send_backward_recv_forward)
 * moves for x, a lone one for t. Two stages: the first activation and the
 * last gradient go alone, the m - 1 between in pairs, 2 t + (m - 1) x
 * (equal to the simulation). More stages: 2 (pp - 1) t + 2 (m - 2) x plus
 * the drain's edge in x, equal to the simulation when x = t and never
 * below it (at most 0.41x above its transfers, at m = 2; the simulation's
 * fill mixes lone and paired messages). */
double sys_pp_1f1b_s(int pp, long m, double f, double b, double t, double x)
{
    if (pp < 2 || m < 1 || !(t > 0))
        return 0;
    if (m == 1)
        return 2.0 * (pp - 1) * t;
    if (!(x > t)) { /* an exchange no slower than one message (no faster either) */
        if (pp == 2)
            return (double)(m + 1) * t;
        const double edge = fmax(t, fmax(2 * t - fmin(f, b), 3 * t - (f + b)));
        return 2.0 * (pp - 1) * t + 2.0 * (double)(m - 2) * t + edge;
    }
    if (pp == 2)
        return 2 * t + (double)(m - 1) * x;
    const double edge = fmax(x, fmax(2 * x - fmin(f, b), 3 * x - (f + b)));
    return 2.0 * (pp - 1) * t + 2.0 * (double)(m - 2) * x + edge;
}

/* Megatron-LM's pipeline schedules, replayed the same way. The ordering is
 * that of megatron/schedules.py and megatron/p2p_communication.py at
 * NVIDIA/Megatron-LM cfd2e21607 (2022-04-28; the code of Korthikanti et al.
 * 2022's runs, unchanged in these functions' ordering until the move to
 * megatron/core in 3c92fa93b5 of 2023-03): forward_backward_pipelining_
 * without_interleaving and forward_backward_pipelining_with_interleaving.
 * Every p2p call is one _communicate: its sends and receives posted as one
 * batch_isend_irecv, then waited for (blocking). Ranks form a ring for the
 * interleaved schedule (the last rank's chunk c feeds the first rank's
 * chunk c + 1). A message moves once both ends have posted it (NCCL's
 * send/recv rendezvous); messages of one link and direction match in the
 * order posted (NCCL's per-peer order). A message whose call at each end
 * also holds the opposite message of the same link, the two matching each
 * other, moves with it as a paired exchange: both in x; any other moves
 * alone in t. A call completes when all its messages have moved. */

enum { MS_SP = 1, MS_RP = 2, MS_SN = 4, MS_RN = 8, MOP_F = 16, MOP_B = 32 };

/* python's % (schedules.py's get_model_chunk_id takes negative ids) */
static long pymod(long a, long n)
{
    const long r = a % n;
    return r < 0 ? r + n : r;
}

/* forward_backward_pipelining_without_interleaving, rank r of p, m
 * microbatches (training). Returns the number of ops. */
static long prog_1f1b(int p, long m, int r, unsigned char *o)
{
    long n = 0;
    const int first = r == 0, last = r == p - 1;
    const long warm = p - r - 1 < m ? p - r - 1 : m, rem = m - warm;
    for (long i = 0; i < warm; i++) {
        if (!first)
            o[n++] = MS_RP; /* recv_forward */
        o[n++] = MOP_F;
        if (!last)
            o[n++] = MS_SN; /* send_forward */
    }
    if (rem > 0 && !first)
        o[n++] = MS_RP;
    for (long i = 0; i < rem; i++) {
        o[n++] = MOP_F;
        if (!last)
            o[n++] = MS_SN | MS_RN; /* send_forward_recv_backward */
        o[n++] = MOP_B;
        if (!first) /* send_backward (last iteration) or send_backward_recv_forward */
            o[n++] = i == rem - 1 ? MS_SP : MS_SP | MS_RP;
    }
    for (long i = 0; i < warm; i++) {
        if (!last)
            o[n++] = MS_RN; /* recv_backward */
        o[n++] = MOP_B;
        if (!first)
            o[n++] = MS_SP; /* send_backward */
    }
    return n;
}

/* forward_backward_pipelining_with_interleaving, rank r of p, v model
 * chunks, m microbatches (training; m a multiple of p). */
static long prog_interleaved(int p, long m, int v, int r, unsigned char *o)
{
    long n = 0;
    const long N = m * v, pv = (long)p * v;
    const int all_warm = m == p;
    long warm = all_warm ? N : 2L * (p - r - 1) + (long)(v - 1) * p;
    if (warm > N)
        warm = N;
    const long rem = N - warm;
#define FCH(k)   ((int)(pymod((k), pv) / p))
#define BCH(k)   (v - 1 - FCH(k))
#define FIRST(c) (r == 0 && (c) == 0)
#define LAST(c)  (r == p - 1 && (c) == v - 1)
    if (r != 0)
        o[n++] = MS_RP; /* recv_forward on virtual rank 0 */
    for (long k = 0; k < warm; k++) {
        o[n++] = MOP_F;
        const int rp = !(r == 0 && FCH(k + 1) == 0) && k != N - 1;
        const int sn = !LAST(FCH(k));
        int call = (sn ? MS_SN : 0) | (rp ? MS_RP : 0);
        if (k == warm - 1 && !all_warm && r != p - 1)
            call |= MS_RN; /* send_forward_backward_recv_forward_backward */
        if (call) /* else send_forward_recv_forward */
            o[n++] = (unsigned char)call;
    }
    for (long k = 0; k < rem; k++) {
        const long fk = k + warm, bk = k;
        o[n++] = MOP_F;
        o[n++] = MOP_B;
        const int sn = !LAST(FCH(fk)), sp = !FIRST(BCH(bk));
        int rp = r == 0 ? FCH(fk - (p - 1)) != v - 1 : 1;
        const int rn = r == p - 1 ? BCH(bk - (p - 1)) != 0 : 1;
        if (k == rem - 1)
            rp = 0;
        const int call = (sp ? MS_SP : 0) | (rp ? MS_RP : 0) | (sn ? MS_SN : 0) | (rn ? MS_RN : 0);
        if (call)
            o[n++] = (unsigned char)call;
    }
    if (all_warm && r != p - 1)
        o[n++] = MS_RN; /* recv_backward on virtual rank v - 1 */
    for (long k = rem; k < N; k++) {
        o[n++] = MOP_B;
        const int rn = !(r == p - 1 && BCH(k + 1) == v - 1) && k != N - 1;
        const int sp = !FIRST(BCH(k));
        const int call = (sp ? MS_SP : 0) | (rn ? MS_RN : 0); /* send_backward_recv_backward */
        if (call)
            o[n++] = (unsigned char)call;
    }
#undef FCH
#undef BCH
#undef FIRST
#undef LAST
    return n;
}

long sys_pipe_megatron_program(int p, long m, int v, int il, int r, unsigned char *ops)
{
    return il ? prog_interleaved(p, m, v, r, ops) : prog_1f1b(p, m, r, ops);
}

/* Slot k of a call (the bit 1 << k of its op): its link (the previous
 * rank's for k < 2, the rank's own else: sl), direction (0 forward, 1
 * backward: sd) and end (0 sender, 1 receiver: se); the opposite message
 * of slot k is slot k ^ 1. */
static const int sd[4] = { 1, 0, 0, 1 }, se[4] = { 0, 1, 0, 1 };

/* What both replays take: the schedules Megatron refuses (-1), x below t
 * raised to t (a pair is never faster than one message), local 0 unless
 * positive. */
static int megatron_args(int p, long m, int v, int il, double t, double *x, double *local)
{
    if (p < 1 || m < 1 || v < 1 || (v > 1 && !il) || (il && (p < 3 || m % p)))
        return -1;
    if (*x < t)
        *x = t;
    if (!(*local > 0))
        *local = 0;
    return 0;
}

/* One message of a link's direction: its two ends' post times, the
 * sequence number of the opposite message in the same call at each end
 * (-1: none), and when it has moved (-1: not yet). */
typedef struct {
    double post[2], done;
    long opp[2];
} pmsg;

double sys_pipe_megatron_s(
    int p, long m, int v, int il, double F, double B, double t, double x, double local)
{
    if (megatron_args(p, m, v, il, t, &x, &local))
        return NAN;
    if (p == 1)
        return m * (F + B);
    const long N = m * v, per = 6 * N + 8, cap = N + 2;
    const double f = F / v, b = B / v;
    unsigned char *ops = malloc((size_t)p * (size_t)per);
    long *len = malloc(sizeof(long) * 2 * (size_t)p + sizeof(long) * 2 * 2 * (size_t)p);
    double *clk = calloc((size_t)p, sizeof *clk);
    pmsg *msg = malloc(sizeof(pmsg) * 2 * (size_t)p * (size_t)cap);
    int *posted = calloc((size_t)p, sizeof *posted);
    long(*seq)[4] = malloc(sizeof(long[4]) * (size_t)p);
    double end = NAN;
    if (!ops || !len || !clk || !msg || !posted || !seq)
        goto out;
    long *pc = len + p, *cnt = len + 2 * p; /* cnt[(l * 2 + d) * 2 + end]: posted so far */
    for (int r = 0; r < p; r++) {
        len[r] = sys_pipe_megatron_program(p, m, v, il, r, ops + (size_t)r * per);
        pc[r] = 0;
    }
    memset(cnt, 0, sizeof(long) * 4 * (size_t)p);
    for (;;) {
        int moved = 0, done = 1;
        for (int r = 0; r < p; r++) {
            const unsigned char *o = ops + (size_t)r * per;
            const int lp = (r + p - 1) % p, sl[4] = { lp, lp, r, r };
            while (pc[r] < len[r]) {
                const int op = o[pc[r]];
                if (op & (MOP_F | MOP_B)) {
                    clk[r] += op == MOP_F ? f : b;
                    pc[r]++;
                    moved = 1;
                    continue;
                }
                if (!posted[r]) {
                    for (int k = 0; k < 4; k++)
                        seq[r][k] = op & (1 << k) ? cnt[(sl[k] * 2 + sd[k]) * 2 + se[k]]++ : -1;
                    for (int k = 0; k < 4; k++)
                        if (seq[r][k] >= 0) {
                            pmsg *q = &msg[((size_t)sl[k] * 2 + sd[k]) * cap + seq[r][k]];
                            if (se[k] == 0 && seq[r][k] >= cnt[(sl[k] * 2 + sd[k]) * 2 + 1])
                                q->post[1] = -1, q->done = -1; /* first end here: clear */
                            if (se[k] == 1 && seq[r][k] >= cnt[(sl[k] * 2 + sd[k]) * 2])
                                q->post[0] = -1, q->done = -1;
                            q->post[se[k]] = clk[r];
                            q->opp[se[k]] = seq[r][k ^ 1];
                        }
                    posted[r] = 1;
                    moved = 1;
                }
                double at = clk[r];
                int ready = 1;
                for (int k = 0; k < 4 && ready; k++) {
                    if (seq[r][k] < 0)
                        continue;
                    pmsg *q = &msg[((size_t)sl[k] * 2 + sd[k]) * cap + seq[r][k]];
                    if (q->post[0] < 0 || q->post[1] < 0) {
                        ready = 0;
                        break;
                    }
                    if (q->done < 0) {
                        const int pair = q->opp[0] >= 0 && q->opp[0] == q->opp[1];
                        q->done = fmax(q->post[0], q->post[1]) + fmax(0, (pair ? x : t) - local);
                    }
                    at = fmax(at, q->done);
                }
                if (!ready)
                    break;
                /* the received tensors gathered after the wait, in turn */
                clk[r] = at + (!!(op & MS_RP) + !!(op & MS_RN)) * local;
                posted[r] = 0;
                pc[r]++;
                moved = 1;
            }
            if (pc[r] < len[r])
                done = 0;
        }
        if (done)
            break;
        if (!moved) /* a deadlock: a test checks that the schedules have none */
            goto out;
    }
    end = 0;
    for (int r = 0; r < p; r++)
        end = fmax(end, clk[r]);
out:
    free(ops);
    free(len);
    free(clk);
    free(msg);
    free(posted);
    free(seq);
    return end;
}

/* The replay's time is affine in the number of microbatches once the
 * pipeline has filled: from m = p + 1 on (v = 1) and from two groups of p
 * on (v > 1; the interleaved schedule repeats per group of p microbatches),
 * each further microbatch (group) adding the same time (over a shared port
 * too). Beyond m0 + 2 u the replays of m0 and m0 + u microbatches (v = 1:
 * p + 2 and p + 3; v > 1: 2 and 3 groups) are extrapolated, so a step costs
 * at most the replay of 2 p + 5 microbatches (5 groups); test_pipeline
 * checks the extrapolation against the full replay over generated cases. Where
 * sys_pp_1f1b_s is exact (v = 1 with p = 2 or x <= t; equal to the replay,
 * tested) it is used directly. Results are memoised by (p, m, v, F, B, t, x,
 * shared, local):
 * explore asks the same question for every order of the degrees. */
typedef struct {
    int p, v, shared;
    long m;
    double F, B, t, x, local, s;
} pmemo;

double sys_pp_megatron_s(
    int p, long m, int v, double F, double B, double t, double x, int shared, double local)
{
    if (p < 2 || m < 1 || v < 1 || !(t > 0))
        return 0;
    if (v > 1 && (p < 3 || m % p))
        return NAN;
    if (x < t)
        x = t;
    if (!(local > 0))
        local = 0;
    if (v == 1 && (p == 2 || x == t) && local == 0)
        return sys_pp_1f1b_s(p, m, F, B, t, x);
    shared = shared && v > 1; /* 1F1B's calls use one link: nothing shares a port */
    enum { NMEMO = 256 };
    static _Thread_local pmemo memo[NMEMO];
    uint64_t h = 1469598103934665603ULL;
    const double key[5] = { F, B, t, x, local };
    const long ik[4] = { p, m, v, shared };
    const unsigned char *kb = (const unsigned char *)key;
    for (size_t i = 0; i < sizeof key; i++)
        h = (h ^ kb[i]) * 1099511628211ULL;
    kb = (const unsigned char *)ik;
    for (size_t i = 0; i < sizeof ik; i++)
        h = (h ^ kb[i]) * 1099511628211ULL;
    pmemo *e = &memo[h % NMEMO];
    if (e->p == p && e->m == m && e->v == v && e->shared == shared && e->F == F && e->B == B
        && e->t == t && e->x == x && e->local == local)
        return e->s;
    const long u = v > 1 ? p : 1, m0 = v > 1 ? 2L * p : p + 2;
    double T;
#define RUN(mm)                                                                                    \
    (shared ? sys_pipe_megatron_ports_s(p, (mm), v, v > 1, F, B, t, x, 1, local)                   \
            : sys_pipe_megatron_s(p, (mm), v, v > 1, F, B, t, x, local))
    if (m <= m0 + 2 * u) { /* no dearer than the two replays */
        T = RUN(m);
    } else {
        const double a = RUN(m0), c = RUN(m0 + u);
        T = a + (double)(m - m0) / u * (c - a);
    }
#undef RUN
    if (isnan(T)) /* a deadlock or no memory */
        return NAN;
    const double s = fmax(0, T - ((double)m + (p - 1.0) / v) * (F + B));
    *e = (pmemo) { .p = p,
        .m = m,
        .v = v,
        .shared = shared,
        .F = F,
        .B = B,
        .t = t,
        .x = x,
        .local = local,
        .s = s };
    return s;
}

/* The same programs over ports: each rank sends through one outbound port
 * and receives through one inbound port, shared by the messages of its
 * call in flight at once (a GPU's one NIC to both its pipeline neighbours),
 * each port moving one message a t. A time-ordered replay: messages in
 * flight share their ports max-min fairly (progressive filling), a message
 * needing t - local alone (x - local when paired), the call's received
 * tensors then gathered in turn, `local` each, as in sys_pipe_megatron_s. With shared == 0 every
 * message moves at its own full rate and the replay is sys_pipe_megatron_s's (a test checks). Only
 * the interleaved schedule's steady state posts two sends (and two receives) at once; 1F1B's calls
 * use one link. */
typedef struct {
    double post[2], left, rate;
    long opp[2];
    int src, dst, state; /* state: 0 waiting for an end, 1 moving, 2 moved */
} fmsg;

/* max-min fair rates of the moving messages over ports of capacity 1 */
static void fair_rates(fmsg **mv, int n, int p, int shared, double *use, int *cnt)
{
    for (int i = 0; i < n; i++)
        mv[i]->rate = shared ? -1 : 1;
    if (!shared)
        return;
    int left = 0;
    for (int i = 0; i < n; i++)
        left += mv[i]->rate < 0;
    while (left > 0) {
        for (int k = 0; k < 2 * p; k++)
            use[k] = 0, cnt[k] = 0;
        for (int i = 0; i < n; i++) {
            const int a = mv[i]->src, b = p + mv[i]->dst;
            if (mv[i]->rate >= 0)
                use[a] += mv[i]->rate, use[b] += mv[i]->rate;
            else
                cnt[a]++, cnt[b]++;
        }
        double share = INFINITY;
        for (int k = 0; k < 2 * p; k++)
            if (cnt[k])
                share = fmin(share, fmax(0, 1 - use[k]) / cnt[k]);
        for (int i = 0; i < n; i++) { /* fix the messages of the bottleneck ports */
            if (mv[i]->rate >= 0)
                continue;
            const int a = mv[i]->src, b = p + mv[i]->dst;
            if ((cnt[a] && fmax(0, 1 - use[a]) / cnt[a] <= share * (1 + 1e-12))
                || (cnt[b] && fmax(0, 1 - use[b]) / cnt[b] <= share * (1 + 1e-12))) {
                mv[i]->rate = share;
                left--;
            }
        }
    }
}

double sys_pipe_megatron_ports_s(
    int p, long m, int v, int il, double F, double B, double t, double x, int shared, double local)
{
    if (megatron_args(p, m, v, il, t, &x, &local))
        return NAN;
    if (p == 1)
        return m * (F + B);
    const long N = m * v, per = 6 * N + 8, cap = N + 2;
    const double f = F / v, b = B / v;
    unsigned char *ops = malloc((size_t)p * (size_t)per);
    long *len = malloc(sizeof(long) * 6 * (size_t)p);
    double *until = malloc(sizeof(double) * (size_t)p),
           *use = malloc(sizeof(double) * 2 * (size_t)p);
    int *st = calloc((size_t)p, sizeof *st), *cnt = malloc(sizeof(int) * 2 * (size_t)p);
    fmsg *msg = malloc(sizeof(fmsg) * 2 * (size_t)p * (size_t)cap);
    fmsg **mv = malloc(sizeof(fmsg *) * 4 * (size_t)p);
    long(*seq)[4] = malloc(sizeof(long[4]) * (size_t)p);
    double end = NAN;
    if (!ops || !len || !until || !use || !st || !cnt || !msg || !mv || !seq)
        goto out;
    long *pc = len + p, *cn = len + 2 * p;
    for (int r = 0; r < p; r++) {
        len[r] = sys_pipe_megatron_program(p, m, v, il, r, ops + (size_t)r * per);
        pc[r] = 0;
    }
    memset(cn, 0, sizeof(long) * 4 * (size_t)p);
    /* st: 0 ready, 1 computing until[r], 2 waiting in a posted call, 3 done */
    double now = 0;
    int nmv = 0, dirty = 1;
    for (;;) {
        int changed = 1;
        while (changed) { /* run every rank as far as it goes at `now` */
            changed = 0;
            for (int r = 0; r < p; r++) {
                const int lp = (r + p - 1) % p, sl[4] = { lp, lp, r, r };
                const unsigned char *o = ops + (size_t)r * per;
                while (st[r] == 0 || st[r] == 2) {
                    if (st[r] == 0) {
                        if (pc[r] >= len[r]) {
                            st[r] = 3;
                            changed = 1;
                            break;
                        }
                        const int op = o[pc[r]];
                        if (op & (MOP_F | MOP_B)) {
                            until[r] = now + (op == MOP_F ? f : b);
                            st[r] = 1;
                            break;
                        }
                        for (int k = 0; k < 4; k++) /* post the call */
                            seq[r][k] = op & (1 << k) ? cn[(sl[k] * 2 + sd[k]) * 2 + se[k]]++ : -1;
                        for (int k = 0; k < 4; k++) {
                            if (seq[r][k] < 0)
                                continue;
                            const size_t li = (size_t)sl[k] * 2 + sd[k];
                            fmsg *q = &msg[li * cap + seq[r][k]];
                            if (seq[r][k] >= cn[li * 2 + !se[k]]) { /* first end here */
                                q->post[!se[k]] = -1;
                                q->state = 0;
                            }
                            q->post[se[k]] = now;
                            q->opp[se[k]] = seq[r][k ^ 1];
                            if (se[k] == 0)
                                q->src = r;
                            else
                                q->dst = r;
                        }
                        for (int k = 0; k < 4; k++) { /* messages with both ends: moving */
                            if (seq[r][k] < 0)
                                continue;
                            fmsg *q = &msg[((size_t)sl[k] * 2 + sd[k]) * cap + seq[r][k]];
                            if (q->state == 0 && q->post[0] >= 0 && q->post[1] >= 0) {
                                const int pair = q->opp[0] >= 0 && q->opp[0] == q->opp[1];
                                q->left = fmax(0, (pair ? x : t) - local);
                                q->state = q->left > 0 ? 1 : 2;
                                if (q->state == 1)
                                    mv[nmv++] = q, dirty = 1;
                            }
                        }
                        st[r] = 2;
                        changed = 1;
                    }
                    int all = 1; /* st 2: has the call completed? */
                    for (int k = 0; k < 4 && all; k++)
                        if (seq[r][k] >= 0
                            && msg[((size_t)sl[k] * 2 + sd[k]) * cap + seq[r][k]].state != 2)
                            all = 0;
                    if (!all)
                        break;
                    changed = 1;
                    const int op = o[pc[r]], nrecv = !!(op & MS_RP) + !!(op & MS_RN);
                    if (nrecv && local > 0) { /* the received tensors gathered, in turn */
                        until[r] = now + nrecv * local;
                        st[r] = 1; /* pc moves on when the gathers end */
                        break;
                    }
                    pc[r]++;
                    st[r] = 0;
                }
            }
        }
        int done = 1;
        double next = INFINITY;
        for (int r = 0; r < p; r++) {
            done &= st[r] == 3;
            if (st[r] == 1)
                next = fmin(next, until[r]);
        }
        if (done)
            break;
        if (dirty) /* the moving set changed since the rates were shared out */
            fair_rates(mv, nmv, p, shared, use, cnt);
        dirty = 0;
        for (int i = 0; i < nmv; i++)
            if (mv[i]->rate > 0)
                next = fmin(next, now + mv[i]->left / mv[i]->rate);
        if (!(next < INFINITY)) /* a deadlock: no rank computes, nothing moves */
            goto out;
        for (int i = 0; i < nmv; i++) {
            fmsg *q = mv[i];
            if (!(q->rate > 0))
                continue;
            if (now + q->left / q->rate <= next * (1 + 1e-13)) { /* moved by `next` */
                dirty = 1;
                q->state = 2;
                mv[i--] = mv[--nmv];
            } else {
                q->left -= q->rate * (next - now);
            }
        }
        now = next;
        for (int r = 0; r < p; r++)
            if (st[r] == 1 && until[r] <= now) {
                st[r] = 0;
                pc[r]++;
            }
    }
    end = now;
out:
    free(ops);
    free(len);
    free(until);
    free(use);
    free(st);
    free(cnt);
    free(msg);
    free(mv);
    free(seq);
    return end;
}
