/* Hardware files and shapes: counts are whole numbers, a file of any name
 * loads, a dimension given twice is an error (each with a message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *preset_text(void)
{
    char path[1024], *t = NULL;
    size_t len = 0;
    assert_int_equal(comet_model_preset_path("edge", path, sizeof path), 0);
    assert_int_equal(comet_util_read_file(path, &t, &len, NULL, 0), 0);
    return t;
}

static void test_counts_whole(void **s)
{
    (void)s;
    char *t = preset_text(), *at = strstr(t, "count: 4");
    assert_non_null(at);
    char *bad = malloc(strlen(t) + 8);
    assert_non_null(bad);
    snprintf(bad, strlen(t) + 8, "%.*scount: 4.5%s", (int)(at - t), t, at + strlen("count: 4"));
    comet_model_hw hw;
    char err[COMET_ERRLEN] = "";
    memset(&hw, 0, sizeof hw);
    assert_int_equal(
        comet_model_hw_parse("bad.yaml", bad, strlen(bad), &hw, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "whole number"));
    assert_non_null(strstr(err, "bad.yaml:"));
    free(bad);
    free(t);
}

static void test_any_file_name(void **s)
{
    (void)s;
    char *t = preset_text();
    char path[] = "/tmp/comet_hw_XXXXXX";
    int fd = mkstemp(path); /* no extension at all */
    assert_true(fd >= 0);
    assert_true(write(fd, t, strlen(t)) == (ssize_t)strlen(t));
    close(fd);
    comet_model_hw hw;
    char err[COMET_ERRLEN] = "";
    memset(&hw, 0, sizeof hw);
    assert_int_equal(comet_model_hw_load(path, &hw, err, sizeof err), 0);
    assert_string_equal(hw.name, "edge");
    comet_model_hw_free(&hw);
    unlink(path);
    free(t);
}

static void test_shape_twice(void **s)
{
    (void)s;
    comet_model_problem pb;
    char err[COMET_ERRLEN] = "";
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    assert_int_equal(comet_model_problem_parse("M=64,M=32,N=8,K=8", &pb, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "'M' given twice"));
    assert_int_equal(comet_model_problem_parse("M=64,N=8,K=8", &pb, err, sizeof err), 0);
}

/* A mapping file for another op or hardware is refused; one that cannot
 * run (heads split on a GEMM op, more clusters than there are) says why. */
static void test_mapping_identity(void **s)
{
    (void)s;
    char path[] = "/tmp/comet_map_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{\"hw\": \"edge\", \"op\": \"attention\", \"best_fused\": {\"mapping\": "
                       "{\"fused\": true, \"binding\": \"pipelined\", \"cluster_split\": "
                       "{\"H\": 2, \"M\": 1, \"N\": 1, \"K\": 1}, \"core_split\": {\"M\": 4, "
                       "\"N\": 1}, \"tile_m\": 64, \"tile_k\": 64}}}";
    assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    comet_model_mapping mp;
    char err[COMET_ERRLEN] = "";
    assert_int_equal(
        comet_model_mapping_load_for(path, "gemm_softmax", "edge", &mp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "a mapping for attention"));
    assert_int_equal(
        comet_model_mapping_load_for(path, "attention", "cloud", &mp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "hardware 'edge'"));
    assert_int_equal(
        comet_model_mapping_load_for(path, "attention", "edge", &mp, err, sizeof err), 0);
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    assert_int_equal(comet_model_hw_load("edge", &hw, err, sizeof err), 0);
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_ATTENTION;
    pb.heads = 8, pb.lq = pb.lk = 256, pb.d = 64;
    assert_int_equal(comet_model_mapping_check(&hw, &pb, &mp, err, sizeof err), 0);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    pb.M = pb.N = pb.K = 64;
    assert_int_equal(comet_model_mapping_check(&hw, &pb, &mp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "splits heads"));
    pb.op = COMET_MODEL_ATTENTION;
    mp.cs_h = 1, mp.cs_m = 8; /* 8 clusters on a 4-cluster chip */
    assert_int_equal(comet_model_mapping_check(&hw, &pb, &mp, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "use 8 clusters"));
    comet_model_hw_free(&hw);
    unlink(path);
}

/* A calibrated fit applies only to the link it was measured on. */
static void test_links_per_transport(void **s)
{
    (void)s;
    char path[1200], err[COMET_ERRLEN] = "";
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    json_t *p = json_load_file(path, 0, NULL);
    assert_non_null(p);
    json_t *co = json_object_get(
        json_object_get(json_object_get(p, "calibration"), "fits"), "collectives");
    assert_true(json_array_size(co) > 0);
    /* the same fits again, measured over a TCP link 100x slower to start */
    size_t n0 = json_array_size(co);
    for (size_t i = 0; i < n0; i++) {
        json_t *f = json_deep_copy(json_array_get(co, i));
        json_object_set_new(f, "link", json_string("tcp:dl0"));
        size_t j;
        json_t *seg;
        json_array_foreach(json_object_get(f, "segments"), j, seg)
        {
            double a = json_number_value(json_object_get(seg, "alpha_us"));
            json_object_set_new(seg, "alpha_us", json_real(100 * a));
        }
        json_array_append_new(co, f);
    }
    char *text = json_dumps(p, 0);
    json_decref(p);
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    assert_int_equal(comet_model_hw_parse("p.json", text, strlen(text), &hw, err, sizeof err), 0);
    free(text);
    comet_model_links shm, tcp, none;
    assert_int_equal(comet_model_links_for_transport(&hw, "shm", &shm), 0);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:dl0", &tcp), 0);
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:other", &none), -ENOENT);
    assert_int_equal(shm.nfits, tcp.nfits);
    for (int i = 0; i < shm.nfits; i++) {
        assert_string_equal(shm.fits[i].transport, "shm");
        assert_string_equal(tcp.fits[i].transport, "tcp:dl0");
        assert_true(
            fabs(tcp.fits[i].alpha_s - 100 * shm.fits[i].alpha_s) <= 1e-9 * tcp.fits[i].alpha_s);
    }
    /* the machine's own links are shared memory's */
    assert_int_equal(hw.links.nfits, shm.nfits);
    assert_true(hw.links.fits[0].alpha_s == shm.fits[0].alpha_s);
    comet_model_hw_free(&hw);
}

