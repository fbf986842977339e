/* Probe: topology reader on synthetic hwloc topologies, overrides, JSON round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_probe.h"
#include "comet_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const comet_probe_cache *cache(const comet_probe_machine *m, int level)
{
    for (size_t i = 0; i < m->ncaches; i++)
        if (m->caches[i].level == level)
            return &m->caches[i];
    return NULL;
}

static void probe_synth(const char *desc, comet_probe_machine *m)
{
    comet_probe_opts o;
    char err[COMET_ERRLEN] = "";
    memset(&o, 0, sizeof o);
    o.synthetic = desc;
    o.skip_papi = 1;
    o.skip_mpi = 1;
    int rc = comet_probe_run(&o, m, err, sizeof err);
    if (rc)
        fail_msg("probe failed: %s", err);
}

/* Two packages, an L3 shared per package, private L2/L1, 2-way SMT. */
static void test_two_packages_smt(void **state)
{
    (void)state;
    comet_probe_machine m;
    probe_synth("pack:2 l3:1(size=16MB) l2:4(size=1MB) l1d:1(size=48KB) core:1 pu:2", &m);
    assert_int_equal(m.packages, 2);
    assert_int_equal(m.cores, 8);
    assert_int_equal(m.pus, 16);
    const comet_probe_cache *l3 = cache(&m, 3), *l2 = cache(&m, 2), *l1 = cache(&m, 1);
    assert_non_null(l3);
    assert_non_null(l2);
    assert_non_null(l1);
    assert_int_equal(l3->count, 2);
    assert_int_equal(l3->shared_by, 8); /* 4 cores x 2 PUs */
    assert_int_equal(l3->size, 16u * 1000 * 1000);
    assert_int_equal(l2->count, 8);
    assert_int_equal(l2->shared_by, 2);
    assert_int_equal(l1->shared_by, 2);
    assert_int_equal(comet_probe_llc_size(&m), 16u * 1000 * 1000);
}

/* One package, shared L3 by 2 cores, no SMT (this machine's shape). */
static void test_shared_l3_no_smt(void **state)
{
    (void)state;
    comet_probe_machine m;
    probe_synth("pack:1 l3:1(size=32MB) l2:2(size=512KB) l1d:1(size=32KB) core:1 pu:1", &m);
    assert_int_equal(m.packages, 1);
    assert_int_equal(m.cores, 2);
    assert_int_equal(m.pus, 2);
    assert_int_equal(cache(&m, 3)->shared_by, 2);
    assert_int_equal(cache(&m, 2)->shared_by, 1);
    assert_int_equal(cache(&m, 1)->size, 32000u);
    assert_true(m.id[0] != '\0');
}

static void test_numa(void **state)
{
    (void)state;
    comet_probe_machine m;
    probe_synth("pack:2 numa:2 core:3 pu:1", &m);
    assert_int_equal(m.numa_nodes, 4);
    assert_int_equal(m.cores, 12);
}

static void test_bad_synthetic(void **state)
{
    (void)state;
    comet_probe_opts o;
    comet_probe_machine m;
    char err[COMET_ERRLEN] = "";
    memset(&o, 0, sizeof o);
    o.synthetic = "pack:zero core:banana";
    o.skip_papi = o.skip_mpi = 1;
    assert_int_not_equal(comet_probe_run(&o, &m, err, sizeof err), 0);
    assert_non_null(strstr(err, "synthetic"));
}

static void test_overrides(void **state)
{
    (void)state;
    char path[] = "/tmp/comet-probe-ovXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "# caches\nL2=2M\n  L3 = 64MiB  \n");
    fclose(fp);
    comet_probe_opts o;
    comet_probe_machine m;
    char err[COMET_ERRLEN] = "";
    memset(&o, 0, sizeof o);
    assert_int_equal(comet_probe_read_overrides(path, &o, err, sizeof err), 0);
    o.synthetic = "pack:1 l3:1(size=32MB) l2:2(size=512KB) core:1 pu:1";
    o.skip_papi = o.skip_mpi = 1;
    assert_int_equal(comet_probe_run(&o, &m, err, sizeof err), 0);
    assert_int_equal(cache(&m, 2)->size, 2u << 20);
    assert_true(cache(&m, 2)->overridden);
    assert_int_equal(cache(&m, 3)->size, 64u << 20);

    fp = fopen(path, "w");
    fprintf(fp, "L2=2M\nL9=1K\n");
    fclose(fp);
    assert_int_not_equal(comet_probe_read_overrides(path, &o, err, sizeof err), 0);
    assert_non_null(strstr(err, ":2:")); /* names the line */
    fp = fopen(path, "w");
    fprintf(fp, "L2=-5\n");
    fclose(fp);
    assert_int_not_equal(comet_probe_read_overrides(path, &o, err, sizeof err), 0);
    unlink(path);
    assert_int_not_equal(comet_probe_read_overrides("/nonexistent/caches", &o, err, sizeof err), 0);
}

static void test_json_roundtrip(void **state)
{
    (void)state;
    comet_probe_machine m, back;
    char err[COMET_ERRLEN] = "";
    probe_synth("pack:2 l3:1(size=16MB) l2:4(size=1MB) core:1 pu:2", &m);
    json_t *j = comet_probe_to_json(&m);
    assert_non_null(j);
    assert_int_equal(comet_probe_from_json(j, &back, err, sizeof err), 0);
    assert_string_equal(back.id, m.id);
    assert_int_equal(back.cores, m.cores);
    assert_int_equal(back.ncaches, m.ncaches);
    assert_int_equal(back.caches[0].shared_by, m.caches[0].shared_by);
    assert_true(back.mhz_measured == m.mhz_measured);
    json_decref(j);
    j = json_object();
    assert_int_not_equal(comet_probe_from_json(j, &back, err, sizeof err), 0);
    json_decref(j);
}

/* The real machine: whatever it is, the probe must be self-consistent. */
static void test_real_machine(void **state)
{
    (void)state;
    comet_probe_machine m;
    char err[COMET_ERRLEN] = "";
    assert_int_equal(comet_probe_run(NULL, &m, err, sizeof err), 0);
    assert_true(m.cores >= 1);
    assert_true(m.pus >= m.cores);
    assert_true(m.memory_bytes > 0);
    assert_true(m.ncaches >= 1);
    assert_int_equal(m.nevents, 6);
    for (size_t i = 0; i < m.nevents; i++)
        assert_true(m.events[i].usable || m.events[i].reason[0] != '\0');
#if defined(__x86_64__)
    /* the timed clock: a real core runs between 0.2 and 10 GHz */
    if (!(m.mhz_measured > 200 && m.mhz_measured < 10000))
        fail_msg("measured clock %g MHz", m.mhz_measured);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_packages_smt),
        cmocka_unit_test(test_shared_l3_no_smt),
        cmocka_unit_test(test_numa),
        cmocka_unit_test(test_bad_synthetic),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_json_roundtrip),
        cmocka_unit_test(test_real_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
