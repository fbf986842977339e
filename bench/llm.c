/* comet bench llm: whole decoder-stack steps over MPI ranks. The parent
 * probes, writes the run record and launches `mpiexec -n tp x dp comet bench
 * llm --worker CFG ...` once per configuration under one deadline (each
 * launch in its own process group, killed when the deadline passes); rank 0
 * of each launch appends one "llm" record (docs/FORMATS.md). */
#include "comet_bench.h"
#include "comet_bench_llm.h"
#include "comet_probe.h"
#include "comet_util.h"
#include "mpi_end.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Configurations as text                                              */
/* ------------------------------------------------------------------ */

void comet_llm_cfg_format(const comet_llm_cfg *c, char *buf, size_t len)
{
    snprintf(buf, len,
        "hidden=%d,heads=%d,ffn=%d,layers=%d,seq=%d,batch=%d,microbatch=%d,context=%d,"
        "phase=%s,attention=%s,recompute=%s,tp=%d,pp=%d,dp=%d,sp=%d,threads=%d,seed=%llu",
        c->hidden, c->heads, c->ffn, c->layers, c->seq, c->batch, c->microbatch, c->context,
        comet_llm_phase_name(c->phase), c->attention_fused ? "fused" : "unfused",
        c->recompute_full ? "full" : "none", c->tp, c->pp > 1 ? c->pp : 1, c->dp,
        c->seq_parallel ? 1 : 0, c->threads, c->seed);
}

