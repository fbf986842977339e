/* comet bench collectives: MPI ping-pong and collectives.
 *
 * The parent process launches `mpiexec -n N comet bench collectives --worker`
 * once per (collective, algorithm): MPICH reads the forcing CVARs at
 * MPI_Init, so each algorithm needs its own launch. The whole job runs under
 * one deadline; a rank that dies or hangs ends it with a clear error. Rank 0
 * of each worker appends validated records to the results file. */
#include "comet_bench.h"
#include "comet_probe.h"
#include "comet_util.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef COMET_MPIEXEC
#define COMET_MPIEXEC "mpiexec"
#endif

static const char *const colls_all[] = { "pingpong", "allreduce", "allgather", "reduce_scatter",
    "reduce", "bcast", "alltoall", NULL };
static const char *const alg_none[] = { "auto", NULL };
static const char *const alg_allreduce[]
    = { "auto", "recursive_doubling", "reduce_scatter_allgather", NULL };
static const char *const alg_allgather[] = { "auto", "ring", "recursive_doubling", "brucks", NULL };
static const char *const alg_rs[] = { "auto", "recursive_halving", "pairwise", NULL };
static const char *const alg_reduce[] = { "auto", "binomial", "reduce_scatter_gather", NULL };
static const char *const alg_bcast[] = { "auto", "binomial", "scatter_recursive_doubling_allgather",
    "scatter_ring_allgather", NULL };
static const char *const alg_alltoall[] = { "auto", "brucks", "pairwise", "scattered", NULL };

const char *const *comet_bench_coll_algorithms(const char *c)
{
    if (!strcmp(c, "pingpong"))
        return alg_none;
    if (!strcmp(c, "allreduce"))
        return alg_allreduce;
    if (!strcmp(c, "allgather"))
        return alg_allgather;
    if (!strcmp(c, "reduce_scatter"))
        return alg_rs;
    if (!strcmp(c, "reduce"))
        return alg_reduce;
    if (!strcmp(c, "bcast"))
        return alg_bcast;
    if (!strcmp(c, "alltoall"))
        return alg_alltoall;
    return NULL;
}

double comet_bench_coll_busbw_factor(const char *c, int p)
{
    if (p < 1)
        return 0;
    if (!strcmp(c, "allreduce"))
        return 2.0 * (p - 1) / p;
    if (!strcmp(c, "allgather") || !strcmp(c, "reduce_scatter") || !strcmp(c, "alltoall"))
        return (double)(p - 1) / p;
    if (!strcmp(c, "bcast") || !strcmp(c, "reduce") || !strcmp(c, "pingpong"))
        return 1;
    return 0;
}

