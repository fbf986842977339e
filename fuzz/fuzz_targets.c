/* libFuzzer targets for every parser comet has. Built twice: with clang and
 * -fsanitize=fuzzer (COMET_FUZZ=ON, scripts/fuzz.sh), and as plain replay
 * drivers that ctest runs over the committed corpus (fuzz/corpus/<target>). */
#include "comet_bench.h"
#include "comet_model.h"
#include "comet_probe.h"
#include "comet_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#if defined(FUZZ_DOC)
/* YAML/JSON document tree: the base of every config parser. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    comet_util_doc *d = NULL;
    char err[COMET_ERRLEN];
    if (comet_util_doc_parse("fuzz.yaml", (const char *)data, size, &d, err, sizeof err) == 0) {
        double v;
        const char *s;
        comet_util_doc_number(d, "a", NULL, -1e9, 1e9, &v, err, sizeof err);
        comet_util_doc_string(d, "b", NULL, &s, err, sizeof err);
        comet_util_doc_free(d);
    }
    return 0;
}
#elif defined(FUZZ_HW)
/* Hardware descriptions and profiles. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    comet_model_hw hw;
    char err[COMET_ERRLEN];
    if (comet_model_hw_parse("fuzz.yaml", (const char *)data, size, &hw, err, sizeof err) == 0) {
        /* a description that loads must evaluate without faults */
        comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 64, .N = 64, .K = 64 };
        comet_model_search *s = calloc(1, sizeof *s);
        if (s && hw.clusters <= 64 && hw.cores <= 64)
            comet_model_explore(&hw, &pb, s);
        free(s);
        json_t *j = comet_model_hw_to_json(&hw);
        json_decref(j);
        comet_model_hw_free(&hw);
    }
    return 0;
}
#elif defined(FUZZ_RECORD)
/* One results line (JSON Lines reader's per-line check). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    char err[COMET_ERRLEN];
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (j) {
        comet_bench_record_check(j, err, sizeof err);
        comet_probe_machine m;
        comet_probe_from_json(json_object_get(j, "machine"), &m, err, sizeof err);
        json_decref(j);
    }
    return 0;
}
#elif defined(FUZZ_SHAPE)
/* CLI shape arguments and sizes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char buf[1024], err[COMET_ERRLEN];
    if (size >= sizeof buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = size % 2 ? COMET_MODEL_ATTENTION : COMET_MODEL_GEMM_SOFTMAX;
    comet_model_problem_parse(buf, &pb, err, sizeof err);
    uint64_t v;
    double d;
    comet_util_parse_u64(buf, &v);
    comet_util_parse_double(buf, &d);
    return 0;
}
#endif

#ifdef FUZZ_REPLAY
#include <dirent.h>
#include <stdio.h>
/* Replays every file of the corpus directories given on the command line. */
int main(int argc, char **argv)
{
    int files = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096], *data = NULL;
            size_t len = 0;
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            if (comet_util_read_file(path, &data, &len, NULL, 0) == 0) {
                LLVMFuzzerTestOneInput((const uint8_t *)data, len);
                free(data);
                files++;
            }
        }
        if (d)
            closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return files > 0 ? 0 : 1;
}
#endif
