/* The MPI side of `comet bench collectives`: one worker job per mpiexec
 * launch (the parent forces the MPICH algorithm through the environment,
 * which MPICH reads at MPI_Init). Every call is validated (OSU's -c idea),
 * timed with a barrier before it, and the time per call is the max over
 * ranks of the per-rank mean (IMB's t_max). Rank 0 appends the records. */
#include "coll_internal.h"
#include "comet_util.h"
#include "mpi_end.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* One call of a collective, the values it moves, and its check        */
/* ------------------------------------------------------------------ */

typedef struct call_ctx {
    const char *coll;
    float *sb, *rb;
    int count; /* elements per rank (a multiple of p for the block collectives) */
    int rank, p;
    int *cnts, *displs; /* allgatherv: count per rank and where it lands */
} call_ctx;

static int blk(const call_ctx *c)
{
    return c->count / c->p > 0 ? c->count / c->p : 1;
}

/* Runs one call; returns its MPI code. */
static int one_call(void *vc)
{
    call_ctx *c = vc;
    MPI_Comm comm = MPI_COMM_WORLD;
    const char *k = c->coll;
    if (!strcmp(k, "allreduce"))
        return MPI_Allreduce(c->sb, c->rb, c->count, MPI_FLOAT, MPI_SUM, comm);
    if (!strcmp(k, "allgather"))
        return MPI_Allgather(c->sb, c->count, MPI_FLOAT, c->rb, c->count, MPI_FLOAT, comm);
    if (!strcmp(k, "allgatherv"))
        return MPI_Allgatherv(
            c->sb, c->count, MPI_FLOAT, c->rb, c->cnts, c->displs, MPI_FLOAT, comm);
    if (!strcmp(k, "reduce_scatter"))
        return MPI_Reduce_scatter_block(c->sb, c->rb, blk(c), MPI_FLOAT, MPI_SUM, comm);
    if (!strcmp(k, "reduce"))
        return MPI_Reduce(c->sb, c->rb, c->count, MPI_FLOAT, MPI_SUM, 0, comm);
    if (!strcmp(k, "bcast"))
        return MPI_Bcast(c->rank == 0 ? c->sb : c->rb, c->count, MPI_FLOAT, 0, comm);
    if (!strcmp(k, "alltoall"))
        return MPI_Alltoall(c->sb, blk(c), MPI_FLOAT, c->rb, blk(c), MPI_FLOAT, comm);
    if (!strcmp(k, "pingpong")) {
        int rc = MPI_SUCCESS;
        if (c->rank == 0) {
            rc = MPI_Send(c->sb, c->count, MPI_FLOAT, 1, 1, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(c->rb, c->count, MPI_FLOAT, 1, 2, comm, MPI_STATUS_IGNORE);
        } else if (c->rank == 1) {
            rc = MPI_Recv(c->rb, c->count, MPI_FLOAT, 0, 1, comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = MPI_Send(c->rb, c->count, MPI_FLOAT, 0, 2, comm);
        }
        return rc;
    }
    if (!strcmp(k, "exchange")) {
        /* ranks 0 and 1 each send the other one message and take the
         * other's, posted as comet's pipeline posts its paired transfers
         * (bench/llm_engine.c: the send posted, then the peer's message
         * probed and received, then the send completed): 1F1B's steady
         * state, an activation forward while a gradient comes back */
        if (c->rank > 1)
            return MPI_SUCCESS;
        MPI_Request rq;
        const int peer = 1 - c->rank;
        int rc = MPI_Isend(c->sb, c->count, MPI_FLOAT, peer, 3, comm, &rq);
        if (rc != MPI_SUCCESS)
            return rc;
        rc = MPI_Probe(peer, 3, comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(c->rb, c->count, MPI_FLOAT, peer, 3, comm, MPI_STATUS_IGNORE);
        const int rw = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        return rc != MPI_SUCCESS ? rc : rw;
    }
    return MPI_ERR_OTHER;
}

/* Writes every cache line of the send buffer (the values it holds): a
 * kernel sends data it has just produced, whose lines sit modified in its own
 * core's cache. Timed with an unchanged buffer, a single-copy transfer (CMA)
 * reads lines already in the receiver's cache from the previous call: on the
 * Zen 4 VM an all-to-all of 256 KiB took 15.5 us so, 24.9 us fresh, while
 * all-gather and all-reduce (copied through shared cells) did not change. */
static void fresh_send(void *vc)
{
    const call_ctx *c = vc;
    volatile float *v = c->sb;
    for (int i = 0; i < c->count; i += 16)
        v[i] = v[i];
}

/* The exchange's compute between two calls (after the call's barrier,
 * outside the timing): as a pipeline stage computes between two exchanges,
 * both ranks leave MPI for EXCHANGE_IDLE_S while writing their send buffer.
 * Back to back, the pipeline's posting moved both messages at once over a
 * 100 Mbit/s delay line (128 KiB: 12.0 ms, one way 11.5 ms); after 1-30
 * ms away it took 21-30 ms (AMD EPYC Zen 3 VM, MPICH 4.0.2 ch4:ucx over
 * TCP; whether the two move at once or in turn changes between launches:
 * 2.01, 1.51, 1.04, 1.03x one way in four, so scale-out.sh measures four).
 * 10 ms: the order of a stage's forward and backward of the quick step set
 * (bench/llm.c), the situation the exchange stands for. */
#define EXCHANGE_IDLE_S 10e-3

static void exchange_idle(void *vc)
{
    const call_ctx *c = vc;
    volatile float *v = c->sb;
    const double t0 = MPI_Wtime();
    do
        for (int i = 0; i < c->count; i += 16)
            v[i] = v[i];
    while (MPI_Wtime() - t0 < EXCHANGE_IDLE_S);
}

/* Element i of rank r's send buffer: small integers, so float sums over
 * any number of ranks up to thousands are exact and the check is exact. */
static float val(int r, int i)
{
    return (float)((r + 1) * 3 + (i % 7));
}

/* Checks this rank's part of the result of the last call. 1 = correct. */
static int check(const call_ctx *c)
{
    const char *k = c->coll;
    const float *rb = c->rb;
    int count = c->count, rank = c->rank, p = c->p, b = blk(c);
    if (!strcmp(k, "allreduce") || (!strcmp(k, "reduce") && rank == 0)) {
        for (int i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < p; r++)
                want += val(r, i);
            if (rb[i] != want)
                return 0;
        }
    } else if (!strcmp(k, "allgather") || !strcmp(k, "allgatherv")) {
        for (int r = 0; r < p; r++)
            for (int i = 0; i < count; i++)
                if (rb[(size_t)r * count + i] != val(r, i))
                    return 0;
    } else if (!strcmp(k, "reduce_scatter")) {
        for (int i = 0; i < b; i++) {
            float want = 0;
            for (int r = 0; r < p; r++)
                want += val(r, rank * b + i);
            if (rb[i] != want)
                return 0;
        }
    } else if (!strcmp(k, "bcast") && rank != 0) {
        for (int i = 0; i < count; i++)
            if (rb[i] != val(0, i))
                return 0;
    } else if (!strcmp(k, "alltoall")) {
        for (int r = 0; r < p; r++)
            for (int i = 0; i < b; i++)
                if (rb[(size_t)r * b + i] != val(r, rank * b + i))
                    return 0;
    } else if (!strcmp(k, "pingpong") && rank <= 1) {
        for (int i = 0; i < count; i++)
            if (rb[i] != val(0, i))
                return 0;
    } else if (!strcmp(k, "exchange") && rank <= 1) {
        for (int i = 0; i < count; i++)
            if (rb[i] != val(1 - rank, i))
                return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

/* Names the link measured: "shm" within a node; "tcp:<dev>" when UCX is
 * restricted to TCP (UCX_TLS without a shared-memory transport); else
 * "net:<tls>" across nodes. */
static void name_link(coll_ctx *cx)
{
    char host[MPI_MAX_PROCESSOR_NAME] = { 0 };
    int len = 0;
    MPI_Get_processor_name(host, &len);
    /* rank 0 counts distinct hosts (point-to-point: see above) */
    cx->nodes = 1;
    if (cx->rank == 0) {
        char *all = calloc((size_t)cx->p, MPI_MAX_PROCESSOR_NAME);
        if (all)
            memcpy(all, host, MPI_MAX_PROCESSOR_NAME);
        for (int r = 1; r < cx->p; r++) {
            char other[MPI_MAX_PROCESSOR_NAME];
            MPI_Recv(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, r, TAG_UP, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE);
            int seen = 0;
            for (int q = 0; all && q < r && !seen; q++)
                seen = !strncmp(
                    other, all + (size_t)q * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME);
            if (all)
                memcpy(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, other, MPI_MAX_PROCESSOR_NAME);
            cx->nodes += !seen;
        }
        free(all);
    } else {
        MPI_Send(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, TAG_UP, MPI_COMM_WORLD);
    }
    cx->nodes = comet_bench__coll_bcast0(cx->nodes);
    const char *tls = getenv("UCX_TLS"), *dev = getenv("UCX_NET_DEVICES");
    int shm_tl = !tls || strstr(tls, "all") || strstr(tls, "sm") || strstr(tls, "posix")
        || strstr(tls, "sysv") || strstr(tls, "cma") || strstr(tls, "xpmem") || strstr(tls, "knem");
    if (tls && strstr(tls, "tcp") && !shm_tl)
        snprintf(cx->link, sizeof cx->link, "tcp:%s", dev && *dev ? dev : "any");
    else if (cx->nodes > 1)
        snprintf(cx->link, sizeof cx->link, "net:%s%s%s", tls ? tls : "auto", dev ? ":" : "",
            dev ? dev : "");
    else
        snprintf(cx->link, sizeof cx->link, "shm");
}

/* One message size of a launch: its buffers, calls per sample, samples. */
typedef struct size_run {
    long bytes;
    call_ctx c;
    int state; /* 0 measured, 1 failed (error said), 2 algorithm not usable here */
    int ok; /* this rank's checks passed so far */
    int iters, n;
    double samples[32], avg[32];
} size_run;

/* Page-aligned message buffers, as OSU allocates them, so that both time
 * the same copies (one session saw a malloc'd 16 KiB allreduce 2x slower
 * than OSU's; another could not reproduce it). */
static float *page_alloc(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes ? bytes : 1) == 0 ? p : NULL;
}

/* Sets a size up: buffers, the usability probe, the first check, warm-up
 * and the calls per sample. Collective over the ranks (every rank returns
 * the same state). */
static void size_setup(coll_ctx *cx, size_run *z)
{
    const coll_job *job = cx->job;
    int p = cx->p, rank = cx->rank;
    long cnt = z->bytes / 4 > 0 ? z->bytes / 4 : 1;
    z->c = (call_ctx) { job->coll, NULL, NULL, 0, rank, p, NULL, NULL };
    z->state = 1;
    /* block collectives move count/p per peer: round up to whole blocks */
    if (!strcmp(job->coll, "reduce_scatter") || !strcmp(job->coll, "alltoall"))
        cnt = (cnt + p - 1) / p * p;
    if (cnt > 0x7fffffffL / (p + 1)) {
        if (rank == 0)
            fprintf(stderr, "comet: bench collectives: %ld bytes x %d ranks is too large\n",
                z->bytes, p);
        return;
    }
    z->c.count = (int)cnt;
    size_t rbn = (size_t)z->c.count * (size_t)(p + 1);
    z->c.sb = page_alloc((size_t)z->c.count * sizeof(float));
    z->c.rb = page_alloc(rbn * sizeof(float));
    int vok = 1;
    if (!strcmp(job->coll, "allgatherv")) {
        z->c.cnts = malloc((size_t)p * sizeof(int));
        z->c.displs = malloc((size_t)p * sizeof(int));
        vok = z->c.cnts && z->c.displs;
        for (int r = 0; vok && r < p; r++) {
            z->c.cnts[r] = z->c.count;
            z->c.displs[r] = r * z->c.count;
        }
    }
    if (!comet_bench__coll_allmin(z->c.sb && z->c.rb && vok)) {
        if (rank == 0)
            fprintf(stderr, "comet: bench collectives: out of memory at %ld bytes\n", z->bytes);
        return;
    }
    for (int i = 0; i < z->c.count; i++)
        z->c.sb[i] = val(rank, i);
    memset(z->c.rb, 0, rbn * sizeof(float));
    /* first call: does the forced algorithm run at this size at all? With
     * MPIR_CVAR_COLLECTIVE_FALLBACK=error a failed restriction is an error,
     * not a silent switch to another algorithm. */
    if (!comet_bench__coll_allmin(one_call(&z->c) == MPI_SUCCESS)) {
        if (rank == 0)
            comet_util_debug(
                "bench collectives: %s/%s not usable at %ld bytes", job->coll, job->alg, z->bytes);
        z->state = 2;
        return;
    }
    /* test hook: a wrong result on one rank must surface as valid=false */
    const char *bad = getenv("COMET_TEST_CORRUPT_RANK");
    if (bad && atoi(bad) == rank)
        z->c.rb[0] += 1.0f;
    z->ok = check(&z->c);
    /* warm-up: more than 5 calls, since MPICH switches its shm path after
     * MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD (5) calls on a communicator */
    for (int i = 0; i < 8; i++)
        one_call(&z->c);
    const int xc = !strcmp(job->coll, "exchange"), pp = !strcmp(job->coll, "pingpong");
    /* the exchange: one call a sample (each call already lasts its idle;
     * calls enough to time 50 ms of 8 B exchanges would idle minutes) */
    const double ms = xc ? 0 : job->min_sample_s > 0 ? job->min_sample_s : 2e-3;
    if (comet_bench__coll_calls_per_sample(one_call, xc ? exchange_idle : fresh_send, &z->c,
            xc ? COLL_PREP_AFTER_BARRIER : !pp && !job->loop, ms, &z->iters)
        != MPI_SUCCESS)
        z->ok = 0;
    z->state = 0;
}

/* Checks the last timed call's result and appends the size's record (rank
 * 0). Returns 0, or 1 on a wrong result or a write error. */
static int size_finish(coll_ctx *cx, size_run *z, int mpi_ok, const double *c2c, int nc2c)
{
    const coll_job *job = cx->job;
    int p = cx->p, rank = cx->rank, rc = 0, n = z->n;
    int pp = !strcmp(job->coll, "pingpong"), xc = !strcmp(job->coll, "exchange");
    /* the buffers hold the last timed call's result: check it too */
    int ok = z->ok && mpi_ok && check(&z->c);
    int all_ok = comet_bench__coll_allmin(ok);
    if (rank == 0 && n > 0) {
        char err[COMET_ERRLEN];
        comet_bench_stats st;
        double *samples = z->samples, *avg = z->avg;
        if (pp) /* OSU: one-way latency is half the round trip */
            for (int s = 0; s < n; s++) {
                samples[s] /= 2;
                avg[s] /= 2;
            }
        comet_bench_stats_compute(samples, (size_t)n, &st);
        /* the exchange's time is the call's: both messages moved */
        json_t *rec = comet_bench_record_new(&cx->run, pp || xc ? "p2p" : "collective", job->coll,
            job->alg,
            json_pack("{s:I,s:i}", "bytes", (json_int_t)z->c.count * 4, "count", z->c.count), 1);
        comet_bench__coll_common(cx, rec, NULL, samples, (size_t)n, &st, all_ok, z->iters);
        comet_bench__coll_c2c_json(rec, c2c, nc2c);
        /* nccl-tests: algbw = S / t; S is the per-rank buffer (count x 4 B),
         * except allgather, whose S is the gathered array (p x count x 4 B) */
        double S = (double)z->c.count * 4
            * (!strcmp(job->coll, "allgather") || !strcmp(job->coll, "allgatherv") ? p : 1);
        double algbw = S / st.median * 1e-9;
        json_object_set_new(rec, "algbw_bytes", json_real(S));
        json_object_set_new(rec, "latency_us", json_real(st.median * 1e6));
        json_object_set_new(rec, "min_latency_us", json_real(st.min * 1e6));
        json_object_set_new(rec, "timing",
            json_string(pp      ? "pingpong"
                    : xc        ? "exchange"
                    : job->loop ? "loop"
                                : "barrier"));
        json_object_set_new(rec, "sampling", json_string("interleaved"));
        /* barrier per call: the send buffer is written before each call
         * (fresh_send); ping-pong and the loop timing leave it unchanged */
        json_object_set_new(
            rec, "send_buffer", json_string((!pp && !job->loop) || xc ? "written" : "unchanged"));
        /* OSU's convention (mean over ranks instead of max), for comparison */
        comet_bench_stats sa;
        if (comet_bench_stats_compute(avg, (size_t)n, &sa) == 0)
            json_object_set_new(rec, "rank_avg_latency_us", json_real(sa.median * 1e6));
        json_object_set_new(rec, "algbw_GBs", json_real(algbw));
        json_object_set_new(
            rec, "busbw_GBs", json_real(algbw * comet_bench_coll_busbw_factor(job->coll, p)));
        if (comet_results_writer_append(&cx->w, rec, err, sizeof err) != 0) {
            fprintf(stderr, "comet: bench collectives: %s\n", err);
            rc = 1;
        }
        json_decref(rec);
        if (!all_ok) {
            fprintf(stderr,
                "comet: bench collectives: %s/%s at %ld bytes returned a wrong result%s\n",
                job->coll, job->alg, z->bytes, mpi_ok ? "" : " (a timed call failed)");
            rc = 1;
        }
    }
    return comet_bench__coll_bcast0(rc);
}

/* Buffers one interleaved group may hold per rank: sizes beyond it are
 * measured in further groups. */
#define GROUP_BYTES (1L << 30)
#define MAX_SIZES   64

/* Measures every size of the job. Sizes are sampled in interleaved rounds
 * (one sample of each size per round) rather than one size after another:
 * on a shared VM the link changes speed for a few hundred milliseconds at
 * a time, which sequential sampling turns into steps between neighbouring
 * sizes that no cost model fits; interleaved, every size sees the same
 * mix of fast and slow spells and its median the common majority.
 * Returns 0, 1 (failure) or 3 (the algorithm applies to no size). */
static int measure_sizes(coll_ctx *cx)
{
    const coll_job *job = cx->job;
    size_run *z = calloc(MAX_SIZES, sizeof *z);
    char buf[1024];
    char *save = NULL;
    int nz = 0, rc = 0, measured = 0;
    if (!z)
        return 1;
    snprintf(buf, sizeof buf, "%s", job->sizes);
    for (char *t = strtok_r(buf, ",", &save); t && nz < MAX_SIZES; t = strtok_r(NULL, ",", &save))
        z[nz++].bytes = atol(t);
    const int pp = !strcmp(job->coll, "pingpong"), xc = !strcmp(job->coll, "exchange");
    const int barrier_each = xc ? COLL_PREP_AFTER_BARRIER : !pp && !job->loop;
    const int nmax = job->full ? 21 : 11, nmin = job->full ? 7 : 5;
    for (int g0 = 0; g0 < nz && rc == 0;) {
        /* a group: consecutive sizes whose buffers fit GROUP_BYTES */
        int g1 = g0;
        double held = 0;
        while (g1 < nz && (g1 == g0 || held + (double)z[g1].bytes * (cx->p + 2) <= GROUP_BYTES))
            held += (double)z[g1++].bytes * (cx->p + 2);
        int live = 0;
        for (int i = g0; i < g1 && rc == 0; i++) {
            size_setup(cx, &z[i]);
            if (z[i].state == 1)
                rc = 1;
            live += z[i].state == 0;
        }
        int mpi_ok = 1, nrd = 0;
        /* core-to-core readings across the group's rounds (at most 7, then
         * one after the last): the placement its samples ran in */
        double rd[COMET_RESULTS_C2C_MAX];
        const int step = (nmax + 6) / 7;
        double t0 = MPI_Wtime();
        for (int s = 0; s < nmax && live && rc == 0 && mpi_ok; s++) {
            if (s % step == 0 && nrd < COMET_RESULTS_C2C_MAX - 1)
                rd[nrd++] = comet_bench__coll_c2c_ns(cx);
            for (int i = g0; i < g1 && mpi_ok; i++) {
                if (z[i].state != 0)
                    continue;
                double t;
                for (int w = 0; w < (z[i].iters + 1) / 2; w++)
                    one_call(&z[i].c); /* back to this size's steady state */
                mpi_ok = comet_bench__coll_timed(one_call, xc ? exchange_idle : fresh_send, &z[i].c,
                             z[i].iters, barrier_each, &t, z[i].avg + z[i].n)
                    == MPI_SUCCESS;
                z[i].samples[z[i].n++] = t;
            }
            mpi_ok = comet_bench__coll_allmin(mpi_ok);
            /* every rank holds the same samples but elapsed times differ:
             * rank 0 decides when the group's cap is spent */
            if (comet_bench__coll_bcast0(
                    s + 1 >= nmin && MPI_Wtime() - t0 > job->sample_cap_s * live))
                break;
        }
        if (live && rc == 0)
            rd[nrd++] = comet_bench__coll_c2c_ns(cx);
        for (int i = g0; i < g1; i++) {
            if (z[i].state == 0 && rc == 0) {
                if (size_finish(cx, &z[i], mpi_ok, rd, nrd) != 0)
                    rc = 1;
                measured++;
            }
            free(z[i].c.sb);
            free(z[i].c.rb);
            free(z[i].c.cnts);
            free(z[i].c.displs);
            z[i].c.sb = z[i].c.rb = NULL;
            z[i].c.cnts = z[i].c.displs = NULL;
        }
        g0 = g1;
    }
    for (int i = 0; i < nz; i++) { /* sizes left when an earlier group failed */
        free(z[i].c.sb);
        free(z[i].c.rb);
        free(z[i].c.cnts);
        free(z[i].c.displs);
    }
    free(z);
    if (rc == 0 && !measured)
        rc = 3; /* the forced algorithm applies to no size here: the parent skips it */
    return rc;
}

/* mpiexec's proxies start every rank in a session of its own, and with
 * autogroup scheduling (Linux's default, /proc/sys/kernel/sched_autogroup_enabled)
 * a session competes with every other session as one, whatever its
 * processes' nice: a rank niced below 0 (inherited from mpiexec:
 * scale-out.sh -n) gives its session the same niceness, or the nice is lost
 * against each other session on the machine (both ranks measured in
 * autogroups of nice 0 while the launcher had -20) */
static void rank_session_nice(void)
{
    errno = 0;
    const int ni = getpriority(PRIO_PROCESS, 0);
    if (errno || ni >= 0)
        return;
    FILE *f = fopen("/proc/self/autogroup", "w");
    if (f) {
        fprintf(f, "%d\n", ni);
        fclose(f); /* no autogroups, or not permitted: the nice stands alone */
    }
}

int comet_bench__coll_worker(const coll_job *job)
{
    coll_ctx cx;
    char err[COMET_ERRLEN];
    int rc = 0, have_writer = 0;
    memset(&cx, 0, sizeof cx);
    cx.job = job;
    rank_session_nice();
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &cx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &cx.p);
    /* a forced algorithm that does not apply must come back as an error
     * code we can skip, not abort the job */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* test hooks: a rank that dies, a rank that hangs */
    const char *kill_r = getenv("COMET_TEST_KILL_RANK"), *hang_r = getenv("COMET_TEST_HANG_RANK");
    if (kill_r && atoi(kill_r) == cx.rank && cx.rank > 0)
        raise(SIGKILL);
    if (hang_r && atoi(hang_r) == cx.rank && cx.rank > 0)
        for (;;)
            pause();
    if (cx.rank == 0) {
        json_t *m = json_pack("{s:s}", "id", job->machine_id);
        rc = comet_bench_run_init(&cx.run, "collectives", m, err, sizeof err);
        json_decref(m);
        if (rc == 0) {
            snprintf(cx.run.run_id, sizeof cx.run.run_id, "%s", job->run_id);
            rc = comet_results_writer_open(&cx.w, job->outpath, err, sizeof err);
        }
        if (rc != 0) {
            fprintf(stderr, "comet: bench collectives: %s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        have_writer = 1;
    }
    name_link(&cx);
    comet_bench__coll_c2c_open(&cx);
    if ((!strcmp(job->coll, "pingpong") || !strcmp(job->coll, "exchange")) && cx.p < 2) {
        if (cx.rank == 0)
            fprintf(stderr, "comet: bench collectives: %s needs 2 ranks\n", job->coll);
        rc = 1;
    } else if (!strcmp(job->coll, COLL_DIST)) {
        /* the collectives the distributed kernels issue, measured in this
         * launch too: a launch keeps one core placement while its ranks stay
         * busy, so the kernels' placement always has fits of its own */
        static const char *const own[] = { "allgather", "allgatherv", "allreduce", "alltoall" };
        for (size_t i = 0; i < sizeof own / sizeof *own && rc == 0; i++) {
            coll_job sweep = *job;
            sweep.coll = own[i];
            sweep.alg = "auto";
            cx.job = &sweep;
            rc = measure_sizes(&cx) == 1;
            cx.job = job;
        }
        if (rc == 0)
            rc = comet_bench__coll_dist(&cx);
    } else {
        rc = measure_sizes(&cx);
    }
    comet_bench__coll_c2c_close(&cx);
    if (have_writer) {
        comet_results_writer_close(&cx.w, err, sizeof err);
        comet_bench_run_fini(&cx.run);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* nobody finalizes while a peer still talks */
    comet_bench__mpi_end("bench collectives");
    return rc;
}
