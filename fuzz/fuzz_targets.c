/* libFuzzer targets for every parser comet has. Built twice: with clang and
 * -fsanitize=fuzzer (COMET_FUZZ=ON, scripts/fuzz.sh), and as plain replay
 * drivers that ctest runs over the committed corpus (fuzz/corpus/<target>).
 *
 * Targets (one FUZZ_<NAME> define each):
 *   doc        YAML/JSON document tree (the base of every config parser)
 *   hw         hardware descriptions / calibrated profiles (+ round trip)
 *   record     one results line: the results library's one reader (comet_results.h:
 *              check, conversion, typed record, written back and read again)
 *   results    a whole JSON Lines results file -> loader -> calibrate -> validate
 *   shape      CLI shape arguments and sizes (M=..,N=..,K=.., 64MiB, 0.5)
 *   shapeset   bench shape-set (workload) files
 *   overrides  probe cache-override files
 *   llm        transformer workloads for the system model (+ a search on a preset)
 *
 * Parsers that only take a path get the input through a per-process file in
 * /dev/shm (or $TMPDIR). Besides "no crash", the targets check properties:
 * a description that loads must re-load from its own JSON, evaluate to
 * finite numbers, and a parsed shape must be positive and finite. */
#include "comet_bench.h"
#include "comet_calibrate.h"
#include "comet_model_validate.h"
#include "comet_probe.h"
#include "comet_results.h"
#include "comet_system.h"
#include "comet_util.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property violation is a bug: abort so libFuzzer keeps the input. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Writes the input to a per-process scratch file and returns its path. */
__attribute__((unused)) static const char *scratch_file(
    const uint8_t *data, size_t size, const char *ext)
{
    static char path[256];
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/comet-fuzz-%ld%s", dir ? dir : "/tmp", (long)getpid(), ext);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return NULL;
    if (size && fwrite(data, 1, size, fp) != size) {
        fclose(fp);
        return NULL;
    }
    if (fclose(fp) != 0)
        return NULL;
    return path;
}

/* Error messages must be one line (the CLI prints them after "comet: "). */
static void check_message(const char *err)
{
    FUZZ_CHECK(strchr(err, '\n') == NULL);
}

/* A fixed "this machine" for the foreign-machine check (the probe's shape:
 * the fuzzer must not depend on the host it runs on). */
__attribute__((unused)) static json_t *fuzz_here(void)
{
    static json_t *here;
    if (!here)
        here = json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:I,s:[{s:i,s:s,s:I,s:b}]}", "id",
            "1235708b362decba", "hostname", "vm", "cpu_model", "AMD EPYC", "packages", 1, "cores",
            2, "pus", 2, "memory_bytes", (json_int_t)23314255872, "caches", "level", 2, "type",
            "unified", "size", (json_int_t)1048576, "overridden", 0);
    return here;
}

