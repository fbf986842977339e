/**
 * @file comet_util.h
 * @brief Shared support for comet's libraries: error codes, atomic file
 *        output, a YAML/JSON document tree that remembers line numbers,
 *        checked number parsing, clocks and progress output.
 *
 * Conventions used across comet:
 *  - functions return 0 on success or a negative errno-style code
 *    (e.g. -EINVAL, -ENOMEM, -EOVERFLOW, -EIO);
 *  - messages for the user go through an error buffer (char *err, size_t
 *    errlen) formatted as "<where>: <what>" on one line; the CLI prints
 *    "comet: " in front of it.
 *
 * The kernels library does not use this header (it depends on nothing).
 */
#ifndef COMET_UTIL_H
#define COMET_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Maximum length of a one-line error message, including the NUL. */
#define COMET_ERRLEN 512

/** Returns a static description of a negative comet error code. */
const char *comet_util_strerror(int rc);

/** The git commit the binary was built from (12 hex digits, "-dirty" when
 *  tracked files differed from it), "" outside a checkout. Written at every
 *  build, not at configure time. */
const char *comet_util_git_commit(void);

/** Formats into err (if non-NULL) printf-style; always returns rc. */
int comet_util_seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

/**
 * Writes data to path atomically: a temporary file in the same directory is
 * written, fsync'ed and renamed over path, then the directory is fsync'ed.
 * On any failure path is left as it was and the temporary is removed.
 * @return 0 or a negative errno.
 */
int comet_util_write_atomic(
    const char *path, const void *data, size_t len, char *err, size_t errlen);

/**
 * Opens a temporary file next to path for streaming output. Finish with
 * comet_util_atomic_commit() (fsync + rename) or comet_util_atomic_abort().
 */
typedef struct comet_util_atomic {
    FILE *fp; /**< stream to write to */
    char *path; /**< final path */
    char *tmp_path; /**< temporary path */
} comet_util_atomic;

/** Starts an atomic write of path. @return 0 or a negative errno. */
int comet_util_atomic_open(comet_util_atomic *a, const char *path, char *err, size_t errlen);
/** Flushes, fsyncs and renames the temporary over the final path. */
int comet_util_atomic_commit(comet_util_atomic *a, char *err, size_t errlen);
/** Discards the temporary file; the final path is untouched. */
void comet_util_atomic_abort(comet_util_atomic *a);

/** mkdir -p; @return 0 or a negative errno (with a message naming the path). */
int comet_util_mkdir_p(const char *path, char *err, size_t errlen);

/** Reads a whole file into a NUL-terminated malloc'ed buffer. */
int comet_util_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);
/** Largest input comet_util_read_file() reads (bytes); beyond it: -EFBIG. */
#define COMET_UTIL_READ_MAX (256 << 20)

/* ------------------------------------------------------------------ */
/* Document tree (YAML 1.1 or JSON, via libyaml) with source positions */
/* ------------------------------------------------------------------ */

/** Kind of a document node. */
typedef enum comet_util_doc_kind {
    COMET_DOC_SCALAR = 0, /**< a string, number, boolean or null */
    COMET_DOC_MAP = 1, /**< key/value pairs in document order */
    COMET_DOC_SEQ = 2 /**< a list */
} comet_util_doc_kind;

/** A node of a parsed YAML/JSON document. Keys are kept in order. */
typedef struct comet_util_doc {
    comet_util_doc_kind kind; /**< node kind */
    char *key; /**< key in the parent map, or NULL */
    char *value; /**< scalar text (COMET_DOC_SCALAR only) */
    int quoted; /**< scalar was quoted (so "1" is a string) */
    int line; /**< 1-based source line */
    int column; /**< 1-based source column */
    size_t n; /**< number of children */
    struct comet_util_doc **child; /**< children (map values carry key) */
    const char *file; /**< source file name (shared by the tree) */
} comet_util_doc;

/**
 * Parses a YAML or JSON file (JSON is read as YAML flow style) into a tree.
 * Errors name file:line:column. Duplicate map keys are refused.
 * @return 0 or a negative errno; *out must be freed with comet_util_doc_free().
 */
int comet_util_doc_load(const char *path, comet_util_doc **out, char *err, size_t errlen);
/** Same as comet_util_doc_load() on an in-memory buffer; name is used in messages. */
int comet_util_doc_parse(
    const char *name, const char *text, size_t len, comet_util_doc **out, char *err, size_t errlen);
/** Frees a tree returned by the loaders (NULL is fine). */
void comet_util_doc_free(comet_util_doc *doc);

/** Child of a map by key, or NULL. */
const comet_util_doc *comet_util_doc_get(const comet_util_doc *map, const char *key);

/**
 * Reads a required (or optional, if dflt != NULL) finite number field of a
 * map, checking lo <= value <= hi. Messages name file:line and the field.
 */
int comet_util_doc_number(const comet_util_doc *map, const char *key, const double *dflt, double lo,
    double hi, double *out, char *err, size_t errlen);
