/**
 * @file comet_reports.h
 * @brief Joins measured and predicted results into a report a performance
 *        architect can read: index.html (self-contained, offline) and
 *        summary.md, with gnuplot SVG plots whose data sit beside them as CSV
 *        and JSON.
 *
 * Inputs in DIR: results/NAME.jsonl (bench), profile.json (calibrate),
 * validate.json (validate), predictions/NAME.json (explore --json). Missing
 * optional inputs leave their section saying so; outputs go to DIR/report/
 * and are written atomically.
 */
#ifndef COMET_REPORTS_H
#define COMET_REPORTS_H

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One measured fused-vs-unfused comparison. */
typedef struct comet_reports_speedup {
    char op[24]; /**< compound op */
    char shape[64]; /**< "M=..,N=..,K=.." or attention dims */
    int threads; /**< threads */
    double fused_s, unfused_s; /**< median seconds */
    double speedup; /**< unfused / fused medians */
    double lo, hi; /**< conservative 95% interval: from the medians' CIs */
} comet_reports_speedup;

/**
 * Pairs fused and unfused kernel records (same op, shape, threads).
 * @return pairs written (<= cap).
 */
size_t comet_reports_speedups(
    json_t *const *recs, size_t n, comet_reports_speedup *out, size_t cap);

/**
 * Builds DIR/report from the inputs in DIR. gnuplot (a child process under
 * a timeout) draws the SVGs; without gnuplot the report still builds and
 * says the plots are missing. @return 0 or a negative errno.
 */
int comet_reports_build(const char *dir, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
