/* The reader of COMET's four YAML files: COMET's edge and cloud
 * architectures, its GEMM-Softmax problem and fused mapping (restated in
 * tests/fixtures/cometio from d-matrix-ai/comet 917af0d) read with every
 * symbol of the constants substituted; detection by content; malformed and
 * inexpressible inputs refused naming file:line and the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_cometio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fx[1024];

static const char *fixture(const char *name)
{
    static char buf[4][1200];
    static int k;
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(buf[k & 3], sizeof buf[0], "%s/tests/fixtures/cometio/%s", src ? src : ".", name);
    return buf[k++ & 3];
}

static int load(
    const char *arch, const char *consts, comet_cometio_inputs *in, char *err, size_t errlen)
{
    return comet_cometio_load(fixture(arch), fixture("gemm-softmax-problem.yaml"),
        fixture("gemm-softmax-mapping.yaml"), fixture(consts), in, err, errlen);
}

static void test_detect(void **state)
{
    (void)state;
    assert_int_equal(comet_cometio_detect(fixture("edge-arch.yaml")), COMET_COMETIO_ARCH);
    assert_int_equal(
        comet_cometio_detect(fixture("gemm-softmax-problem.yaml")), COMET_COMETIO_PROBLEM);
    assert_int_equal(
        comet_cometio_detect(fixture("gemm-softmax-mapping.yaml")), COMET_COMETIO_MAPPING);
    assert_int_equal(comet_cometio_detect(fixture("edge_c1-const.yaml")), COMET_COMETIO_CONSTANTS);
    char path[1200];
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/configs/hw/edge.yaml", src ? src : ".");
    assert_int_equal(comet_cometio_detect(path), COMET_COMETIO_NONE);
    assert_int_equal(comet_cometio_detect("/nonexistent/x.yaml"), COMET_COMETIO_NONE);
}

static void test_edge(void **state)
{
    (void)state;
    comet_cometio_inputs in;
    char err[512] = "";
    int rc = load("edge-arch.yaml", "edge_c1-const.yaml", &in, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    const comet_cometio_arch *a = &in.arch;
    assert_int_equal(a->n_compute, 2);
    assert_int_equal(a->n_memory, 5);
    /* DRAM, GB, IB, GEMMEngine (one level, three edges), WB, OB, SE */
    assert_int_equal(a->n_level, 7);
    assert_int_equal(a->n_link, 8);
    int gb = comet_cometio_level_find(a, "GB"), ib = comet_cometio_level_find(a, "IB");
    int ge = comet_cometio_level_find(a, "GEMMEngine"), wb = comet_cometio_level_find(a, "WB");
    int ob = comet_cometio_level_find(a, "OB"), se = comet_cometio_level_find(a, "SE");
    assert_true(gb > 0 && ib > 0 && ge > 0 && wb > 0 && ob > 0 && se > 0);
    assert_int_equal(a->level[gb].instances, 4);
    assert_true(a->level[ge].is_compute);
    const comet_cometio_memory *g = &a->memory[a->level[gb].mem];
    assert_true(g->width == 2048 && g->depth == 1024 && g->child_read_pj == 474);
    /* DRAM's generic bw sets all six bandwidths (arch_spec.cpp) */
    const comet_cometio_memory *d = &a->memory[a->level[0].mem];
    assert_true(d->is_dram && d->child_read_bw == 25 && d->parent_write_bw == 25);
    /* the WB -> GEMMEngine edge has its own network (512 B/cycle) */
    assert_true(comet_cometio_net_of(a, wb, ge)->bw == 512);
    assert_true(comet_cometio_net_of(a, ib, ge)->bw == 64);
    const comet_cometio_net *n = comet_cometio_net_of(a, 0, gb);
    assert_true(n && n->mesh_x == 2 && n->queuing_delay == 2 && n->channel_width == 512
        && n->broadcast && !n->reduction);
    /* GB's link network (collectives) */
    assert_true(comet_cometio_net_of(a, gb, gb) && comet_cometio_net_of(a, gb, gb)->bw == 64);
    assert_null(comet_cometio_net_of(a, ib, ib));
    assert_non_null(comet_cometio_net_of(a, ob, se));
    /* problem: six ops, M N K substituted */
    const comet_cometio_problem *pb = &in.problem;
    assert_int_equal(pb->n_op, 6);
    assert_int_equal(pb->n_dim, 3);
    assert_true(pb->size[0] == 256 && pb->size[1] == 256 && pb->size[2] == 128);
    const comet_cometio_op *sub = comet_cometio_find_op(pb, "SUB");
    assert_non_null(sub);
    assert_int_equal(sub->n_ins, 2);
    assert_string_equal(sub->out, "E");
    assert_int_equal(sub->tensor[2].rw, 1);
    assert_int_equal(sub->tensor[1].n_rank, 1);
    /* mapping: DRAM temporal -> DRAM spatial -> GB temporal with 9 kids */
    const comet_cometio_node *r = in.mapping.root;
    assert_int_equal(r->type, COMET_COMETIO_TILE);
    assert_false(r->spatial);
    assert_int_equal(r->n_move, 3);
    assert_int_equal(r->move[2].wb_output, 1);
    assert_int_equal(r->perm[0], comet_cometio_dim(pb, "K"));
    const comet_cometio_node *sp = r->kid[0];
    assert_true(sp->spatial && sp->n_rows == 2);
    assert_true(sp->move[0].factor[0][1] == 2 && sp->move[0].factor[1][1] == 2);
    const comet_cometio_node *gt = sp->kid[0];
    assert_int_equal(gt->n_move, 7);
    assert_int_equal(gt->n_kid, 11);
    assert_true(gt->move[0].factor[0][0] == 4); /* M_A_GB_temporal */
    const comet_cometio_node *c1 = gt->kid[5];
    assert_int_equal(c1->type, COMET_COMETIO_COLL);
    assert_int_equal(c1->coll, COMET_COMETIO_ALLREDUCE);
    assert_int_equal(c1->red_op, COMET_COMETIO_MAX);
    assert_int_equal(c1->coll_precision, 16);
    assert_string_equal(c1->in_tensor, "D");
    const comet_cometio_node *op = gt->kid[1]->kid[0]->kid[0];
    assert_int_equal(op->type, COMET_COMETIO_OP);
    assert_int_equal(op->op_type, COMET_COMETIO_GEMM);
    assert_true(op->prim[0] == 16 && op->prim[1] == 4 && op->prim[2] == 128);
    assert_int_equal(op->red_dim, 0); /* red_dim: M */
    assert_true(op->red_factor == 16);
    comet_cometio_free(&in);
}