/* MPICH CVAR name of a collective's intra-communicator algorithm. */
static const char *cvar_of(const char *c)
{
    if (!strcmp(c, "allreduce"))
        return "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM";
    if (!strcmp(c, "allgather"))
        return "MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM";
    if (!strcmp(c, "reduce_scatter"))
        return "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM";
    if (!strcmp(c, "reduce"))
        return "MPIR_CVAR_REDUCE_INTRA_ALGORITHM";
    if (!strcmp(c, "bcast"))
        return "MPIR_CVAR_BCAST_INTRA_ALGORITHM";
    if (!strcmp(c, "alltoall"))
        return "MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM";
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Worker (inside mpiexec)                                             */
/* ------------------------------------------------------------------ */

/* Runs one call of coll with count floats per rank; returns 0. */
static int one_call(const char *c, float *sb, float *rb, int count, int rank, int p, MPI_Comm comm)
{
    if (!strcmp(c, "allreduce"))
        return MPI_Allreduce(sb, rb, count, MPI_FLOAT, MPI_SUM, comm);
    if (!strcmp(c, "allgather"))
        return MPI_Allgather(sb, count, MPI_FLOAT, rb, count, MPI_FLOAT, comm);
    if (!strcmp(c, "reduce_scatter"))
        return MPI_Reduce_scatter_block(
            sb, rb, count / p > 0 ? count / p : 1, MPI_FLOAT, MPI_SUM, comm);
    if (!strcmp(c, "reduce"))
        return MPI_Reduce(sb, rb, count, MPI_FLOAT, MPI_SUM, 0, comm);
    if (!strcmp(c, "bcast"))
        return MPI_Bcast(rank == 0 ? sb : rb, count, MPI_FLOAT, 0, comm);
    if (!strcmp(c, "alltoall"))
        return MPI_Alltoall(sb, count / p > 0 ? count / p : 1, MPI_FLOAT, rb,
            count / p > 0 ? count / p : 1, MPI_FLOAT, comm);
    if (!strcmp(c, "pingpong")) {
        if (rank == 0) {
            MPI_Send(sb, count, MPI_FLOAT, 1, 1, comm);
            return MPI_Recv(rb, count, MPI_FLOAT, 1, 2, comm, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rb, count, MPI_FLOAT, 0, 1, comm, MPI_STATUS_IGNORE);
            return MPI_Send(rb, count, MPI_FLOAT, 0, 2, comm);
        }
        return MPI_SUCCESS;
    }
    return MPI_ERR_OTHER;
}

/* Element i of rank r's send buffer: small integers, exact in float sums. */
static float val(int r, int i)
{
    return (float)((r + 1) * 3 + (i % 7));
}

/* Checks the result of one call (OSU's -c idea). 1 = correct. */
static int check(const char *c, const float *rb, int count, int rank, int p)
{
    if (!strcmp(c, "allreduce") || (!strcmp(c, "reduce") && rank == 0)) {
        for (int i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < p; r++)
                want += val(r, i);
            if (rb[i] != want)
                return 0;
        }
    } else if (!strcmp(c, "allgather")) {
        for (int r = 0; r < p; r++)
            for (int i = 0; i < count; i++)
                if (rb[(size_t)r * count + i] != val(r, i))
                    return 0;
    } else if (!strcmp(c, "reduce_scatter")) {
        int blk = count / p > 0 ? count / p : 1;
        for (int i = 0; i < blk; i++) {
            float want = 0;
            for (int r = 0; r < p; r++)
                want += val(r, rank * blk + i);
            if (rb[i] != want)
                return 0;
        }
    } else if (!strcmp(c, "bcast") && rank != 0) {
        for (int i = 0; i < count; i++)
            if (rb[i] != val(0, i))
                return 0;
    } else if (!strcmp(c, "alltoall")) {
        int blk = count / p > 0 ? count / p : 1;
        for (int r = 0; r < p; r++)
            for (int i = 0; i < blk; i++)
                if (rb[(size_t)r * blk + i] != val(r, rank * blk + i))
                    return 0;
    } else if (!strcmp(c, "pingpong") && rank == 0) {
        for (int i = 0; i < count; i++)
            if (rb[i] != val(0, i))
                return 0;
    }
    return 1;
}

