/* comet bench gms: every gather-GEMM-scatter dataflow x configuration
 * (fused tile rows, threads) for each generated input (RGCN, SpConv, MoE at
 * three skews). The configurations of one input and thread count are
 * measured in interleaved rounds (GMS_MIN_ROUNDS ..), each result checked against
 * dataflow 1's. */
#include "bench_internal.h"
#include "comet_bench.h"
#include "comet_kernels.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Interleaved measurement rounds per input: every configuration runs at
 * least GMS_MIN_ROUNDS; those within GMS_RETIRE of the best so far run on to
 * GMS_MAX_ROUNDS (full set: GMS_MAX_ROUNDS_FULL) while the input's share of
 * the set's time lasts. A 10% margin is twice the 5% the model's choice is
 * judged by. The rounds of the whole set aim at GMS_SET_S (quick: 45 s, so
 * that with set-up and checks the quick set stays within a minute on a
 * loaded host, where calls slow down and rounds take longer): each input
 * gets what is left of it over the inputs left. */
#define GMS_MIN_ROUNDS      3
#define GMS_MAX_ROUNDS      11
#define GMS_MAX_ROUNDS_FULL 17
#define GMS_RETIRE          1.10
#define GMS_SET_S           45.0
#define GMS_SET_FULL_S      300.0

typedef struct gms_ctx {
    comet_kernels_gms_dataflow df;
    comet_kernels_gms_input in;
    comet_kernels_gms_params p;
    void *ws;
    size_t ws_bytes;
} gms_ctx;

static int gms_call(void *vctx, size_t reps)
{
    gms_ctx *c = vctx;
    for (size_t r = 0; r < reps; r++) {
        int rc = comet_kernels_gms(c->df, &c->in, &c->p, c->ws, c->ws_bytes);
        if (rc)
            return rc;
    }
    return 0;
}

static void fill(float *x, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = -1.0f + 2.0f * (float)((s >> 8) & 0xFFFFFF) / 16777216.0f;
    }
}

int bench_gms_race(const double *const *figs, const int *nround, int *active, int nc, double margin)
{
    double lo[64], best = INFINITY;
    int left = 0;
    if (!figs || !nround || !active || nc < 0 || nc > 64 || !(margin >= 1))
        return -EINVAL;
    for (int k = 0; k < nc; k++) {
        comet_bench_stats st;
        lo[k] = INFINITY;
        if (!active[k])
            continue;
        int rc = comet_bench_stats_compute(figs[k], (size_t)nround[k], &st);
        if (rc)
            return rc;
        lo[k] = st.min;
        best = fmin(best, st.median);
    }
    /* a configuration leaves when even its best round is beyond the margin
     * of the best median: one whose rounds mostly fell in others' bursts
     * but ran clean once stays in the race and gathers clean rounds */
    for (int k = 0; k < nc; k++) {
        if (active[k] && lo[k] > margin * best)
            active[k] = 0;
        left += active[k] != 0;
    }
    return left;
}

