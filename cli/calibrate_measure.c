/* Measuring for a calibration: this program's own bench subcommands run as
 * child processes through the CLI's one spawn helper (comet_cli_spawn_self:
 * its own process group, interruptions forwarded), so an interrupted bench
 * cannot leave the calibration half-done and no library starts comet by its
 * flags. */
#include "cli.h"

#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The sgemm-only shape set of the kernels bench: a log-spaced grid. */
static int write_shapes(const char *path, int full, char *err, size_t errlen)
{
    char text[512];
    int len = snprintf(text, sizeof text,
        "# written by comet calibrate: sgemm efficiency grid (%s)\n"
        "threads: [1, all]\n"
        "sgemm:\n"
        "  threads: [1, all]\n"
        "  min: %d\n"
        "  max: %d\n"
        "  points: %d\n"
        "  fused_gemm: 1\n",
        full ? "full" : "quick", full ? 32 : 64, 1024, full ? 5 : 3);
    return comet_util_write_atomic(path, text, (size_t)len, err, errlen);
}

int comet_cli_calibrate_measure(
    const char *outdir, int full, int quiet, int *coll_ok, char *err, size_t errlen)
{
    char shapes[4200];
    const char *set = full ? "--full" : "--quick", *q = quiet ? "-q" : NULL;
    int rc;
    *coll_ok = 0;
    if ((rc = comet_util_mkdir_p(outdir, err, errlen)) != 0)
        return rc;
    snprintf(shapes, sizeof shapes, "%s/calibrate-sgemm-%s.yaml", outdir, set + 2);
    if ((rc = write_shapes(shapes, full, err, errlen)) != 0)
        return rc;
    /* quick: one pass, short caps, so that the whole calibration stays
     * within a minute; full: the benches' own full settings */
    /* quick: one point per doubling (the bench's own quick set steps by 4x,
     * too sparse to hold points out of the plateau fit) */
    const char *mem_q[] = { "bench", "memory", set, "--per-octave", "1", "--time-cap", "0.2",
        "--gate-timeout", "1", "--out", outdir, q, NULL };
    const char *mem_f[] = { "bench", "memory", set, "--time-cap", "0.5", "--gate-timeout", "2",
        "--out", outdir, q, NULL };
    const char *ker_q[]
        = { "bench", "kernels", set, "--shapes", shapes, "--passes", "1", "--time-cap", "0.2",
              "--grid-time-cap", "0.2", "--gate-timeout", "1", "--out", outdir, q, NULL };
    const char *ker_f[]
        = { "bench", "kernels", set, "--shapes", shapes, "--passes", "1", "--time-cap", "0.5",
              "--grid-time-cap", "0.5", "--gate-timeout", "2", "--out", outdir, q, NULL };
    const char *col_q[] = { "bench", "collectives", set, "--colls",
        "pingpong,allreduce,allgather,bcast", "--algs", "all", "--sizes",
        "4,64,256,1K,2K,4K,8K,16K,32K,64K,256K,1M", "--out", outdir, q, NULL };
    const char *col_f[] = { "bench", "collectives", set, "--colls",
        "pingpong,allreduce,allgather,bcast,reduce,reduce_scatter", "--algs", "all", "--sizes",
        "4,16,64,256,1K,2K,4K,8K,16K,32K,64K,128K,256K,1M,4M", "--launches", "2", "--out", outdir,
        q, NULL };
    struct {
        const char *what;
        const char *const *argv;
        int required;
    } steps[3] = {
        { "bench memory", full ? mem_f : mem_q, 1 },
        { "bench kernels (sgemm grid)", full ? ker_f : ker_q, 1 },
        { "bench collectives", full ? col_f : col_q, 0 },
    };
    comet_util_progress pr;
    comet_util_progress_start(&pr, "calibrate: measuring", 3);
    for (int i = 0; i < 3; i++) {
        comet_util_info("calibrate: [%d/3] %s %s", i + 1, steps[i].what, set);
        int st = comet_cli_spawn_self(steps[i].argv);
        if (comet_util_interrupted) {
            comet_util_progress_end(&pr);
            return comet_util_seterr(
                err, errlen, -EINTR, "calibrate: interrupted during %s", steps[i].what);
        }
        if (st != 0 && steps[i].required) {
            comet_util_progress_end(&pr);
            return comet_util_seterr(
                err, errlen, -EIO, "calibrate: 'comet %s' failed (exit %d)", steps[i].what, st);
        }
        if (i == 2)
            *coll_ok = st == 0;
        comet_util_progress_step(&pr, 1, steps[i].what);
    }
    comet_util_progress_end(&pr);
    return 0;
}
