/* Internal to comet_bench: the session every bench driver runs inside
 * (results file, progress, pinning, interruption) and the vector ops the
 * memory bench times. Not a public header. */
#ifndef COMET_BENCH_INTERNAL_H
#define COMET_BENCH_INTERNAL_H

#include "comet_bench.h"
#include "comet_util.h"

/** Vector ops timed by the memory bench (order matches memory.c). */
enum bench_vop {
    BENCH_VEXP,
    BENCH_VMAX,
    BENCH_VSUM,
    BENCH_VSUB,
    BENCH_VDIV,
    BENCH_VMUL,
    BENCH_VSQRT
};

/**
 * y = f(x) elementwise (exp, sub/div/mul by s, sqrt) or *red = max/sum of x,
 * float32, AVX2 when the CPU has it. @return 0 or -EINVAL.
 */
int bench_vecop(int op, const float *x, float *y, size_t n, float s, float *red);
/** "avx2" or "scalar": which implementation bench_vecop() uses here. */
const char *bench_vecop_impl(void);

/** State of one bench run. */
typedef struct bench_session {
    const comet_bench_opts *o; /* options (borrowed) */
    comet_bench_summary *sum; /* filled as we go (borrowed) */
    comet_bench_run run; /* run id, machine */
    comet_bench_writer w; /* results file */
    comet_bench_counters counters; /* PAPI, usually disabled on VMs */
    comet_util_progress prog; /* stderr progress */
    int progress_on; /* prog started */
    int pinned; /* last pin request succeeded */
    int pin_warned; /* a pin failure was reported once */
    int stop; /* interrupted: stop after the current set */
    uint64_t llc, l2, l1; /* cache sizes from the machine description */
    double t0; /* start time */
} bench_session;

/** Opens <out>/results/<kind>-<run_id>.jsonl and writes the run record. */
int bench_session_open(bench_session *s, const comet_bench_opts *o, const char *kind,
    json_t *machine, comet_bench_summary *sum, char *err, size_t errlen);
/** Appends rec (adds "pinned"), counting it and whether it was valid. */
int bench_session_write(bench_session *s, json_t *rec, int valid, char *err, size_t errlen);
/** Starts the progress line. */
void bench_session_progress(bench_session *s, const char *label, size_t total);
/** One step done; notices SIGINT/SIGTERM (sets s->stop). */
void bench_session_step(bench_session *s, const char *note);
/** Pins for T threads when asked to (failure is reported once, then ignored). */
void bench_session_pin(bench_session *s, int T);
/** Closes the file, exports CSV if asked, fills the summary (takes highlights). */
int bench_session_close(bench_session *s, json_t *highlights, char *err, size_t errlen);
/** Closes after an error, keeping what was written. */
void bench_session_abort(bench_session *s);

#endif