/** Reads a string field (required unless dflt != NULL). *out points into the tree or dflt. */
int comet_util_doc_string(const comet_util_doc *map, const char *key, const char *dflt,
    const char **out, char *err, size_t errlen);
/** Reads a boolean field (true/false/yes/no/on/off/1/0). */
int comet_util_doc_bool(const comet_util_doc *map, const char *key, const int *dflt, int *out,
    char *err, size_t errlen);
/**
 * Checks that every key of map is in the NULL-terminated list allowed,
 * so that a misspelt field is an error, not silently ignored.
 */
int comet_util_doc_check_keys(
    const comet_util_doc *map, const char *const *allowed, char *err, size_t errlen);
/** Writes s as one CSV field (RFC 4180): quoted, with quotes doubled, when it
 *  holds a comma, a quote or a line break; NULL writes nothing. */
void comet_util_csv_field(FILE *fp, const char *s);

/** Formats "file:line" of a node into buf. */
const char *comet_util_doc_where(const comet_util_doc *node, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Checked parsing of command-line values                             */
/* ------------------------------------------------------------------ */

/**
 * Parses a non-negative integer with an optional binary suffix (k, K, KiB,
 * M, MiB, G, GiB) into *out; refuses signs, garbage and overflow.
 */
int comet_util_parse_u64(const char *s, uint64_t *out);
/** Parses a finite double; refuses garbage, NaN and infinities. */
int comet_util_parse_double(const char *s, double *out);
/** Multiplies a*b into *out; -EOVERFLOW if it does not fit size_t. */
int comet_util_mul_size(size_t a, size_t b, size_t *out);
/**
 * Splits s in place on blanks into argv, honouring '...' and "..." (no
 * escapes): the words of a launcher's arguments (--launcher-args).
 * @return the word count, or -1 with more than max words or an open quote.
 */
int comet_util_split_words(char *s, char **argv, int max);

/** Kinds of physical quantity (SI base unit of each in comments). */
typedef enum comet_util_unit {
    COMET_UNIT_BYTES = 0, /**< B; kB/MB/GB/TB decimal, KiB/MiB/GiB/TiB binary, bit, Gbit */
    COMET_UNIT_BYTES_PER_S, /**< B/s; GB/s, GiB/s, Gbit/s, Gb/s, ... */
    COMET_UNIT_HZ, /**< Hz; kHz, MHz, GHz */
    COMET_UNIT_SECONDS, /**< s; ms, us, ns, ps */
    COMET_UNIT_FLOPS, /**< FLOP/s; GFLOP/s, TFLOP/s, PFLOP/s, TOPS */
    COMET_UNIT_J_PER_BYTE, /**< J/B; pJ/B, pJ/bit */
    COMET_UNIT_JOULES, /**< J per event; pJ, pJ/access, pJ/MAC, pJ/op, pJ/FLOP */
    COMET_UNIT_WATTS, /**< W; mW, kW */
    COMET_UNIT_USD /**< US dollars; "$1200", "1200 USD" */
} comet_util_unit;

/**
 * Parses a quantity "<number> <unit>" ("300 GB/s", "1.4GHz", "40 MiB",
 * "5 ns", "0.8 pJ/B") of kind u into SI base units (*out). A bare number is
 * taken in the base unit when bare_ok, else refused with -EDOM (the unit is
 * required). Decimal prefixes are powers of 1000, "i" prefixes powers of
 * 1024; bits are 1/8 byte. Locale-independent.
 * @return 0, -EINVAL (garbage, negative, unknown unit for the kind) or -EDOM.
 */
int comet_util_parse_quantity(const char *s, comet_util_unit u, int bare_ok, double *out);
/** The base unit's symbol of a kind ("B/s" for COMET_UNIT_BYTES_PER_S). */
const char *comet_util_unit_base(comet_util_unit u);

/* ------------------------------------------------------------------ */
/* JSON field access (records, profiles)                              */
/* ------------------------------------------------------------------ */

struct json_t;
/** Number field k of object o, or NaN when absent or not a number. */
double comet_util_jnum(const struct json_t *o, const char *k);
/** String field k of object o, or "" when absent or not a string. */
const char *comet_util_jstr(const struct json_t *o, const char *k);

/* ------------------------------------------------------------------ */
/* Statistics                                                         */
/* ------------------------------------------------------------------ */

/** Quantile q in [0, 1] of v[0..n) by linear interpolation between order
 *  statistics (Hyndman-Fan type 7, R's default): the one convention
 *  validation, the report and the prediction intervals print. Sorts v in
 *  place. @return NaN when n == 0, v is NULL or q is outside [0, 1]. */
double comet_util_quantile(double *v, size_t n, double q);

/* ------------------------------------------------------------------ */
/* Clocks, logging, progress                                          */
/* ------------------------------------------------------------------ */

/** CLOCK_MONOTONIC in seconds. */
double comet_util_now(void);
/** Current UTC time as ISO 8601 "YYYY-MM-DDTHH:MM:SSZ" into buf. */
const char *comet_util_iso_time(char *buf, size_t len);

/**
 * The one way comet finds a file of its configs/ folder (hardware presets,
 * workloads, shape sets): NAME with a '/' or a .yaml/.yml/.json ending is a
 * path, taken as given; otherwise the first readable of
 * `$COMET_CONFIGS/KIND/NAME.yaml` (when the environment sets COMET_CONFIGS:
 * a user's folder laid out as configs/) and the source tree's
 * `configs/KIND/NAME.yaml` (the presets this binary was built with). An existing file named NAME is
 * a path too. docs/FORMATS.md
 * ("Config files") states the rule.
 * @param kind "hw", "workloads" or "shapes"
 * @return 0 and the path, or -ENOENT (path then holds the last place tried),
 *         -EINVAL for an empty name, -ENAMETOOLONG.
 */
int comet_util_config_path(const char *kind, const char *name, char *path, size_t len);

/** Verbosity: -1 quiet, 0 normal, 1 verbose. Set by the CLI. */
extern int comet_util_verbosity;

/** Prints an informational line to stderr unless quiet. */
void comet_util_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Prints a debug line to stderr when verbose. */
void comet_util_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Progress reporter on stderr: "label  i/n  pct  ETA". */
typedef struct comet_util_progress {
    const char *label; /**< what is being done */
    size_t total; /**< number of steps (0 if unknown) */
    size_t done; /**< steps finished */
    double t0; /**< start time */
    double last; /**< last print time */
    int tty; /**< stderr is a terminal (else plain lines: no carriage returns, no ANSI codes) */
} comet_util_progress;

/** Starts a progress line. */
void comet_util_progress_start(comet_util_progress *p, const char *label, size_t total);
/** Marks steps done (prints at most a few times per second). note may be NULL. */
void comet_util_progress_step(comet_util_progress *p, size_t steps, const char *note);
/** Ends the progress line. */
void comet_util_progress_end(comet_util_progress *p);

/** Set to 1 by SIGINT/SIGTERM once comet_util_install_signals() was called. */
extern volatile int comet_util_interrupted;
/** Installs SIGINT/SIGTERM handlers that set comet_util_interrupted. */
void comet_util_install_signals(void);

/* ------------------------------------------------------------------ */
/* The program's own executable                                        */
/* ------------------------------------------------------------------ */

/**
 * Records how to re-execute this program: call first in main with argv[0].
 * Normally /proc/self/exe; when the process image is something else (run
 * under valgrind or qemu-user, whose tool /proc/self/exe names), the
 * program's path from argv[0] (resolved on PATH when it has no slash).
 */
void comet_util_self_init(const char *argv0);
/** The path to exec to start comet again (comet_util_self_init()). */
const char *comet_util_self_exe(void);
/** 1 when the process image is not comet itself (valgrind, qemu-user). */
int comet_util_self_hosted(void);
/**
 * The BLAS core-type policy of every comet program (the CLI and the perf
 * tools alike): OpenBLAS picks its kernels before main from
 * OPENBLAS_CORETYPE, so with COMET_BLAS_CORE unset or "auto" an inherited
 * pin is dropped and the program re-executes itself once (argv as given)
 * to let OpenBLAS detect the CPU; "keep" keeps the environment; another
 * value is set as the core type. Not under valgrind (comet_util_self_hosted).
 * What was done is left in COMET_BLAS_CORE_POLICY. Call first in main,
 * after comet_util_self_init().
 */
void comet_util_blas_core_policy(char **argv);

/** An output folder held by this process (comet_util_lock_dir()). */
typedef struct comet_util_lock {
    int fd; /**< the lock file's descriptor (-1: not held here) */
    char path[4096]; /**< DIR/.comet.lock */
} comet_util_lock;

/**
 * Takes the output folder DIR for this process (created if missing): an
 * exclusive flock on DIR/.comet.lock, which the kernel releases when the
 * process ends, even by SIGKILL; the file names the holder ("pid N: what,
 * since T"). A second comet gets -EBUSY and a one-line error naming the
 * holder. When the file still names a holder whose lock is gone (it was
 * killed), *stale_pid (may be NULL) gets its pid: its work there may be
 * partial. A comet started by the holder for the same folder (the
 * environment says so) works under the holder's lock (lk->fd = -1).
 * @return 0 or a negative errno.
 */
int comet_util_lock_dir(const char *dir, const char *what, comet_util_lock *lk, int *stale_pid,
    char *err, size_t errlen);
/** Releases the folder (an empty lock file: finished cleanly). */
void comet_util_unlock_dir(comet_util_lock *lk);

/**
 * In a child just forked by `parent` (its getpid() before fork): ask the
 * kernel to send SIGKILL to this child when the parent ends, even by
 * SIGKILL, so no bench outlives the comet that started it.
 * @return 0, or -ESRCH when the parent has already ended (the child should
 * exit), or a negative errno.
 */
int comet_util_child_dies_with_parent(int parent);

#ifdef __cplusplus
}
#endif
#endif /* COMET_UTIL_H */