int comet_llm_cfg_parse(const char *s, comet_llm_cfg *c, char *err, size_t errlen)
{
    char buf[512], *save = NULL;
    if (!s || strlen(s) >= sizeof buf) {
        snprintf(err, errlen, "configuration too long");
        return -EINVAL;
    }
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq) {
            snprintf(err, errlen, "'%s' is not key=value", t);
            return -EINVAL;
        }
        *eq = 0;
        const char *k = t, *v = eq + 1;
        if (!strcmp(k, "phase")) {
            if (comet_llm_phase_parse(v, &c->phase)) {
                snprintf(err, errlen, "phase '%s': train, prefill or decode", v);
                return -EINVAL;
            }
            continue;
        }
        if (!strcmp(k, "attention") || !strcmp(k, "recompute")) {
            const int a = !strcmp(k, "attention");
            if (a ? strcmp(v, "fused") && strcmp(v, "unfused")
                  : strcmp(v, "none") && strcmp(v, "full")) {
                snprintf(err, errlen, "%s '%s': %s", k, v, a ? "fused or unfused" : "none or full");
                return -EINVAL;
            }
            if (a)
                c->attention_fused = !strcmp(v, "fused");
            else
                c->recompute_full = !strcmp(v, "full");
            continue;
        }
        uint64_t x;
        if (comet_util_parse_u64(v, &x) || x > (1u << 24)) {
            snprintf(err, errlen, "%s=%s is not a whole number up to 16777216", k, v);
            return -EINVAL;
        }
        int *dst = !strcmp(k, "hidden") ? &c->hidden
            : !strcmp(k, "heads")       ? &c->heads
            : !strcmp(k, "ffn")         ? &c->ffn
            : !strcmp(k, "layers")      ? &c->layers
            : !strcmp(k, "seq")         ? &c->seq
            : !strcmp(k, "batch")       ? &c->batch
            : !strcmp(k, "microbatch")  ? &c->microbatch
            : !strcmp(k, "context")     ? &c->context
            : !strcmp(k, "tp")          ? &c->tp
            : !strcmp(k, "pp")          ? &c->pp
            : !strcmp(k, "dp")          ? &c->dp
            : !strcmp(k, "sp")          ? &c->seq_parallel
            : !strcmp(k, "threads")     ? &c->threads
                                        : NULL;
        if (!strcmp(k, "seed"))
            c->seed = x;
        else if (dst)
            *dst = (int)x;
        else {
            snprintf(err, errlen, "unknown key '%s'", k);
            return -EINVAL;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Sets                                                                 */
/* ------------------------------------------------------------------ */

int comet_bench_llm_set(int full, int cores, comet_llm_cfg *out, int cap)
{
    /* two GPT-style sizes a 2-core machine steps through in tens of ms (small)
     * and a few hundred ms (medium); head dim 64 as GPT-2/3 */
    static const struct {
        int hidden, heads, ffn, layers, seq, batch, dbatch, context;
    } models[2] = { { 256, 4, 1024, 2, 128, 4, 8, 256 }, { 512, 8, 2048, 2, 256, 4, 8, 512 } };
    /* the last grid: tp=2 with sequence parallelism (full set only) */
    static const struct {
        int tp, dp, threads, pp, sp;
    } grids[6] = { { 1, 1, 1, 1, 0 }, { 1, 1, 2, 1, 0 }, { 2, 1, 1, 1, 0 }, { 1, 2, 1, 1, 0 },
        { 1, 1, 1, 2, 0 }, { 2, 1, 1, 1, 1 } };
    int n = 0;
    for (int mi = 0; mi < (full ? 2 : 1); mi++)
        for (int ph = 0; ph < 3; ph++)
            for (int g = 0; g < (full ? 6 : 5); g++) {
                if (grids[g].tp * grids[g].dp * grids[g].pp * grids[g].threads > cores || n >= cap)
                    continue;
                comet_llm_cfg *c = &out[n++];
                memset(c, 0, sizeof *c);
                c->hidden = models[mi].hidden;
                c->heads = models[mi].heads;
                c->ffn = models[mi].ffn;
                c->layers = models[mi].layers;
                c->phase = (comet_llm_phase)ph;
                c->seq = models[mi].seq;
                c->batch = ph == COMET_LLM_DECODE ? models[mi].dbatch : models[mi].batch;
                c->context = ph == COMET_LLM_DECODE ? models[mi].context : 0;
                c->attention_fused = 1;
                c->tp = grids[g].tp;
                c->dp = grids[g].dp;
                c->threads = grids[g].threads;
                c->pp = grids[g].pp;
                c->seq_parallel = grids[g].sp;
                /* a pipeline of two stages over microbatches of one sequence
                 * (decode: two microbatches) */
                if (c->pp > 1)
                    c->microbatch = ph == COMET_LLM_DECODE ? c->batch / 2 : 1;
                c->seed = 1;
            }
    /* full: the small model's other variants on one rank of one thread:
     * training with full recomputation and with the unfused attention, the
     * prefill with the unfused attention */
    const int base = n;
    for (int v = 0; full && v < 3 && n < cap; v++)
        for (int i = 0; i < base; i++) {
            const comet_llm_cfg *b = &out[i];
            if (b->hidden != models[0].hidden || b->tp * b->dp * b->pp * b->threads != 1
                || b->phase != (v < 2 ? COMET_LLM_TRAIN : COMET_LLM_PREFILL))
                continue;
            comet_llm_cfg c = *b;
            c.microbatch = 0;
            c.recompute_full = v == 0;
            c.attention_fused = v == 0;
            out[n++] = c;
            break;
        }
    return n;
}

/* ------------------------------------------------------------------ */
/* The worker                                                           */
/* ------------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "shm" within a host, "tcp:DEV" when UCX is told TCP only, "net:..." across
 * hosts (the collectives bench names links the same way). */
static void link_name(int nodes, char *buf, size_t len)
{
    const char *tls = getenv("UCX_TLS"), *dev = getenv("UCX_NET_DEVICES");
    const int shm_tl = !tls || strstr(tls, "all") || strstr(tls, "sm") || strstr(tls, "posix")
        || strstr(tls, "sysv") || strstr(tls, "cma");
    if (tls && strstr(tls, "tcp") && !shm_tl)
        snprintf(buf, len, "tcp:%s", dev && *dev ? dev : "any");
    else if (nodes > 1)
        snprintf(buf, len, "net:%s", tls ? tls : "auto");
    else
        snprintf(buf, len, "shm");
}

static int count_nodes(int rank, int p)
{
    char host[MPI_MAX_PROCESSOR_NAME] = { 0 };
    int hl = 0;
    MPI_Get_processor_name(host, &hl);
    char *all = calloc((size_t)p, MPI_MAX_PROCESSOR_NAME);
    int nodes = 1;
    if (!all)
        return 1;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
        MPI_COMM_WORLD);
    if (rank == 0) {
        nodes = 0;
        for (int r = 0; r < p; r++) {
            int seen = 0;
            for (int q = 0; q < r && !seen; q++)
                seen = !strncmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME,
                    all + (size_t)q * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME);
            nodes += !seen;
        }
    }
    free(all);
    MPI_Bcast(&nodes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return nodes;
}