static void test_cloud(void **state)
{
    (void)state;
    comet_cometio_inputs in;
    char err[512] = "";
    assert_int_equal(load("cloud-arch.yaml", "cloud_decode-const.yaml", &in, err, sizeof err), 0);
    int gb = comet_cometio_level_find(&in.arch, "GB");
    assert_int_equal(in.arch.level[gb].instances, 16);
    assert_true(in.problem.size[0] == 1 && in.problem.size[1] == 4096);
    comet_cometio_free(&in);
}

/* writes text to a temporary file and returns its path */
static const char *tmp_yaml(const char *text)
{
    snprintf(fx, sizeof fx, "/tmp/comet-cometio-XXXXXX.yaml");
    int fd = mkstemps(fx, 5);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return fx;
}

/* the edge fixture with one line replaced */
static void arch_refused(const char *from, const char *to, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = fopen(fixture("edge-arch.yaml"), "r");
    assert_non_null(fp);
    FILE *mem = open_memstream(&text, &len);
    char line[1024];
    int hit = 0;
    while (fgets(line, sizeof line, fp)) {
        char *p = strstr(line, from);
        if (p && !hit) {
            hit = 1;
            fwrite(line, 1, (size_t)(p - line), mem);
            fputs(to, mem);
            fputs(p + strlen(from), mem);
        } else {
            fputs(line, mem);
        }
    }
    fclose(fp);
    fclose(mem);
    assert_true(hit);
    const char *path = tmp_yaml(text);
    free(text);
    comet_cometio_inputs in;
    char err[512] = "";
    int rc = comet_cometio_load(path, fixture("gemm-softmax-problem.yaml"),
        fixture("gemm-softmax-mapping.yaml"), fixture("edge_c1-const.yaml"), &in, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, -22);
    if (!strstr(err, want) || !strstr(err, ".yaml:"))
        fail_msg("error '%s' lacks '%s' or file:line", err, want);
}

/* a key COMET does not read is listed (COMET ignores it), not refused */
static void test_arch_ignored(void **state)
{
    (void)state;
    comet_cometio_inputs in;
    char err[512] = "";
    assert_int_equal(load("edge-arch.yaml", "edge_c1-const.yaml", &in, err, sizeof err), 0);
    assert_int_equal(in.arch.n_ignored, 0);
    comet_cometio_free(&in);
}

