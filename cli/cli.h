/**
 * @file cli.h
 * @brief The thin command-line layer: global options, messages and exit codes
 *        shared by every `comet <subcommand>` (cmd_*.c).
 *
 * Exit codes: 0 success, 1 runtime failure, 2 usage or input error.
 * Errors are printed as one line "comet: <where>: <what>" on stderr.
 */
#ifndef COMET_CLI_H
#define COMET_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** Exit code: success. */
#define COMET_EXIT_OK 0
/** Exit code: a runtime failure (measurement failed, I/O error, ...). */
#define COMET_EXIT_FAIL 1
/** Exit code: usage or input error. */
#define COMET_EXIT_USAGE 2

/** Options every subcommand accepts. */
typedef struct comet_cli_global {
    int json; /**< --json: machine-readable stdout */
    const char *out; /**< --out DIR: where files go */
    int quiet; /**< -q */
    int verbose; /**< -v */
} comet_cli_global;

/** Default output folder (git-ignored). */
#define COMET_CLI_DEFAULT_OUT "comet-out"

/** Long options shared by all subcommands; append to a subcommand's table. */
#define COMET_CLI_GLOBAL_LONGOPTS                                                                  \
    { "json", no_argument, NULL, 0x1001 }, { "out", required_argument, NULL, 0x1002 },             \
        { "quiet", no_argument, NULL, 'q' }, { "verbose", no_argument, NULL, 'v' },                \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }

/**
 * Handles a global option returned by getopt_long. Returns 1 if it was one
 * (and applied it), 0 if not.
 */
int comet_cli_global_opt(comet_cli_global *g, int c, const char *optarg_);

/**
 * Reports a getopt error for subcommand sub ('?' or ':' result) and returns
 * COMET_EXIT_USAGE. optopt/argv are used to name the flag.
 */
int comet_cli_bad_option(const char *sub, int argc, char **argv);