static int worker(const char *coll, const char *alg, const char *sizes, int launch,
    const char *outpath, double min_sample)
{
    int rank, p, rc = 0;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    comet_bench_writer w;
    comet_bench_run run;
    char err[COMET_ERRLEN];
    int have_writer = 0;
    if (getenv("COMET_TEST_KILL_RANK") && atoi(getenv("COMET_TEST_KILL_RANK")) == rank && rank > 0)
        raise(SIGKILL); /* test hook: a rank that dies */
    if (rank == 0) {
        comet_probe_machine m;
        comet_probe_opts po = { .skip_papi = 1 };
        comet_probe_run(&po, &m, NULL, 0);
        if (comet_bench_run_init(&run, "collectives", comet_probe_to_json(&m), err, sizeof err) != 0
            || comet_bench_writer_open(&w, outpath, err, sizeof err) != 0) {
            fprintf(stderr, "comet: bench collectives: %s\n", err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        have_writer = 1;
    }
    if (!strcmp(coll, "pingpong") && p < 2) {
        if (rank == 0)
            fprintf(stderr, "comet: bench collectives: pingpong needs 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", sizes);
    char *save = NULL;
    const char *link = getenv("UCX_NET_DEVICES") ? getenv("UCX_NET_DEVICES") : NULL;
    char linkbuf[96];
    snprintf(linkbuf, sizeof linkbuf, "%s%s", link ? "tcp:" : "shm", link ? link : "");
    for (char *tok = strtok_r(buf, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        long bytes = atol(tok);
        int count = (int)(bytes / 4 > 0 ? bytes / 4 : 1);
        /* block collectives move count/p per peer: round up to whole blocks */
        if (!strcmp(coll, "reduce_scatter") || !strcmp(coll, "alltoall"))
            count = (count + p - 1) / p * p;
        size_t rbn = (size_t)count * (size_t)(p + 1);
        float *sb = malloc((size_t)count * sizeof(float)), *rb = malloc(rbn * sizeof(float));
        if (!sb || !rb) {
            rc = 1;
            break;
        }
        for (int i = 0; i < count; i++)
            sb[i] = val(rank, i);
        memset(rb, 0, rbn * sizeof(float));
        /* validate first (also the first of the > 5 warm-up calls: MPICH
         * switches its shm path after 5 calls on a communicator) */
        int mrc = one_call(coll, sb, rb, count, rank, p, MPI_COMM_WORLD);
        int usable = mrc == MPI_SUCCESS, all_usable = 0;
        MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_usable) {
            /* a forced algorithm's restrictions fail at this size (fallback=error) */
            if (rank == 0)
                comet_util_debug(
                    "bench collectives: %s/%s not usable at %ld bytes", coll, alg, bytes);
            free(sb);
            free(rb);
            continue;
        }
        int ok = check(coll, rb, count, rank, p), all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        for (int i = 0; i < 8; i++)
            one_call(coll, sb, rb, count, rank, p, MPI_COMM_WORLD);
        /* calibrate iterations so a sample lasts min_sample seconds */
        int iters = 1;
        for (;;) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++)
                one_call(coll, sb, rb, count, rank, p, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0, tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (tmax >= min_sample || iters >= 1 << 20)
                break;
            iters *= 2;
        }
        enum { NS = 15 };
        double samples[NS];
        for (int s = 0; s < NS; s++) {
            double acc = 0;
            for (int i = 0; i < iters; i++) {
                MPI_Barrier(MPI_COMM_WORLD); /* every call starts together */
                double t0 = MPI_Wtime();
                one_call(coll, sb, rb, count, rank, p, MPI_COMM_WORLD);
                acc += MPI_Wtime() - t0;
            }
            double mine = acc / iters, mx = 0;
            MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            /* ping-pong: one-way latency is half the round trip (OSU) */
            samples[s] = !strcmp(coll, "pingpong") ? mx / 2 : mx;
        }
        if (rank == 0) {
            comet_bench_stats st;
            comet_bench_stats_compute(samples, NS, &st);
            json_t *rec = comet_bench_record_new(&run,
                !strcmp(coll, "pingpong") ? "p2p" : "collective", coll, alg,
                json_pack("{s:I,s:i}", "bytes", (json_int_t)((size_t)count * 4), "count", count),
                0);
            json_object_set_new(rec, "threads", json_integer(1));
            json_object_set_new(rec, "ranks", json_integer(p));
            json_object_set_new(rec, "stats", comet_bench_stats_json(&st, samples, NS));
            double algbw = (double)count * 4 / st.median * 1e-9;
            json_object_set_new(rec, "latency_us", json_real(st.median * 1e6));
            json_object_set_new(rec, "algbw_GBs", json_real(algbw));
            json_object_set_new(
                rec, "busbw_GBs", json_real(algbw * comet_bench_coll_busbw_factor(coll, p)));
            json_object_set_new(rec, "iterations", json_integer(iters));
            json_object_set_new(rec, "launch", json_integer(launch));
            json_object_set_new(rec, "link", json_string(linkbuf));
            json_object_set_new(rec, "valid", json_boolean(all_ok));
            const char *gt = getenv("GLIBC_TUNABLES");
            json_object_set_new(rec, "env",
                json_pack("{s:s,s:s}", "glibc_tunables", gt ? gt : "", "algorithm_forced",
                    strcmp(alg, "auto") ? "yes" : "no"));
            if (comet_bench_writer_append(&w, rec, err, sizeof err) != 0) {
                fprintf(stderr, "comet: bench collectives: %s\n", err);
                rc = 1;
            }
            json_decref(rec);
            if (!all_ok) {
                fprintf(stderr,
                    "comet: bench collectives: %s/%s at %ld bytes returned a wrong result\n", coll,
                    alg, bytes);
                rc = 1;
            }
        }
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
        free(sb);
        free(rb);
    }
    if (have_writer) {
        comet_bench_writer_close(&w, err, sizeof err);
        comet_bench_run_fini(&run);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}

/* ------------------------------------------------------------------ */
/* Parent: launches, deadline, results file                            */
/* ------------------------------------------------------------------ */

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet bench collectives [options]\n"
        "\n"
        "Measures MPI ping-pong (latency = half round trip, OSU convention) and allreduce,\n"
        "allgather, reduce_scatter, reduce, bcast, alltoall under every MPICH algorithm\n"
        "that can be forced (MPIR_CVAR_DEVICE_COLLECTIVES=none, MPIR_CVAR_<COLL>_INTRA_\n"
        "ALGORITHM=<alg>, MPIR_CVAR_COLLECTIVE_FALLBACK=error; one mpiexec launch each).\n"
        "Barrier before every call, time = max over ranks, > 5 warm-up calls, every result\n"
        "validated; latency (us), algbw and busbw (nccl-tests factors) per record.\n"
        "\n"
        "options:\n"
        "  --quick | --full          sizes 4 B..1 MiB, auto + forced algs of allreduce\n"
        "                            (quick) or 4 B..64 MiB, every alg (full)\n"
        "  --np N                    ranks (default 2; never more than cores unless\n"
        "                            --oversubscribe: MPICH busy-polls)\n"
        "  --sizes LIST              bytes, e.g. 8,1K,64K,1M\n"
        "  --colls LIST              subset of pingpong,allreduce,allgather,reduce_scatter,\n"
        "                            reduce,bcast,alltoall\n"
        "  --algs auto|all           only MPICH's choice, or every forceable algorithm\n"
        "  --launches K              mpiexec launches per configuration (default 1 quick,\n"
        "                            3 full: timings differ between launches)\n"
        "  --timeout S               one deadline for the whole job (default 120 s\n               "
        "             quick, 1800 s full)\n"
        "  --launcher-args \"...\"     passed to mpiexec (-f hostfile, -iface eth1, ...)\n"
        "  --oversubscribe           allow more ranks than cores\n"
        "  --out DIR                 results in DIR/results (default comet-out)\n"
        "  -q, -v, -h                quiet, verbose, this help\n"
        "UCX_TLS / UCX_NET_DEVICES pass through; the record names the link.\n");
}

static volatile sig_atomic_t alarm_fired = 0;
static void on_alarm(int s)
{
    (void)s;
    alarm_fired = 1;
}

/* Launches one worker job; returns 0, 1 (failed) or 3 (deadline). */
static int launch(const char *self, int np, const char *launcher_args, const char *coll,
    const char *alg, const char *sizes, int launch_idx, const char *out, double deadline)
{
    char npbuf[16], lbuf[16];
    snprintf(npbuf, sizeof npbuf, "%d", np);
    snprintf(lbuf, sizeof lbuf, "%d", launch_idx);
    char *argv[64];
    int n = 0;
    char la[1024];
    argv[n++] = (char *)COMET_MPIEXEC;
    if (launcher_args) {
        snprintf(la, sizeof la, "%s", launcher_args);
        char *save = NULL;
        for (char *t = strtok_r(la, " ", &save); t && n < 40; t = strtok_r(NULL, " ", &save))
            argv[n++] = t;
    }
    argv[n++] = (char *)"-n";
    argv[n++] = npbuf;
    argv[n++] = (char *)self;
    argv[n++] = (char *)"bench";
    argv[n++] = (char *)"collectives";
    argv[n++] = (char *)"--worker";
    argv[n++] = (char *)coll;
    argv[n++] = (char *)alg;
    argv[n++] = (char *)sizes;
    argv[n++] = lbuf;
    argv[n++] = (char *)out;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        setpgid(0, 0); /* its own group: the deadline kills every rank */
        setenv("GLIBC_TUNABLES",
            "glibc.malloc.mmap_threshold=2147483647:glibc.malloc.trim_threshold=4294967295", 0);
        if (strcmp(alg, "auto") && cvar_of(coll)) {
            setenv("MPIR_CVAR_DEVICE_COLLECTIVES", "none", 1);
            setenv(cvar_of(coll), alg, 1);
            setenv("MPIR_CVAR_COLLECTIVE_FALLBACK", "error", 1);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "comet: bench collectives: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (comet_util_now() > deadline || comet_util_interrupted) {
            kill(-pid, SIGTERM);
            usleep(200000);
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return comet_util_interrupted ? 4 : 3;
        }
        usleep(20000);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    return 1;
}

int comet_bench_coll_main(int argc, char **argv)
{
    if (argc >= 7 && !strcmp(argv[1], "--worker")) {
        /* comet bench collectives --worker COLL ALG SIZES LAUNCH OUTFILE */
        return worker(argv[2], argv[3], argv[4], atoi(argv[5]), argv[6], 2e-3);
    }
    static const struct option longopts[] = { { "quick", no_argument, NULL, 0x2001 },
        { "full", no_argument, NULL, 0x2002 }, { "np", required_argument, NULL, 0x2003 },
        { "sizes", required_argument, NULL, 0x2004 }, { "colls", required_argument, NULL, 0x2005 },
        { "algs", required_argument, NULL, 0x2006 },
        { "launches", required_argument, NULL, 0x2007 },
        { "timeout", required_argument, NULL, 0x2008 },
        { "launcher-args", required_argument, NULL, 0x2009 },
        { "oversubscribe", no_argument, NULL, 0x200a }, { "out", required_argument, NULL, 0x200b },
        { "json", no_argument, NULL, 0x200c }, { "quiet", no_argument, NULL, 'q' },
        { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 } };
    int full = 0, np = 2, launches = 0, over = 0, all_algs = -1, c;
    double timeout = 0;
    const char *sizes = NULL, *colls = NULL, *largs = NULL, *out = "comet-out";
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'h':
            usage(stdout);
            return 0;
        case 'q':
            comet_util_verbosity = -1;
            break;
        case 'v':
            comet_util_verbosity = 1;
            break;
        case 0x2001:
            full = 0;
            break;
        case 0x2002:
            full = 1;
            break;
        case 0x2003:
            if (comet_util_parse_u64(optarg, &v) || v < 1 || v > 4096) {
                fprintf(stderr, "comet: bench collectives: --np '%s': expected 1..4096\n", optarg);
                return 2;
            }
            np = (int)v;
            break;
        case 0x2004:
            sizes = optarg;
            break;
        case 0x2005:
            colls = optarg;
            break;
        case 0x2006:
            if (strcmp(optarg, "auto") && strcmp(optarg, "all")) {
                fprintf(stderr, "comet: bench collectives: --algs '%s': expected auto or all\n",
                    optarg);
                return 2;
            }
            all_algs = !strcmp(optarg, "all");
            break;
        case 0x2007:
            if (comet_util_parse_u64(optarg, &v) || v < 1 || v > 100) {
                fprintf(
                    stderr, "comet: bench collectives: --launches '%s': expected 1..100\n", optarg);
                return 2;
            }
            launches = (int)v;
            break;
        case 0x2008:
            if (comet_util_parse_double(optarg, &timeout) || timeout <= 0 || timeout > 86400) {
                fprintf(stderr,
                    "comet: bench collectives: --timeout '%s': expected seconds in (0, 86400]\n",
                    optarg);
                return 2;
            }
            break;
        case 0x2009:
            largs = optarg;
            break;
        case 0x200a:
            over = 1;
            break;
        case 0x200b:
            out = optarg;
            break;
        case 0x200c:
            break;
        default:
            fprintf(stderr, "comet: bench collectives: option '%s' is unknown or needs a value\n",
                argv[optind - 1 < argc ? optind - 1 : 0]);
            return 2;
        }
    }
    /* default: every algorithm with --full; with --quick auto everywhere plus
     * the forced allreduce algorithms (the collective the kernels use) */
    int quick_default = all_algs < 0 && !full;
    if (all_algs < 0)
        all_algs = full;
    if (timeout == 0)
        timeout = full ? 1800 : 120;
    if (!launches)
        launches = full ? 3 : 1;
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    if (np > ncores && !over && !largs) {
        fprintf(stderr,
            "comet: bench collectives: --np %d exceeds the %ld cores (MPICH busy-polls; "
            "use --oversubscribe to insist)\n",
            np, ncores);
        return 2;
    }
    char sizebuf[1024];
    if (!sizes) {
        size_t o = 0;
        long max = full ? 64L << 20 : 1L << 20;
        for (long b = 4; b <= max && o < sizeof sizebuf - 16; b *= full ? 2 : 4)
            o += (size_t)snprintf(sizebuf + o, sizeof sizebuf - o, "%s%ld", o ? "," : "", b);
        sizes = sizebuf;
    } else {
        /* normalise suffixes to bytes */
        char tmp[1024];
        size_t o = 0;
        snprintf(tmp, sizeof tmp, "%s", sizes);
        char *save = NULL;
        for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            uint64_t v;
            if (comet_util_parse_u64(t, &v) || v == 0 || v > (1ull << 31)) {
                fprintf(
                    stderr, "comet: bench collectives: --sizes '%s': bad size (1 B .. 2 GiB)\n", t);
                return 2;
            }
            o += (size_t)snprintf(
                sizebuf + o, sizeof sizebuf - o, "%s%llu", o ? "," : "", (unsigned long long)v);
        }
        sizes = sizebuf;
    }
    const char *list[16];
    int nc = 0;
    char cbuf[512];
    if (colls) {
        snprintf(cbuf, sizeof cbuf, "%s", colls);
        char *save = NULL;
        for (char *t = strtok_r(cbuf, ",", &save); t && nc < 16; t = strtok_r(NULL, ",", &save)) {
            if (!comet_bench_coll_algorithms(t)) {
                fprintf(stderr, "comet: bench collectives: --colls: unknown collective '%s'\n", t);
                return 2;
            }
            list[nc++] = t;
        }
    } else {
        for (int i = 0; colls_all[i]; i++)
            list[nc++] = colls_all[i];
    }
    char err[COMET_ERRLEN], rdir[4096], path[4300];
    snprintf(rdir, sizeof rdir, "%s/results", out);
    if (comet_util_mkdir_p(rdir, err, sizeof err) != 0) {
        fprintf(stderr, "comet: bench collectives: %s\n", err);
        return 1;
    }
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(path, sizeof path, "%s/collectives-%s-%ld.jsonl", rdir, stamp, (long)getpid());
    /* the run record first, so the file is self-describing */
    {
        comet_probe_machine m;
        comet_probe_opts po = { .skip_papi = 1 };
        comet_bench_run run;
        comet_bench_writer w;
        comet_probe_run(&po, &m, NULL, 0);
        if (comet_bench_run_init(&run, "collectives", comet_probe_to_json(&m), err, sizeof err)
            || comet_bench_writer_open(&w, path, err, sizeof err)) {
            fprintf(stderr, "comet: bench collectives: %s\n", err);
            return 1;
        }
        json_t *rr = comet_bench_run_record(&run, "comet bench collectives", NULL);
        comet_bench_writer_append(&w, rr, err, sizeof err);
        json_decref(rr);
        comet_bench_writer_close(&w, err, sizeof err);
        comet_bench_run_fini(&run);
    }
    comet_util_install_signals();
    (void)on_alarm;
    (void)alarm_fired;
    /* mpiexec must start this binary, not itself: resolve /proc/self/exe here */
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "comet: bench collectives: cannot resolve /proc/self/exe\n");
        return 1;
    }
    self[sl] = '\0';
    double deadline = comet_util_now() + timeout;
    size_t total = 0;
    for (int i = 0; i < nc; i++) {
        const char *const *algs = comet_bench_coll_algorithms(list[i]);
        for (int a = 0;
             algs[a] && (all_algs || a == 0 || (quick_default && !strcmp(list[i], "allreduce")));
             a++)
            total += (size_t)launches;
    }
    comet_util_progress prog;
    comet_util_progress_start(&prog, "bench collectives", total);
    int failures = 0;
    for (int i = 0; i < nc; i++) {
        const char *const *algs = comet_bench_coll_algorithms(list[i]);
        for (int a = 0;
             algs[a] && (all_algs || a == 0 || (quick_default && !strcmp(list[i], "allreduce")));
             a++)
            for (int l = 0; l < launches; l++) {
                int r = launch(self, np, largs, list[i], algs[a], sizes, l, path, deadline);
                char note[96];
                snprintf(note, sizeof note, "%s/%s", list[i], algs[a]);
                comet_util_progress_step(&prog, 1, note);
                if (r == 3) {
                    comet_util_progress_end(&prog);
                    fprintf(stderr,
                        "comet: bench collectives: %s/%s: the job exceeded the %.0f s "
                        "deadline (a rank hung or died); killed; partial results in %s\n",
                        list[i], algs[a], timeout, path);
                    return 1;
                }
                if (r == 4) {
                    comet_util_progress_end(&prog);
                    fprintf(stderr,
                        "comet: bench collectives: interrupted; partial results in %s\n", path);
                    return 1;
                }
                if (r != 0) {
                    failures++;
                    fprintf(stderr,
                        "\ncomet: bench collectives: %s/%s failed (a rank died, or the "
                        "algorithm is not usable here)\n",
                        list[i], algs[a]);
                }
            }
    }
    comet_util_progress_end(&prog);
    comet_util_info("bench collectives: results in %s", path);
    return failures ? 1 : 0;
}
