/* Internals of the reports library shared by its sources (not installed).
 *   inputs.c   loading results, profile, predictions (errors name the file)
 *   doc.c      one writer for summary.md and index.html side by side
 *   plot.c     data files (CSV + JSON) and gnuplot SVGs under a timeout
 *   measured.c machine, speedups, roofline, memory sections
 *   links.c    point-to-point and collective sections (measured vs fitted)
 *   modeled.c  validation, predictions, fit quality and provenance sections
 *   sysval.c   whole steps (llm records) against the system model
 *   sysval_fig.c their predicted-vs-measured figure
 *   build.c    comet_reports_build()
 *   predict.c  comet_reports_predict()
 *   fresh.c    freshness and archiving of results for comet run */
#ifndef COMET_REPORTS_INTERNAL_H
#define COMET_REPORTS_INTERNAL_H

#include "comet_model_validate.h"
#include "comet_reports.h"
#include "comet_results.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>

#define RP_PATH 4096

/* ---- inputs ---- */

typedef struct rp_file {
    char path[RP_PATH + 320]; /* results file */
    char kind[32]; /* bench kind of its run record */
    char run_id[64];
    char time[40];
    size_t records; /* measurement records */
    char warning[256]; /* torn last line, if any */
    int complete; /* its bench finished: DIR/results/KIND.complete lists it */
    int torn; /* its last line was cut (the writer was interrupted) */
    char last[200]; /* the last measurement in it (where an interrupted bench stopped) */
} rp_file;

typedef struct rp_inputs {
    const char *dir;
    comet_results_set set; /* all records of all files, file order */
    const comet_results_record *recs; /* set.recs */
    size_t n; /* set.n */
    rp_file *files;
    size_t nfiles;
    const comet_results_machine *machine_rec; /* machine of the first run record (one whose
                                                 PAPI was probed when there is one) */
    json_t *profile; /* profile.json as JSON, or NULL */
    comet_model_hw hw; /* profile as the model sees it (have_hw) */
    int have_hw;
    char profile_note[300]; /* why there is no profile */
    json_t *pred; /* predictions.json, or NULL */
    char pred_note[300];
    json_t *runlog; /* run.json (stages of comet run), or NULL */
    char runlog_note[300];
} rp_inputs;

int rp_inputs_load(
    rp_inputs *in, const char *dir, const comet_results_load_opts *lo, char *err, size_t errlen);
void rp_inputs_free(rp_inputs *in);

/* Results files of DIR/results (*.jsonl), sorted; caller frees each and the array. */
int rp_list_results(const char *dir, char ***names, size_t *n, char *err, size_t errlen);

/* ---- growing text buffer ---- */

typedef struct rp_buf {
    char *p;
    size_t n;
    FILE *fp;
} rp_buf;

int rp_buf_open(rp_buf *b);
/* Closes the stream; b->p/b->n hold the text (free with rp_buf_free). */
int rp_buf_close(rp_buf *b);
void rp_buf_free(rp_buf *b);

/* ---- the two documents ---- */

typedef struct rp_doc {
    rp_buf md, html;
    int ncols; /* columns of the open table */
    char align[16]; /* 'l' or 'r' per column */
    int nfig; /* figures so far */
} rp_doc;

int rp_doc_open(rp_doc *d);
void rp_doc_free(rp_doc *d);
void rp_h2(rp_doc *d, const char *id, const char *title);
void rp_h3(rp_doc *d, const char *title);
/* A paragraph; text is plain (escaped for HTML). */
void rp_p(rp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A highlighted note (a missing input, a failed stage). */
void rp_note(rp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Table: header cells separated by '\t'; align is one 'l'/'r' per column. */
void rp_table(rp_doc *d, const char *align, const char *header);
/* A row: printf-formatted cells separated by '\t'. */
void rp_row(rp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_table_end(rp_doc *d);

/* ---- plots ---- */

typedef struct rp_plot {
    char name[64]; /* file stem: NAME.svg, NAME.csv, NAME.json, NAME.gp */
    char caption[240];
    int ok; /* SVG drawn */
    char why[240]; /* why not */
} rp_plot;

typedef struct rp_ctx {
    rp_inputs *in;
    rp_doc doc;
    char rdir[RP_PATH]; /* report folder */
    char *err;
    size_t errlen;
    int wrote_error; /* first output error (negative) */
    json_t *index; /* report.json: every plot and table, machine-readable */
} rp_ctx;

void rp_plot_init(rp_plot *p, const char *name, const char *caption);
/* Writes NAME.csv (csv text) and NAME.json (steals json) atomically. */
int rp_plot_data(rp_ctx *c, rp_plot *p, const char *csv, json_t *json);
/* Writes NAME.gp (script, after a common preamble) and draws NAME.svg with
 * gnuplot run in the report folder under a timeout; failures land in p->why. */
void rp_plot_draw(rp_ctx *c, rp_plot *p, const char *script);
/* The figure (image + caption + data links) or the reason it is missing. */
void rp_figure(rp_ctx *c, const rp_plot *p);
/* Figure size in SVG pixels (one metric per figure; the page scales it to its width). */
#define RP_FIG_W 1200
#define RP_FIG_H 640
/* Writes gnuplot commands for a base-2 log x axis from lo to hi with binary
 * tick labels ("1 KiB", "4 MiB"). */
void rp_binary_xtics(FILE *fp, double lo, double hi);
/* A copy of s fit for a table cell (tabs and line breaks become spaces),
 * from a small rotating pool: valid until 16 more calls. */
const char *rp_cell(const char *s);

/* Escapes text for HTML onto fp. */
void rp_html_escape(FILE *fp, const char *s);
/* Escapes text for HTML onto fp, rendering markdown inline **bold** and `code`. */
void rp_html_inline(FILE *fp, const char *s);
/* Quotes a CSV field when needed. */
#define rp_csv_field comet_util_csv_field

/* ---- record helpers ---- */

#define rp_num comet_util_jnum
#define rp_str comet_util_jstr

/* Median of v[0..n-1] (sorts v; comet_util_quantile's convention). NaN for n == 0. */
double rp_median(double *v, size_t n);

/* ---- sections ---- */

int rp_sec_run(rp_ctx *c);
int rp_sec_machine(rp_ctx *c);
int rp_sec_speedups(rp_ctx *c);
int rp_sec_validation(rp_ctx *c);
int rp_sec_gms(rp_ctx *c);
int rp_sec_roofline(rp_ctx *c);
int rp_sec_memory(rp_ctx *c);
int rp_sec_links(rp_ctx *c);
int rp_sec_predictions(rp_ctx *c);
int rp_sec_fits(rp_ctx *c);
int rp_sec_system(rp_ctx *c);
int rp_sec_sysval(rp_ctx *c);
/* sysval_fig.c: the whole-step figure (predicted vs measured step of the rows,
 * log-log, y = x and a +-15% band), wholesteps.{csv,json,gp,svg}; 0 or -ENOMEM. */
int rp_sysval_figure(rp_ctx *c, const comet_reports_sysv_row *rows, int nr);
/* How a record's ranks split the model: "1 rank", "tp2", "tp2+sp", "pp2",
 * "dp2", combinations, " x2 thr" with threads. */
void rp_sysval_grid(const comet_results_record *r, char *buf, size_t len);

#endif