static void test_arch_errors(void **state)
{
    (void)state;
    arch_refused("class: mac", "class: tensor", "class");
    arch_refused("depth: 1024", "depth: lots", "depth");
    arch_refused("type: GBuffer", "type: GlobalBuffer", "type");
    arch_refused(
        "hop_latency: 5, bw: 64, queuing_delay: 2", "hop_latency: 5, queuing_delay: 2", "bw");
    arch_refused("connection_type: MeshNetwork, hop_latency: 5, bw: 64, queuing_delay: 2",
        "connection_type: Torus, hop_latency: 5, bw: 64, queuing_delay: 2", "connection_type");
}

static void mapping_refused(const char *from, const char *to, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = fopen(fixture("gemm-softmax-mapping.yaml"), "r");
    assert_non_null(fp);
    FILE *mem = open_memstream(&text, &len);
    char line[2048];
    int hit = 0;
    while (fgets(line, sizeof line, fp)) {
        char *p = strstr(line, from);
        if (p && !hit) {
            hit = 1;
            fwrite(line, 1, (size_t)(p - line), mem);
            fputs(to, mem);
            fputs(p + strlen(from), mem);
        } else {
            fputs(line, mem);
        }
    }
    fclose(fp);
    fclose(mem);
    assert_true(hit);
    const char *path = tmp_yaml(text);
    free(text);
    comet_cometio_inputs in;
    char err[512] = "";
    int rc = comet_cometio_load(fixture("edge-arch.yaml"), fixture("gemm-softmax-problem.yaml"),
        path, fixture("edge_c1-const.yaml"), &in, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, -22);
    if (!strstr(err, want) || !strstr(err, "comet-cometio-"))
        fail_msg("error '%s' lacks '%s' or the file", err, want);
}

static void test_mapping_errors(void **state)
{
    (void)state;
    mapping_refused("target: [IB, WB, OB]", "target: [IB, WB, XB]", "'XB' is not a level");
    mapping_refused("M=[1,1,1] N=[N_GB_spatial_X,N_GB_spatial_X,N_GB_spatial_X]",
        "M=[1,1] N=[N_GB_spatial_X,N_GB_spatial_X,N_GB_spatial_X]", "factors");
    mapping_refused("M=[M_SE,M_SE] N=[N_SE,N_SE]", "M=[M_SE,M_SE] N=[N_XX,N_SE]", "N_XX");
    mapping_refused("permutation: MKN", "permutation: MKK", "permutation");
    mapping_refused("type: allreduce", "type: reducescatter", "reducescatter");
    mapping_refused("type: rowmax", "type: layernorm", "layernorm");
    mapping_refused("tag: [GEMM, GEMM, GEMM]", "tag: [GEMM, GEMM, SOFTMAX]", "SOFTMAX");
    mapping_refused("binding: sequential", "binding: overlapped", "binding");
    mapping_refused("precision: [16]", "precision: [16, 16]", "precision");
    /* not expressible: a third factor row at a spatial level */
    mapping_refused(
        "factors: [\"M=[1] N=[N_GB_spatial_X] K=[1]\", \"M=[1] N=[N_GB_spatial_Y] K=[1]\"]",
        "factors: [\"M=[1] N=[N_GB_spatial_X] K=[1]\", \"M=[1] N=[N_GB_spatial_Y] K=[1]\", \"M=[1] "
        "N=[1] K=[1]\"]",
        "not expressible");
}

static void test_wrong_kind(void **state)
{
    (void)state;
    comet_cometio_inputs in;
    char err[512] = "";
    /* problem and mapping swapped */
    int rc = comet_cometio_load(fixture("edge-arch.yaml"), fixture("gemm-softmax-mapping.yaml"),
        fixture("gemm-softmax-problem.yaml"), fixture("edge_c1-const.yaml"), &in, err, sizeof err);
    assert_int_equal(rc, -22);
    assert_non_null(strstr(err, "not a COMET problem file"));
    /* a dimension size neither a number nor a constant */
    const char *p = tmp_yaml("const: {M: 256, N: 256}\n");
    char path[64];
    snprintf(path, sizeof path, "%s", p);
    rc = comet_cometio_load(fixture("edge-arch.yaml"), fixture("gemm-softmax-problem.yaml"),
        fixture("gemm-softmax-mapping.yaml"), path, &in, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, -22);
    assert_non_null(strstr(err, "gemm-softmax-problem.yaml:"));
    assert_non_null(strstr(err, "'K'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_edge),
        cmocka_unit_test(test_cloud),
        cmocka_unit_test(test_arch_ignored),
        cmocka_unit_test(test_arch_errors),
        cmocka_unit_test(test_mapping_errors),
        cmocka_unit_test(test_wrong_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