/* Timers a sample keeps: the terms, then the TP term by collective kind. */
enum { NTIM = COMET_LLM_NTIMERS + COMET_LLM_TP_NKINDS };

static json_t *llm_record(const comet_bench_llm_job *job, int p, int nodes, const double *samples,
    int n, double timers[NTIM], double loss, const comet_bench_stats *st)
{
    const comet_llm_cfg *c = &job->cfg;
    json_t *shape = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "hidden", c->hidden, "H",
        c->heads, "d", c->hidden / c->heads, "ffn", c->ffn, "layers", c->layers, "seq", c->seq, "B",
        c->batch, "microbatch", c->microbatch > 0 ? c->microbatch : c->batch / c->dp);
    if (c->phase == COMET_LLM_DECODE)
        json_object_set_new(shape, "context", json_integer(c->context));
    json_t *rec = comet_results_record_new(job->run_id, job->machine_id, "llm", "llm",
        c->attention_fused ? "fused" : "unfused", shape, c->threads);
    if (!rec)
        return NULL;
    json_object_set_new(rec, "ranks", json_integer(p));
    json_object_set_new(rec, "params",
        json_pack("{s:s,s:s,s:i,s:i,s:i,s:b}", "phase", comet_llm_phase_name(c->phase), "recompute",
            c->recompute_full ? "full" : "none", "tp", c->tp, "pp", c->pp > 1 ? c->pp : 1, "dp",
            c->dp, "seq_parallel", c->seq_parallel ? 1 : 0));
    json_object_set_new(rec, "stats", comet_bench_stats_json(st, samples, (size_t)n));
    json_t *tj = json_object();
    for (int k = 0; k < COMET_LLM_NTIMERS; k++)
        json_object_set_new(tj, comet_llm_timer_name((comet_llm_timer)k), json_real(timers[k]));
    for (int k = 0; k < COMET_LLM_TP_NKINDS; k++)
        json_object_set_new(tj, comet_llm_tp_kind_name((comet_llm_tp_kind)k),
            json_real(timers[COMET_LLM_NTIMERS + k]));
    json_object_set_new(rec, "timers", tj);
    char link[96];
    link_name(nodes, link, sizeof link);
    json_object_set_new(rec, "link", json_string(link));
    json_object_set_new(rec, "nodes", json_integer(nodes));
    const double fl = comet_llm_flops(c);
    json_object_set_new(rec, "flops", json_real(fl));
    json_object_set_new(rec, "gflops", json_real(fl / st->median / 1e9));
    if (c->phase == COMET_LLM_TRAIN)
        json_object_set_new(rec, "loss", json_real(loss));
    comet_bench_load ld
        = { job->busy_others, job->waited_s, job->idle, job->gate_skipped, 0, 0, -1 };
    json_object_set_new(rec, "load", comet_bench_load_json(&ld));
    json_object_set_new(rec, "valid", json_boolean(isfinite(loss)));
    return rec;
}