int comet_bench_gms_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen)
{
    static const double skews[3] = { 0.0, 1.0, 2.0 };
    /* the configuration space per input: dataflow 1 once (it runs whole
     * segments: its tile does not matter), dataflows 2-4 at every tile */
    static const size_t tiles_quick[3] = { 16, 48, 128 },
                        tiles_full[6] = { 16, 32, 48, 96, 128, 256 };
    const size_t *tiles = o->full ? tiles_full : tiles_quick, ntl = o->full ? 6 : 3;
    const size_t rows = o->full ? 16384 : 4096, K = 64, N = 64;
    const size_t nsegs[3] = { 16, 27, 8 }; /* rgcn relations, spconv offsets, moe experts */
    int nthr[2] = { 1, comet_bench_ncores() > 1 ? 2 : 1 }, nT = nthr[1] > 1 ? 2 : 1;
    if (o->threads > 0)
        nthr[0] = o->threads, nT = 1;
    bench_session s;
    int rc = bench_session_open(&s, o, "gms", machine, sum, err, errlen);
    if (rc)
        return rc;
    /* One round of one configuration: a warm-up call (its caches were the
     * previous configuration's), then single calls (one timed call a sample:
     * a call of 0.2 ms or more dwarfs the timer's 30 ns, and a batch of calls
     * would take in every interruption that falls inside it), at least five,
     * within a short cap; the rounds, not the samples of one set, carry the
     * statistics (see the measurement loop). */
    s.cfg.time_cap_s = o->full ? 0.04 : 0.01;
    s.cfg.warmup_s = 0;
    s.cfg.settled = 1;
    s.cfg.min_sample_s = 0;
    s.cfg.min_samples = 5;
    /* 18 inputs: a short idle gate keeps the quick set within a minute on a
     * shared machine (its records carry what the gate saw) */
    if (!o->full && s.cfg.gate.timeout_s > 0.2)
        s.cfg.gate.timeout_s = 0.2;
    bench_session_progress(&s, "bench gms", 3 * 3 * (1 + 3 * ntl) * (size_t)nT);
    const double t_set = comet_util_now();
    const int ninputs = 3 * 3 * nT;
    int inputs_done = 0;
    for (int w = 0; w < 3 && !s.stop; w++)
        for (int si = 0; si < 3 && !s.stop; si++) {
            comet_kernels_gms_problem pr;
            comet_kernels_gms_stats st;
            if ((rc = comet_kernels_gms_generate(
                     (comet_kernels_gms_workload)w, rows, nsegs[w], skews[si], 42, &pr)))
                goto fail;
            comet_kernels_gms_stats_of(&pr, &st);
            /* 64-byte aligned rows: threads own blocks of rows of out, so a
             * block edge that straddles a cache line would be shared between
             * two threads (false sharing the kernel does not have by design) */
            float *X = aligned_alloc(64, (rows * K * 4 + 63) / 64 * 64),
                  *W = aligned_alloc(64, (pr.nseg * K * N * 4 + 63) / 64 * 64),
                  *O = aligned_alloc(64, (rows * N * 4 + 63) / 64 * 64),
                  *R = aligned_alloc(64, (rows * N * 4 + 63) / 64 * 64);
            if (O)
                memset(O, 0, rows * N * 4);
            if (R)
                memset(R, 0, rows * N * 4);
            if (!X || !W || !O || !R) {
                free(X), free(W), free(O), free(R);
                comet_kernels_gms_problem_free(&pr);
                rc = comet_util_seterr(err, errlen, -ENOMEM, "bench gms: out of memory");
                goto fail;
            }
            fill(X, rows * K, 1);
            fill(W, pr.nseg * K * N, 2);
            for (int ti = 0; ti < nT && !s.stop && rc == 0; ti++) {
                /* the input's configurations at this thread count: dataflow
                 * 1 once, then dataflows 2-4 at every tile */
                gms_ctx cs[1 + 3 * 6];
                comet_bench_result rs[1 + 3 * 6];
                int valid[1 + 3 * 6], nc = 0;
                memset(rs, 0, sizeof rs);
                for (size_t tl = 0; tl < ntl && rc == 0; tl++)
                    for (int df = tl ? 2 : 1; df <= 4 && rc == 0; df++) {
                        gms_ctx *c = &cs[nc];
                        *c = (gms_ctx) { .df = (comet_kernels_gms_dataflow)df,
                            .in = { .rows_in = pr.rows_in,
                                .rows_out = pr.rows_out,
                                .K = K,
                                .N = N,
                                .nseg = pr.nseg,
                                .seg_ptr = pr.seg_ptr,
                                .src = pr.src,
                                .dst = pr.dst,
                                .W = W,
                                .in = X,
                                .out = O },
                            .p = { .threads = nthr[ti], .tile_m = tiles[tl] } };
                        if ((rc = comet_kernels_gms_workspace_size(
                                 &c->in, c->df, &c->p, &c->ws_bytes)))
                            break;
                        if (!(c->ws = malloc(c->ws_bytes))) {
                            rc = -ENOMEM;
                            break;
                        }
                        /* check: one call on a cleared output against the reference run */
                        memset(O, 0, rows * N * 4);
                        valid[nc]
                            = comet_kernels_gms(c->df, &c->in, &c->p, c->ws, c->ws_bytes) == 0;
                        if (df == 1 && ti == 0 && tl == 0)
                            memcpy(R, O, rows * N * 4);
                        for (size_t i = 0; valid[nc] && i < rows * N; i++)
                            valid[nc] = fabsf(O[i] - R[i]) <= 1e-3f * (1.0f + fabsf(R[i]));
                        nc++;
                    }
                /* Interleaved rounds, adaptive: every configuration still in
                 * the race is measured once per round, so a burst of others'
                 * load falls on all of them alike. A round's figure for a
                 * configuration is its fastest sample (others' load only
                 * ever slows a call: at 2 threads on a shared 2-vCPU host a
                 * thread descheduled for a moment stalls its partner at the
                 * barrier, and a median over those samples measured the
                 * tenant, not the kernel); the record's samples are the
                 * rounds' figures and its median their median. After
                 * GMS_MIN_ROUNDS a configuration whose median is more than
                 * GMS_RETIRE x the input's best leaves the race (a clear
                 * loser needs no more samples): the remaining rounds go to
                 * the few within reach of the best, whose order the model is
                 * judged by. The idle gate runs before an input's first round
                 * only (under steady load from others it times out every
                 * time, and the per-round minimum copes with that load). */
                comet_bench_config cfg = s.cfg;
                const int max_rounds = o->full ? GMS_MAX_ROUNDS_FULL : GMS_MAX_ROUNDS;
                int active[1 + 3 * 6], nround[1 + 3 * 6];
                double figs[1 + 3 * 6][GMS_MAX_ROUNDS_FULL];
                for (int k = 0; k < nc; k++)
                    active[k] = 1, nround[k] = 0;
                const double t_input = comet_util_now(),
                             budget
                    = fmax(0, t_set + (o->full ? GMS_SET_FULL_S : GMS_SET_S) - t_input)
                    / (double)(ninputs - inputs_done);
                inputs_done++;
                for (int round = 0; round < max_rounds && rc == 0 && !s.stop; round++) {
                    if (round >= GMS_MIN_ROUNDS && comet_util_now() - t_input > budget)
                        break;
                    int first = 1;
                    /* each round starts one configuration later: none always
                     * follows the same neighbour (whose buffers it finds in
                     * cache, or whose thread wake-up it pays) */
                    for (int j = 0; j < nc && rc == 0; j++) {
                        const int k = (j + round) % nc;
                        if (!active[k])
                            continue;
                        /* the gate before a round's first configuration:
                         * the input's first round waits as long as the
                         * session allows; at 2+ threads every later round
                         * waits up to one gate window too (a call needs all
                         * its cores: a quiet moment between others' bursts
                         * is worth 0.1 s), within the input's budget */
                        cfg.gate.timeout_s = !first ? 0
                            : round == 0            ? s.cfg.gate.timeout_s
                            : nthr[ti] > 1 && s.cfg.gate.timeout_s > 0
                            ? fmin(s.cfg.gate.timeout_s, s.cfg.gate.window_s)
                            : 0;
                        first = 0;
                        bench_session_pin(&s, cs[k].p.threads);
                        comet_bench_result r;
                        memset(&r, 0, sizeof r);
                        if ((rc = comet_bench_measure(&cfg, gms_call, &cs[k], &r, err, errlen)))
                            break;
                        figs[k][nround[k]++] = r.stats.min;
                        if (round == 0) {
                            free(r.samples); /* clock, reps, the gate's figure: the first round's */
                            r.samples = NULL;
                            r.n = 0;
                            rs[k] = r;
                            continue;
                        }
                        rs[k].calls += r.calls;
                        rs[k].elapsed_s += r.elapsed_s;
                        comet_bench_result_free(&r);
                    }
                    if (round + 1 < GMS_MIN_ROUNDS)
                        continue;
                    /* retire the clear losers: medians over the rounds so far */
                    const double *fp[1 + 3 * 6];
                    for (int k = 0; k < nc; k++)
                        fp[k] = figs[k];
                    int left = bench_gms_race(fp, nround, active, nc, GMS_RETIRE);
                    if (left < 0) {
                        rc = left;
                        break;
                    }
                    if (left <= 1)
                        break;
                }
                for (int k = 0; k < nc && rc == 0; k++) {
                    rs[k].samples = malloc((size_t)nround[k] * sizeof *rs[k].samples);
                    if (!rs[k].samples) {
                        rc = -ENOMEM;
                        break;
                    }
                    memcpy(rs[k].samples, figs[k], (size_t)nround[k] * sizeof *rs[k].samples);
                    rs[k].n = (size_t)nround[k];
                    rs[k].converged = 0;
                }
                for (int k = 0; k < nc && rc == 0; k++) {
                    gms_ctx *c = &cs[k];
                    comet_bench_result *r = &rs[k];
                    if ((rc = comet_bench_stats_compute(r->samples, r->n, &r->stats)))
                        break;
                    double pairs = (double)st.pairs;
                    double bytes
                        = pairs * (double)(K + 2 * N) * 4 + (double)pr.nseg * (double)(K * N) * 4;
                    json_t *shape = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:f}", "rows",
                        (int)st.rows, "segments", (int)st.segments, "pairs", (int)st.pairs, "K",
                        (int)K, "N", (int)N, "max_seg", (int)st.max_seg, "mean_seg", st.mean_seg,
                        "skew", skews[si], "nonempty", (double)st.nonempty);
                    json_t *rec = comet_bench_record_new(&s.run, "kernel", "gms",
                        comet_kernels_gms_dataflow_name(c->df), shape, c->p.threads);
                    if (!rec) {
                        rc = -ENOMEM;
                        break;
                    }
                    json_object_set_new(
                        rec, "dataflow", json_string(comet_kernels_gms_dataflow_name(c->df)));
                    json_object_set_new(rec, "workload",
                        json_string(
                            comet_kernels_gms_workload_name((comet_kernels_gms_workload)w)));
                    /* the row tiles this configuration runs (over threads
                     * and segments, ceil(owned pairs / tile_m)): what the
                     * model needs */
                    size_t ntl_run = 0;
                    comet_kernels_gms_tiles(&pr, N, &c->p, &ntl_run);
                    json_object_set_new(rec, "params",
                        json_pack("{s:i,s:f,s:i}", "tile_m", (int)c->p.tile_m, "tiles",
                            (double)ntl_run, "rounds", (int)r->n));
                    json_object_set_new(rec, "sampling", json_string("round_min"));
                    if ((rc = comet_bench_record_set_result(rec, r, 2.0 * pairs * K * N, bytes))
                        == 0) {
                        json_object_set_new(rec, "valid", json_boolean(valid[k]));
                        rc = bench_session_write(&s, rec, valid[k], err, errlen);
                    }
                    json_decref(rec);
                    char note[128];
                    snprintf(note, sizeof note, "%s skew %.0f %s T=%d tile %zu: %.3f ms%s",
                        comet_kernels_gms_workload_name((comet_kernels_gms_workload)w), skews[si],
                        comet_kernels_gms_dataflow_name(c->df), c->p.threads, c->p.tile_m,
                        r->stats.median * 1e3, valid[k] ? "" : " INVALID");
                    bench_session_step(&s, note);
                }
                for (int k = 0; k < nc; k++) {
                    comet_bench_result_free(&rs[k]);
                    free(cs[k].ws);
                }
            }
            free(X), free(W), free(O), free(R);
            comet_kernels_gms_problem_free(&pr);
            if (rc)
                goto fail;
        }
    return bench_session_close(&s, json_object(), err, errlen);
fail:
    if (err && !err[0])
        comet_util_seterr(err, errlen, rc, "bench gms: failed (%d)", rc);
    bench_session_abort(&s);
    return rc;
}
