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