/** Prints "comet: <where>: <fmt...>" on stderr. */
void comet_cli_error(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Parses a positive integer flag value; prints an error naming the flag. */
int comet_cli_parse_pos(
    const char *sub, const char *flag, const char *val, uint64_t max, uint64_t *out);

/** getopt_long with opterr off, reset for this subcommand. */
void comet_cli_getopt_reset(void);

/**
 * Starts `mpiexec [launcher_args] -n np <this binary> <tail...>` (tail ends
 * with NULL) in a process group of its own that dies with this comet, with
 * the NAME=VALUE strings of env (NULL-terminated; NULL: none) added to its
 * environment. @return the group's pid, or a negative errno (an error naming
 * `where` printed when this program's path cannot be resolved).
 */
long comet_cli_spawn_ranks(const char *where, char *const *launcher_args, int nlauncher_args,
    int np, const char *const *tail, const char *const *env);

/* Subcommands (cmd_*.c). Each receives argv with argv[0] = subcommand name. */
int comet_cmd_probe(int argc, char **argv);
int comet_cmd_bench(int argc, char **argv);
int comet_cmd_calibrate(int argc, char **argv);
int comet_cmd_predict(int argc, char **argv);
int comet_cmd_explore(int argc, char **argv);
int comet_cmd_validate(int argc, char **argv);
/** validate --distributed (cli/validate_dist.c): the scale-out validation of
 *  the distributed-kernel records over their own links. @return COMET_EXIT_*. */
struct comet_model_hw;
struct comet_results_record;
int comet_cli_validate_dist(const struct comet_model_hw *hw, const char *profile,
    const struct comet_results_record *recs, size_t n, const char *dir, int json_out);
/** validate --system (cli/validate_system.c): every llm record predicted by
 *  the system model with its own configuration. @return COMET_EXIT_*. */
int comet_cli_validate_system(const struct comet_model_hw *hw, const char *profile,
    const struct comet_results_record *recs, size_t n, int json_out);
int comet_cmd_report(int argc, char **argv);
int comet_cmd_run(int argc, char **argv);
int comet_cmd_compare(int argc, char **argv);
/** 1 if predict/explore's argv names a transformer workload (the system model answers). */
int comet_cli_is_system(int argc, char **argv);
/** predict / explore of a transformer workload on a system (cmd_system.c). */
int comet_cli_system(int argc, char **argv, int explore);
/** The system model's options (predict/explore with a transformer --workload). */
void comet_cli_system_usage(FILE *f, int explore);

struct comet_model_hw;
struct comet_model_problem;
/**
 * --sweep FIELD=V1,V2,...: the best fused and unfused latency at each value of
 * a shape dimension or a named hardware parameter (table, or JSON
 * comet.sweep.v1; with outdir a figure and its CSV). @return an exit code.
 */
int comet_cli_sweep(const char *sub, const struct comet_model_hw *hw,
    const struct comet_model_problem *pb, const char *spec, int json, const char *outdir);
struct comet_model_vrow;
/**
 * Validation rows of a calibrated profile's own results (DIR/results beside
 * DIR/profile.json, this machine's only): the model's measured error, for
 * prediction intervals. *rows is NULL and *n 0 when hwpath is not such a
 * profile or no record is there. *rows is freed by the caller. @return 0.
 */
int comet_cli_profile_vrows(
    const char *hwpath, const struct comet_model_hw *hw, struct comet_model_vrow **rows, int *n);
/** --sensitivity: each hardware parameter -10% / +10%, ranked (JSON comet.sensitivity.v1). */
/**
 * Runs the benches calibration needs by running this program's own
 * subcommands (comet_cli_spawn_self): `bench memory`, `bench
 * kernels` (an sgemm-only shape set written to outdir), `bench collectives`
 * (ping-pong and forced algorithms), results into outdir/results. full
 * selects the larger sets. Progress on stderr. On SIGINT/SIGTERM
 * (comet_util_interrupted) the running bench is stopped and -EINTR returned.
 * A collectives failure is not fatal (*coll_ok = 0).
 * @return 0, -EINTR, or -EIO when a required bench failed (message says which)
 */
int comet_cli_calibrate_measure(
    const char *outdir, int full, int quiet, int *coll_ok, char *err, size_t errlen);

/**
 * `comet bench collectives`: argv[0] is "collectives", the rest its options
 * (see --help); argv[1] == "--worker" is one rank of a launch (the hidden
 * mode the run starts under mpiexec). @return a COMET_EXIT_* code.
 */
int comet_cli_bench_coll(int argc, char **argv);
/** `comet bench llm` (cmd_bench_llm.c): argv[0] = "llm". */
int comet_cli_bench_llm(int argc, char **argv);

/**
 * predict / explore --op gms: the gather-GEMM-scatter model on a CPU
 * description for an input's statistics (shape "rows=,pairs=,segments=,K=,N=")
 * or a gms input file (input, with shape "K=,N="); mapping "best" or one
 * dataflow. Prints text or comet.gms.v1 JSON; @return a COMET_EXIT_* code.
 */
/** predict on COMET's four files (cli/cmd_cometio.c): COMET's numbers and comet's. */
int comet_cli_cometio(const char *sub, const char *arch, const char *problem, const char *mapping,
    const char *constants, int explain, const comet_cli_global *g);

int comet_cli_gms(const char *sub, int explore, const char *hwname, const char *shape,
    const char *input, const char *mapping, const comet_cli_global *g);

int comet_cli_sensitivity(const char *sub, const struct comet_model_hw *hw,
    const struct comet_model_problem *pb, int json);

/** Path of the running comet executable (for re-launching under mpiexec). */
extern const char *comet_cli_self;

#endif

/**
 * Runs `comet <args...>` (this executable, /proc/self/exe) as a child,
 * inheriting stderr; returns its exit status (or 1 if it could not run).
 */
int comet_cli_spawn_self(const char *const *args);

/** Same, with the child's stdout written atomically to out_path (kept only on success). */
int comet_cli_spawn_self_to(const char *const *args, const char *out_path);