int comet_bench_llm_worker(const comet_bench_llm_job *job)
{
    int provided, rank, p, rc = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    char err[COMET_ERRLEN] = "";
    comet_llm *m = NULL;
    const int nmax = job->samples < 3 ? 3 : job->samples;
    double *smp = calloc((size_t)nmax, sizeof *smp);
    double *tim = calloc((size_t)nmax * NTIM, sizeof *tim);
    if (!smp || !tim || comet_llm_create(MPI_COMM_WORLD, &job->cfg, &m, err, sizeof err)) {
        if (rank == 0)
            fprintf(stderr, "comet: bench llm: %s\n", err[0] ? err : "out of memory");
        free(smp);
        free(tim);
        comet_bench__mpi_end("bench llm");
        return err[0] ? 2 : 1;
    }
    const int nodes = count_nodes(rank, p);
    double loss = 0;
    for (int w = 0; w < 2 && !rc; w++) /* warm-up: page faults, BLAS buffers, MPI paths */
        rc = comet_llm_step(m, &loss);
    int n = 0;
    const double t0 = MPI_Wtime();
    while (!rc) {
        double t[NTIM], sum[NTIM];
        MPI_Barrier(MPI_COMM_WORLD);
        const double a = MPI_Wtime();
        rc = comet_llm_step(m, &loss);
        double dt = MPI_Wtime() - a, slow = dt;
        MPI_Allreduce(&dt, &slow, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        comet_llm_timers(m, t);
        comet_llm_tp_timers(m, t + COMET_LLM_NTIMERS);
        /* a pipeline stage that finished before the slowest rank idled for
         * the rest of the step (its share of the drain): the bubble too */
        if (job->cfg.pp > 1)
            t[COMET_LLM_T_BUBBLE] += slow - dt;
        MPI_Allreduce(t, sum, NTIM, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        smp[n] = slow;
        for (int k = 0; k < NTIM; k++)
            tim[(size_t)k * nmax + n] = sum[k] / p;
        n++;
        /* rank 0 decides, so every rank stops after the same step */
        int more = n < nmax && (n < 3 || MPI_Wtime() - t0 < job->cap_s);
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!more)
            break;
    }
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (worst) {
        if (rank == 0)
            fprintf(stderr, "comet: bench llm: a step failed (%d)\n", worst);
        rc = 1;
    } else if (rank == 0) {
        comet_bench_stats st;
        double med[NTIM];
        for (int k = 0; k < NTIM; k++)
            med[k] = median(tim + (size_t)k * nmax, n);
        json_t *rec = NULL;
        if (comet_bench_stats_compute(smp, (size_t)n, &st) == 0)
            rec = llm_record(job, p, nodes, smp, n, med, loss, &st);
        comet_results_writer w;
        memset(&w, 0, sizeof w);
        if (!rec || comet_results_writer_open(&w, job->outpath, err, sizeof err)
            || comet_results_writer_append(&w, rec, err, sizeof err)) {
            fprintf(stderr, "comet: bench llm: %s\n", err[0] ? err : "cannot build the record");
            rc = 1;
        }
        comet_results_writer_close(&w, NULL, 0);
        json_decref(rec);
    }
    comet_llm_free(m);
    free(smp);
    free(tim);
    comet_bench__mpi_end("bench llm");
    return rc ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* The parent                                                           */
/* ------------------------------------------------------------------ */

enum { L_OK = 0, L_FAIL = 1, L_DEADLINE = 4, L_INTERRUPTED = 5, L_FINALIZE = 6 };

static int launch(const comet_bench_llm_opts *o, const comet_bench_llm_job *job, double deadline)
{
    const int np = job->cfg.tp * job->cfg.dp * (job->cfg.pp > 1 ? job->cfg.pp : 1);
    fflush(NULL);
    const long sp = o->spawn(job, np, o->spawn_ctx);
    if (sp < 0)
        return L_FAIL;
    const pid_t pid = (pid_t)sp;
    int st = 0;
    for (;;) {
        const pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return L_FAIL;
        if (comet_util_now() > deadline || comet_util_interrupted) {
            kill(-pid, SIGTERM);
            for (int i = 0; i < 50 && waitpid(pid, &st, WNOHANG) == 0; i++)
                usleep(20000);
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return comet_util_interrupted ? L_INTERRUPTED : L_DEADLINE;
        }
        usleep(10000);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == COMET_BENCH_EXIT_FINALIZE)
        return L_FINALIZE;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? L_OK : L_FAIL;
}

int comet_bench_llm_run(const comet_bench_llm_opts *o)
{
    if (!o->spawn) {
        fprintf(stderr, "comet: bench llm: no way to start ranks (spawn not set)\n");
        return 1;
    }
    comet_llm_cfg cfgs[64];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = 0;
    if (o->one) {
        cfgs[n++] = *o->one;
    } else {
        n = comet_bench_llm_set(o->full, cores > 0 ? (int)cores : 1, cfgs, 64);
        /* --ranks: the set's configurations of that many ranks (e.g. the
         * two-rank ones across a link between hosts or namespaces) */
        int k = 0;
        for (int i = 0; i < n; i++)
            if (o->ranks <= 0
                || cfgs[i].tp * cfgs[i].dp * (cfgs[i].pp > 1 ? cfgs[i].pp : 1) == o->ranks)
                cfgs[k++] = cfgs[i];
        n = k;
        if (!n) {
            fprintf(stderr, "comet: --ranks %d: no configuration of the set has that many ranks\n",
                o->ranks);
            return 2;
        }
    }
    const double timeout = o->timeout_s > 0 ? o->timeout_s : o->full ? 3600 : 600;
    const char *out = o->out ? o->out : "comet-out";
    char err[COMET_ERRLEN], rdir[4096], path[4400];
    char lbuf[2048], *largv[64];
    int nlarg = 0;
    if (o->launcher_args) {
        if (strlen(o->launcher_args) >= sizeof lbuf) {
            fprintf(
                stderr, "comet: --launcher-args: longer than %zu characters\n", sizeof lbuf - 1);
            return 2;
        }
        snprintf(lbuf, sizeof lbuf, "%s", o->launcher_args);
        nlarg = comet_util_split_words(lbuf, largv, 60);
        if (nlarg < 0) {
            fprintf(stderr, "comet: --launcher-args '%s': unbalanced quote or too many words\n",
                o->launcher_args);
            return 2;
        }
    }
    comet_probe_machine pm;
    comet_probe_opts po = { .skip_papi = 1 };
    comet_bench_run run;
    if (comet_probe_run(&po, &pm, err, sizeof err) != 0) {
        fprintf(stderr, "comet: bench llm: %s\n", err);
        return 1;
    }
    json_t *mj = comet_probe_to_json(&pm);
    int rc = comet_bench_run_init(&run, "llm", mj, err, sizeof err);
    json_decref(mj);
    if (rc) {
        fprintf(stderr, "comet: bench llm: %s\n", err);
        return 1;
    }
    snprintf(rdir, sizeof rdir, "%s/results", out);
    snprintf(path, sizeof path, "%s/llm-%s.jsonl", rdir, run.run_id);
    const int samples = o->samples > 0 ? o->samples : o->full ? 25 : 15;
    json_t *settings = json_pack("{s:i,s:i,s:f,s:b,s:s?}", "configurations", n, "samples", samples,
        "timeout_s", timeout, "full", o->full, "launcher_args", o->launcher_args);
    if (settings && o->ranks > 0)
        json_object_set_new(settings, "ranks", json_integer(o->ranks));
    json_t *rr = comet_bench_run_record(
        &run, o->command_line ? o->command_line : "comet bench llm", settings);
    comet_results_writer w;
    memset(&w, 0, sizeof w);
    rc = comet_results_writer_open(&w, path, err, sizeof err);
    if (!rc)
        rc = comet_results_writer_append(&w, rr, err, sizeof err);
    json_decref(rr);
    comet_results_writer_close(&w, NULL, 0);
    if (rc) {
        fprintf(stderr, "comet: bench llm: %s\n", err);
        comet_bench_run_fini(&run);
        return 1;
    }
    comet_util_install_signals();
    const double t0 = comet_util_now(), deadline = t0 + timeout;
    comet_util_progress prog;
    comet_util_progress_start(&prog, "bench llm", (size_t)n);
    int failed = 0;
    for (int i = 0; i < n && !failed; i++) {
        comet_bench_llm_job job = { cfgs[i], path, run.run_id, run.machine_id, samples,
            o->full ? 10.0 : 3.0, -1, 0, 0, 1, largv, nlarg };
        /* idle gate: the ranks busy-poll, so others' load is read before
         * they start; the gate's wait never more than a tenth of the time left */
        comet_bench_gate g;
        comet_bench_gate_defaults(&g);
        g.timeout_s = o->gate_timeout_s < 0 ? 5 : o->gate_timeout_s;
        if (g.timeout_s > (deadline - comet_util_now()) / 10)
            g.timeout_s = fmax(0, (deadline - comet_util_now()) / 10);
        comet_bench_load ld;
        char gerr[COMET_ERRLEN];
        if (g.timeout_s > 0 && comet_bench_gate_wait(&g, &ld, gerr, sizeof gerr) == 0) {
            job.busy_others = ld.busy_others;
            job.waited_s = ld.waited_s;
            job.idle = ld.idle;
            job.gate_skipped = 0;
        }
        char note[512];
        comet_llm_cfg_format(&cfgs[i], note, sizeof note);
        const int r = launch(o, &job, deadline);
        comet_util_progress_step(&prog, 1, note);
        if (r != L_OK) {
            comet_util_progress_end(&prog);
            fprintf(stderr, "comet: bench llm: %s: %s\n", note,
                r == L_DEADLINE          ? "the run exceeded its deadline; killed it"
                    : r == L_INTERRUPTED ? "interrupted"
                    : r == L_FINALIZE
                    ? "MPI_Finalize did not return on a rank within its grace (its record is kept)"
                    : "mpiexec failed (see the messages above)");
            failed = 1;
        }
    }
    if (!failed)
        comet_util_progress_end(&prog);
    /* the summary: every record of the file */
    comet_results_set set = { 0 };
    if (comet_results_load(path, NULL, &set, NULL, err, sizeof err) == 0) {
        if (o->json) {
            json_t *arr = json_array();
            for (size_t i = 0; i < set.n; i++)
                if (set.recs[i].kind == COMET_RESULTS_LLM)
                    json_array_append(arr, set.recs[i].json);
            json_t *j = json_pack("{s:s,s:s,s:o,s:b,s:f}", "kind", "llm", "results", path,
                "records", arr, "failed", failed, "elapsed_s", comet_util_now() - t0);
            char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            if (text)
                printf("%s\n", text);
            free(text);
            json_decref(j);
        } else if (comet_util_verbosity >= 0) {
            printf("%-8s %-8s %-7s %-3s %-3s %-3s %-3s %-3s %-26s %10s %8s %8s %8s %8s %8s %8s "
                   "%8s\n",
                "phase", "attn", "recomp", "tp", "sp", "pp", "dp", "thr", "model", "step ms",
                "gemm", "attn", "vector", "tp", "dp", "pp", "bubble");
            for (size_t i = 0; i < set.n; i++) {
                const comet_results_record *r = &set.recs[i];
                if (r->kind != COMET_RESULTS_LLM)
                    continue;
                char sh[96];
                comet_results_shape_str(&r->shape, sh, sizeof sh);
                printf("%-8s %-8s %-7s %-3.0f %-3s %-3.0f %-3.0f %-3d %-26s %10.3f %8.3f %8.3f "
                       "%8.3f %8.3f %8.3f %8.3f %8.3f\n",
                    r->params.phase, r->variant, r->params.recompute, r->params.tp,
                    r->params.seq_parallel > 0 ? "yes" : "no", r->params.pp, r->params.dp,
                    r->threads, sh, 1e3 * r->stats.median_s, 1e3 * r->timers.gemm_s,
                    1e3 * r->timers.attention_s, 1e3 * r->timers.vector_s, 1e3 * r->timers.tp_s,
                    1e3 * r->timers.dp_s, 1e3 * r->timers.pp_s, 1e3 * r->timers.bubble_s);
            }
        }
        comet_results_set_free(&set);
    } else {
        fprintf(stderr, "comet: bench llm: %s\n", err);
        failed = 1;
    }
    comet_util_info("bench llm: records in %s (%.1f s)%s", path, comet_util_now() - t0,
        failed ? "; partial" : "");
    comet_bench_run_fini(&run);
    return failed ? 1 : 0;
}