/* A link's point-to-point fit in pieces (calibrate splits it where the
 * ping-pong steps: eager -> rendezvous over TCP, a tbf bucket): a message
 * costs the piece its size falls in, over generated fits; a profile's
 * pieces are read per link. */
static void test_links_p2p_pieces(void **s)
{
    (void)s;
    unsigned long long st = 0x9e3779b97f4a7c15ull;
#define RND() ((st = st * 6364136223846793005ull + 1442695040888963407ull) >> 11) * 0x1.0p-53
    for (int t = 0; t < 4000; t++) {
        comet_model_links l;
        memset(&l, 0, sizeof l);
        l.p2p_nseg = 1 + (int)(RND() * COMET_MODEL_MAX_P2P_SEGS);
        double from = 0;
        for (int k = 0; k < l.p2p_nseg; k++) {
            l.p2p_seg_from_bytes[k] = from;
            l.p2p_seg_alpha_s[k] = 1e-6 * (1 + 1000 * RND());
            l.p2p_seg_beta_s[k] = 1e-10 * (1 + 100 * RND());
            from += 1 + 1e6 * RND();
        }
        l.p2p_alpha_s = l.p2p_seg_alpha_s[0];
        l.p2p_beta_s = l.p2p_seg_beta_s[0];
        const double b = 4e6 * RND();
        int k = 0;
        for (int j = 0; j < l.p2p_nseg; j++)
            if (l.p2p_seg_from_bytes[j] <= b)
                k = j;
        const double want = l.p2p_seg_alpha_s[k] + b * l.p2p_seg_beta_s[k];
        assert_true(fabs(comet_model_links_p2p_s(&l, b) - want) <= 1e-12 * want);
        /* without pieces: the Hockney pair */
        l.p2p_nseg = 0;
        assert_true(fabs(comet_model_links_p2p_s(&l, b) - (l.p2p_alpha_s + b * l.p2p_beta_s))
            <= 1e-12 * want);
    }
#undef RND
    comet_model_links none;
    memset(&none, 0, sizeof none);
    assert_true(comet_model_links_p2p_s(&none, 1e6) == 0);

    /* a profile with a TCP link whose ping-pong steps at 64 KiB by 900 us
     * (a rendezvous handshake over 200 us each way) */
    char path[1200], err[COMET_ERRLEN] = "";
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    json_t *p = json_load_file(path, 0, NULL);
    assert_non_null(p);
    json_t *p2p
        = json_object_get(json_object_get(json_object_get(p, "calibration"), "fits"), "p2p");
    json_array_append_new(p2p,
        json_pack("{s:s,s:s,s:[{s:f,s:f,s:f},{s:f,s:f,s:f}]}", "op", "pingpong", "link", "tcp:dl0",
            "segments", "from_bytes", 0.0, "alpha_us", 250.0, "beta_ns_per_byte", 10.0,
            "from_bytes", 65536.0, "alpha_us", 1150.0, "beta_ns_per_byte", 11.5));
    /* a second link whose first piece is flat (tbf: the smallest messages
     * cost the latency alone): it keeps its own pieces, never another's */
    json_array_append_new(p2p,
        json_pack("{s:s,s:s,s:[{s:f,s:f,s:f},{s:f,s:f,s:f}]}", "op", "pingpong", "link", "tcp:tb0",
            "segments", "from_bytes", 0.0, "alpha_us", 9.5, "beta_ns_per_byte", 0.0, "from_bytes",
            1024.0, "alpha_us", 0.0, "beta_ns_per_byte", 40.0));
    char *text = json_dumps(p, 0);
    json_decref(p);
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    assert_int_equal(comet_model_hw_parse("p.json", text, strlen(text), &hw, err, sizeof err), 0);
    free(text);
    comet_model_links tb;
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:tb0", &tb), 0);
    assert_int_equal(tb.p2p_nseg, 2);
    assert_true(tb.p2p_beta_s == 40e-9);
    assert_true(fabs(comet_model_links_p2p_s(&tb, 512) - 9.5e-6) < 1e-15);
    assert_true(fabs(comet_model_links_p2p_s(&tb, 131072) - 131072 * 40e-9) < 1e-12);
    comet_model_links tcp;
    assert_int_equal(comet_model_links_for_transport(&hw, "tcp:dl0", &tcp), 0);
    assert_int_equal(tcp.p2p_nseg, 2);
    assert_true(fabs(comet_model_links_p2p_s(&tcp, 4096) - (250e-6 + 4096 * 10e-9)) < 1e-12);
    assert_true(fabs(comet_model_links_p2p_s(&tcp, 131072) - (1150e-6 + 131072 * 11.5e-9)) < 1e-12);
    /* the shared-memory fit is its own, not the TCP link's */
    comet_model_links shm;
    assert_int_equal(comet_model_links_for_transport(&hw, "shm", &shm), 0);
    assert_true(shm.p2p_seg_alpha_s[0] < 100e-6);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_whole),
        cmocka_unit_test(test_any_file_name),
        cmocka_unit_test(test_shape_twice),
        cmocka_unit_test(test_mapping_identity),
        cmocka_unit_test(test_links_per_transport),
        cmocka_unit_test(test_links_p2p_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