#if defined(FUZZ_DOC)
/* YAML/JSON document tree: the base of every config parser. */
static void walk(const comet_util_doc *d, int depth)
{
    char where[64];
    FUZZ_CHECK(depth < 10000);
    FUZZ_CHECK(d->line >= 1);
    comet_util_doc_where(d, where, sizeof where);
    if (d->kind == COMET_DOC_SCALAR)
        FUZZ_CHECK(d->value != NULL && d->n == 0);
    for (size_t i = 0; i < d->n; i++) {
        FUZZ_CHECK(d->child[i] != NULL);
        if (d->kind == COMET_DOC_MAP)
            FUZZ_CHECK(d->child[i]->key != NULL);
        walk(d->child[i], depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    comet_util_doc *d = NULL;
    char err[COMET_ERRLEN] = "";
    if (comet_util_doc_parse("fuzz.yaml", (const char *)data, size, &d, err, sizeof err) == 0) {
        double v;
        int b;
        const char *s;
        static const char *const allowed[] = { "a", "b", "c", NULL };
        walk(d, 0);
        err[0] = '\0';
        if (comet_util_doc_number(d, "a", NULL, -1e9, 1e9, &v, err, sizeof err) == 0)
            FUZZ_CHECK(isfinite(v) && v >= -1e9 && v <= 1e9);
        check_message(err);
        comet_util_doc_string(d, "b", NULL, &s, err, sizeof err);
        comet_util_doc_bool(d, "c", NULL, &b, err, sizeof err);
        comet_util_doc_check_keys(d, allowed, err, sizeof err);
        check_message(err);
        comet_util_doc_free(d);
    } else {
        FUZZ_CHECK(d == NULL && err[0] != '\0');
        check_message(err);
    }
    return 0;
}
#elif defined(FUZZ_HW)
/* Hardware descriptions and calibrated profiles. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    comet_model_hw hw, hw2;
    char err[COMET_ERRLEN] = "";
    memset(&hw, 0, sizeof hw);
    if (comet_model_hw_parse("fuzz.yaml", (const char *)data, size, &hw, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != '\0');
        check_message(err);
        return 0;
    }
    /* what loads must be sane ... */
    FUZZ_CHECK(hw.clusters >= 1 && hw.cores >= 1 && hw.clock_ghz > 0 && isfinite(hw.clock_ghz));
    /* ... re-load from its own JSON (profiles are written that way) ... */
    json_t *j = comet_model_hw_to_json(&hw);
    FUZZ_CHECK(j != NULL);
    char *txt = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    FUZZ_CHECK(txt != NULL);
    memset(&hw2, 0, sizeof hw2);
    int rc = comet_model_hw_parse("roundtrip.json", txt, strlen(txt), &hw2, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "fuzz: round trip refused: %s\n", err);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(hw2.clusters == hw.clusters && hw2.cores == hw.cores);
    comet_model_hw_free(&hw2);
    free(txt);
    /* ... and evaluate every kind of mapping to finite, non-negative figures */
    comet_model_problem pb = { .op = (comet_model_op)(size % 3),
        .M = 64,
        .N = 96,
        .K = 32,
        .heads = 2,
        .lq = 64,
        .lk = 64,
        .d = 32 };
    comet_model_mapping mp;
    comet_model_local_mapping(&hw, &pb, (int)(size & 1), 16, 1, 1, &mp);
    comet_model_result r;
    comet_model_eval(&hw, &pb, &mp, &r);
    if (r.valid) {
        /* energy is a number exactly when the description gives energies;
         * no latency below its own bound */
        FUZZ_CHECK(isfinite(r.cycles) && r.cycles >= 0
            && (hw.energy_known ? !isnan(r.energy_pj) : isnan(r.energy_pj)));
        FUZZ_CHECK(r.cycles >= r.bound_cycles);
    }
    /* the search on small systems only: a 64 x 64 one takes ~10 ms an input,
     * which would starve the parser of executions */
    if (hw.clusters <= 8 && hw.cores <= 8) {
        comet_model_search *s = calloc(1, sizeof *s);
        if (s && comet_model_explore(&hw, &pb, s) == 0 && s->r_fused.valid)
            FUZZ_CHECK(isfinite(s->r_fused.cycles) && s->r_fused.cycles >= 0);
        free(s);
    }
    comet_model_gemm_eff(&hw, 100, 100, 100, 1);
    comet_model_hw_free(&hw);
    return 0;
}
#elif defined(FUZZ_RECORD)
/* One results line (JSON Lines reader's per-line check). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    char err[COMET_ERRLEN] = "";
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (j) {
        if (comet_results_check(j, err, sizeof err) != 0)
            FUZZ_CHECK(err[0] != '\0');
        check_message(err);
        /* the one reader (comet_results.h): a record it reads writes back
         * (comet_results_to_json) as a record it reads again, field for field */
        comet_results_record r, back;
        err[0] = '\0';
        if (comet_results_parse_line((const char *)data, size, &r, err, sizeof err) == 0) {
            /* a run record's machine as the loader compares it: same as
             * itself, a one-line description against this machine */
            const json_t *mj = r.machine.json;
            if (r.kind == COMET_RESULTS_RUN) {
                comet_probe_machine m;
                char what[COMET_ERRLEN] = "";
                comet_probe_from_json(mj, &m, what, sizeof what);
                what[0] = '\0';
                FUZZ_CHECK(comet_results_machine_diff(fuzz_here(), mj, what, sizeof what) >= 0);
                check_message(what);
                if (r.machine.id[0])
                    FUZZ_CHECK(comet_results_machine_diff(mj, mj, NULL, 0) == 0);
            }
            json_t *w = comet_results_to_json(&r);
            FUZZ_CHECK(w != NULL);
            char why[COMET_ERRLEN] = "";
            int brc = comet_results_parse(w, &back, why, sizeof why);
            if (brc)
                fprintf(stderr, "fuzz: written record refused: %s\n", why);
            FUZZ_CHECK(brc == 0);
            FUZZ_CHECK(back.kind == r.kind && !strcmp(back.op, r.op) && back.threads == r.threads
                && back.ranks == r.ranks && back.stats.nsamples == r.stats.nsamples);
            /* typed fields equal (a field the table does not know is not
             * written: texts may differ, the typed record may not) */
            const double *x = &r.shape.M, *y = &back.shape.M;
            for (size_t i = 0; i < offsetof(comet_results_shape, text) / sizeof(double); i++)
                FUZZ_CHECK((isnan(x[i]) && isnan(y[i])) || x[i] == y[i]);
            FUZZ_CHECK(back.stats.n == r.stats.n
                && (r.kind == COMET_RESULTS_RUN || back.stats.median_s == r.stats.median_s));
            comet_results_record_free(&back);
            json_decref(w);
            comet_results_record_free(&r);
        } else {
            FUZZ_CHECK(err[0] != '\0');
            check_message(err);
        }
        json_decref(j);
    }
    return 0;
}
#elif defined(FUZZ_RESULTS)
/* A whole results file through the reader calibrate and validate use, then
 * the calibration and the validation of what was read. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[COMET_ERRLEN] = "";
    const char *path = scratch_file(data, size, ".jsonl");
    comet_results_set set = { 0 };
    if (!path)
        return 0;
    const char *paths[] = { path };
    /* refused as another machine's: the message names the file */
    comet_results_load_opts strict = { fuzz_here(), 0 }, lenient = { fuzz_here(), 1 };
    int rc
        = comet_calibrate_load_results_opts(paths, 1, &strict, &set, NULL, NULL, err, sizeof err);
    check_message(err);
    if (rc != 0)
        FUZZ_CHECK(strstr(err, path) != NULL);
    else
        comet_results_set_free(&set);
    err[0] = '\0';
    rc = comet_calibrate_load_results_opts(paths, 1, &lenient, &set, NULL, NULL, err, sizeof err);
    const comet_results_record *recs = set.recs;
    const size_t n = set.n;
    check_message(err);
    if (rc == 0) {
        comet_model_hw hw;
        comet_calibrate_summary sum;
        memset(&hw, 0, sizeof hw);
        err[0] = '\0';
        if (comet_calibrate_build(recs, n, NULL, 0, &hw, &sum, err, sizeof err) == 0) {
            /* a profile calibrate builds must load back (it is written as JSON) */
            json_t *j = comet_model_hw_to_json(&hw);
            char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
            comet_model_hw hw2;
            memset(&hw2, 0, sizeof hw2);
            FUZZ_CHECK(txt != NULL);
            rc = comet_model_hw_parse("profile.json", txt, strlen(txt), &hw2, err, sizeof err);
            if (rc != 0)
                fprintf(stderr, "fuzz: built profile refused: %s\n", err);
            FUZZ_CHECK(rc == 0);
            comet_model_vrow rows[16];
            comet_model_validate_records(&hw2, recs, n, rows, 16);
            comet_model_hw_free(&hw2);
            free(txt);
            json_decref(j);
            comet_model_hw_free(&hw);
        } else {
            FUZZ_CHECK(err[0] != '\0');
            check_message(err);
        }
        comet_results_set_free(&set);
    }
    unlink(path);
    return 0;
}
#elif defined(FUZZ_SHAPE)
/* CLI shape arguments and sizes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char buf[1024], err[COMET_ERRLEN] = "";
    if (size >= sizeof buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = (comet_model_op)(size % 3);
    if (comet_model_problem_parse(buf, &pb, err, sizeof err) == 0) {
        if (pb.op == COMET_MODEL_ATTENTION)
            FUZZ_CHECK(pb.heads >= 1 && pb.lq >= 1 && pb.lk >= 1 && pb.d >= 1 && isfinite(pb.heads)
                && isfinite(pb.lq) && isfinite(pb.lk) && isfinite(pb.d));
        else
            FUZZ_CHECK(pb.M >= 1 && pb.N >= 1 && pb.K >= 1 && isfinite(pb.M) && isfinite(pb.N)
                && isfinite(pb.K));
    } else {
        FUZZ_CHECK(err[0] != '\0');
    }
    check_message(err);
    uint64_t v;
    double d;
    comet_util_parse_u64(buf, &v);
    if (comet_util_parse_double(buf, &d) == 0)
        FUZZ_CHECK(isfinite(d));
    comet_model_op mop;
    comet_model_op_parse(buf, &mop);
    /* physical quantities ("25 GB/s", "1.4GHz") of every kind, and the
     * what-if parameters that take them */
    for (int u = COMET_UNIT_BYTES; u <= COMET_UNIT_USD; u++) {
        double q;
        if (comet_util_parse_quantity(buf, (comet_util_unit)u, (int)(size & 1), &q) == 0)
            FUZZ_CHECK(isfinite(q) && q >= 0);
    }
    for (int i = 0; i < comet_model_param_count(); i++) {
        double q;
        if (comet_model_param_parse(comet_model_param_name(i), buf, &q) == 0)
            FUZZ_CHECK(isfinite(q) && q >= 0);
    }
    return 0;
}
#elif defined(FUZZ_MAPPING)
/* Mapping files (predict --mapping FILE): identity, splits, tiles. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static comet_model_hw hw;
    static int have_hw;
    char err[COMET_ERRLEN] = "";
    if (!have_hw) {
        memset(&hw, 0, sizeof hw);
        have_hw = comet_model_hw_load("edge", &hw, err, sizeof err) == 0 ? 1 : -1;
    }
    const char *path = scratch_file(data, size, ".json");
    if (!path)
        return 0;
    comet_model_mapping mp;
    err[0] = '\0';
    if (comet_model_mapping_load_for(path, "gemm_softmax", "edge", &mp, err, sizeof err) == 0) {
        FUZZ_CHECK(mp.cs_m >= 1 && mp.cs_n >= 1 && mp.cs_k >= 1 && mp.ks_m >= 1 && mp.ks_n >= 1);
        FUZZ_CHECK(mp.tile_m >= 1 && mp.tile_k >= 1 && isfinite(mp.tile_m) && isfinite(mp.tile_k));
        if (have_hw > 0) {
            comet_model_problem pb;
            memset(&pb, 0, sizeof pb);
            pb.op = COMET_MODEL_GEMM_SOFTMAX;
            pb.M = pb.N = pb.K = 64;
            err[0] = '\0';
            if (comet_model_mapping_check(&hw, &pb, &mp, err, sizeof err) == 0) {
                comet_model_result r;
                comet_model_eval(&hw, &pb, &mp, &r);
                FUZZ_CHECK(!r.valid || (r.cycles > 0 && isfinite(r.cycles)));
            } else {
                FUZZ_CHECK(err[0] != '\0');
            }
        }
    } else {
        FUZZ_CHECK(err[0] != '\0');
    }
    check_message(err);
    unlink(path);
    return 0;
}
#elif defined(FUZZ_WORKLOAD)
/* Workload files (predict --workload FILE): op and shape. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[COMET_ERRLEN] = "";
    const char *path = scratch_file(data, size, ".yaml");
    if (!path)
        return 0;
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    if (comet_model_workload_load(path, &pb, err, sizeof err) == 0) {
        if (pb.op == COMET_MODEL_ATTENTION)
            FUZZ_CHECK(pb.heads >= 1 && pb.lq >= 1 && pb.lk >= 1 && pb.d >= 1);
        else
            FUZZ_CHECK(pb.M >= 1 && pb.N >= 1 && pb.K >= 1);
    } else {
        FUZZ_CHECK(err[0] != '\0');
    }
    check_message(err);
    unlink(path);
    return 0;
}
#elif defined(FUZZ_SHAPESET)
/* Bench shape-set (workload) files, through bench's public header. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[COMET_ERRLEN] = "";
    size_t nops = 0, nsweeps = 0;
    const char *path = scratch_file(data, size, ".yaml");
    if (!path)
        return 0;
    if (comet_bench_shapeset_check(path, &nops, &nsweeps, err, sizeof err) == 0) {
        FUZZ_CHECK(nops <= 8 && nsweeps <= 16);
    } else {
        FUZZ_CHECK(err[0] != '\0');
    }
    check_message(err);
    unlink(path);
    return 0;
}
#elif defined(FUZZ_OVERRIDES)
/* Probe cache-override files ("L2=512K" lines). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[COMET_ERRLEN] = "";
    comet_probe_opts o;
    const char *path = scratch_file(data, size, ".txt");
    if (!path)
        return 0;
    memset(&o, 0, sizeof o);
    if (comet_probe_read_overrides(path, &o, err, sizeof err) != 0)
        FUZZ_CHECK(err[0] != '\0');
    check_message(err);
    unlink(path);
    return 0;
}
#elif defined(FUZZ_LLM)
/* Transformer workload files for the system model: a workload that loads is
 * costed on a small system (an 8-chip ring of SN10s), and every feasible
 * result is at or above its bound with finite parts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[COMET_ERRLEN] = "";
    static comet_system sys;
    static int have;
    comet_system_llm m;
    if (!have) {
        comet_model_hw hw;
        if (comet_model_hw_load("sn10x8-ring", &hw, err, sizeof err) != 0)
            abort();
        if (comet_system_from_hw(&hw, COMET_MODEL_BF16, 0, &sys, err, sizeof err) != 0)
            abort();
        comet_model_hw_free(&hw);
        have = 1;
    }
    if (comet_system_llm_parse("fuzz.yaml", (const char *)data, size, &m, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != '\0');
        check_message(err);
        return 0;
    }
    FUZZ_CHECK(m.hidden >= 1 && m.heads >= 1 && m.layers >= 1 && m.heads % m.kv_heads == 0);
    /* bounded work: small models only (the parser allows any size) */
    if ((double)m.layers * m.hidden > 1e6 || m.global_batch > 64 || m.seq > 8192)
        return 0;
    comet_system_opts o
        = { .phase = COMET_SYSTEM_TRAIN, .recompute = -1, .seq_parallel = -1, .exec = -1, .tp = 1 };
    comet_system_result best;
    comet_system_space sp;
    if (comet_system_explore(&sys, &m, &o, 1, &best, &sp) == 1) {
        FUZZ_CHECK(best.feasible && isfinite(best.step_s) && best.step_s > 0);
        FUZZ_CHECK(best.step_s >= best.bound_s * (1 - 1e-9));
    }
    return 0;
}
#elif defined(FUZZ_CUTS)
/* Partition assignments (--cuts, --tile): a list that parses is costed on a
 * small layer (an 8-chip ring of SN10s, a spatial chip); a refusal is one
 * line, a result is at or above its bound. The first byte picks the pass
 * and the tile; the rest is the list. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[COMET_ERRLEN] = "", spec[1024];
    static comet_system sys;
    static comet_system_llm m;
    static int have;
    if (!have) {
        comet_model_hw hw;
        static const char w[] = "schema: comet.llm.v1\nname: t\nhidden: 256\nheads: 4\n"
                                "head_dim: 64\nffn: 1024\nlayers: 8\nseq: 256\nvocab: 1024\n"
                                "global_batch: 8\ndtype: bf16\n";
        if (comet_model_hw_load("sn10x8-ring", &hw, err, sizeof err) != 0
            || comet_system_from_hw(&hw, COMET_MODEL_BF16, 0, &sys, err, sizeof err) != 0
            || comet_system_llm_parse("t.yaml", w, sizeof w - 1, &m, err, sizeof err) != 0)
            abort();
        comet_model_hw_free(&hw);
        have = 1;
    }
    if (size < 1 || size > sizeof spec)
        return 0;
    memcpy(spec, data + 1, size - 1);
    spec[size - 1] = 0;
    if (comet_system_cuts_check(spec, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != '\0');
        check_message(err);
        return 0;
    }
    comet_system_opts o = { .phase = data[0] & 1 ? COMET_SYSTEM_TRAIN : COMET_SYSTEM_FORWARD,
        .recompute = -1,
        .seq_parallel = 0,
        .exec = COMET_SYSTEM_EXEC_DATAFLOW,
        .tile = (data[0] >> 1) & 63 };
    o.cuts[data[0] & 1 && data[0] & 128 ? 1 : 0] = spec;
    comet_system_config c = { .tp = 8,
        .pp = 1,
        .dp = 1,
        .interleave = 1,
        .microbatch = 1,
        .exec = COMET_SYSTEM_EXEC_DATAFLOW,
        .order = { 0, 1, 2 } };
    comet_system_result r;
    FUZZ_CHECK(comet_system_eval(&sys, &m, &o, &c, &r) == 0);
    if (r.feasible) {
        FUZZ_CHECK(isfinite(r.step_s) && r.step_s > 0 && r.step_s >= r.bound_s * (1 - 1e-9));
    } else {
        FUZZ_CHECK(r.reason[0] != '\0');
        check_message(r.reason);
    }
    return 0;
}
#else
#error "define one FUZZ_<TARGET>"
#endif

#ifdef FUZZ_REPLAY
#include <dirent.h>
/* Replays every file of the corpus directories given on the command line
 * (a property failure aborts, so ctest names the input printed before). */
int main(int argc, char **argv)
{
    int files = 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        struct dirent *e;
        if (!d) {
            fprintf(stderr, "fuzz replay: cannot open %s\n", argv[a]);
            return 1;
        }
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096], *data = NULL;
            size_t len = 0;
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            if (comet_util_read_file(path, &data, &len, NULL, 0) == 0) {
                printf("%s\n", path);
                LLVMFuzzerTestOneInput((const uint8_t *)data, len);
                free(data);
                files++;
            }
        }
        closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return files > 0 ? 0 : 1;
}
#endif
