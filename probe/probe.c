/* Machine probe: hwloc topology, memory, ISA, BLAS, MPI, compiler, PAPI. */
#include "comet_probe.h"

#include "comet_util.h"

#include <cblas.h>
#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef COMET_HAVE_PAPI
#include <papi.h>
#endif

/* OpenBLAS extensions (declared in its cblas.h, repeated for older headers). */
char *openblas_get_config(void);
int openblas_get_num_threads(void);

static const char *const papi_events[] = { "PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_SP_OPS",
    "PAPI_DP_OPS", "PAPI_L2_TCM", "PAPI_L3_TCM" };

static void copy_str(char *dst, size_t n, const char *src)
{
    /* Truncating copy; snprintf("%s") would warn about truncation. */
    size_t len = src ? strnlen(src, n - 1) : 0;
    if (len)
        memcpy(dst, src, len);
    dst[len] = '\0';
}

static uint64_t meminfo_total(void)
{
    FILE *fp = fopen("/proc/meminfo", "r");
    char line[256];
    uint64_t kb = 0;
    if (!fp)
        return 0;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kb) == 1)
            break;
    fclose(fp);
    return kb * 1024;
}

static void cpuinfo_fill(comet_probe_machine *m)
{
    FILE *fp = fopen("/proc/cpuinfo", "r");
    char line[512];
    if (!fp)
        return;
    while (fgets(line, sizeof line, fp)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *val = colon + 1;
        while (*val == ' ')
            val++;
        val[strcspn(val, "\n")] = '\0';
        if (!strncmp(line, "model name", 10) && !m->cpu_model[0])
            copy_str(m->cpu_model, sizeof m->cpu_model, val);
        else if (!strncmp(line, "cpu MHz", 7) && m->mhz == 0)
            m->mhz = atof(val);
    }
    fclose(fp);
}

double comet_probe_clock_mhz(uint64_t iters)
{
#if defined(__x86_64__)
    uint64_t x = 3;
    if (iters == 0)
        return 0;
    double t0 = comet_util_now();
    for (uint64_t i = 0; i < iters; i++)
        __asm__ volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0" : "+r"(x));
    double dt = comet_util_now() - t0;
    return dt > 0 ? 12.0 * (double)iters / dt / 1e6 : 0;
#else
    (void)iters;
    return 0;
#endif
}

/* The clock a core sustains: about 10 ms of the multiply chain, best of
 * three. A VM's "cpu MHz" is often the base clock: 2600 on a Xeon VM whose
 * cores ran at 3750-4070. */
static double measure_mhz(void)
{
    double best = 0;
    for (int r = 0; r < 3; r++) {
        double f = comet_probe_clock_mhz((uint64_t)1 << 22);
        if (f > best)
            best = f;
    }
    return best;
}

static void probe_papi(comet_probe_machine *m)
{
    size_t ne = sizeof papi_events / sizeof papi_events[0];
    m->nevents = ne;
    for (size_t i = 0; i < ne; i++)
        copy_str(m->events[i].name, sizeof m->events[i].name, papi_events[i]);
#ifdef COMET_HAVE_PAPI
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    snprintf(m->papi_version, sizeof m->papi_version, "%d.%d.%d", PAPI_VERSION_MAJOR(PAPI_VERSION),
        PAPI_VERSION_MINOR(PAPI_VERSION), PAPI_VERSION_REVISION(PAPI_VERSION));
    if (rc != PAPI_VER_CURRENT) {
        snprintf(m->papi_status, sizeof m->papi_status, "PAPI_library_init failed: %s",
            rc > 0 ? "version mismatch" : PAPI_strerror(rc));
        for (size_t i = 0; i < ne; i++)
            copy_str(m->events[i].reason, sizeof m->events[i].reason, m->papi_status);
        return;
    }
    int usable = 0;
    for (size_t i = 0; i < ne; i++) {
        comet_probe_event *e = &m->events[i];
        int set = PAPI_NULL, code = 0;
        const char *step = "PAPI_create_eventset";
        /* A listed preset is not a countable one on VMs: really add and start it. */
        rc = PAPI_create_eventset(&set);
        if (rc == PAPI_OK) {
            step = "PAPI_event_name_to_code";
            rc = PAPI_event_name_to_code((char *)e->name, &code);
        }
        if (rc == PAPI_OK) {
            step = "PAPI_add_event";
            rc = PAPI_add_event(set, code);
        }
        if (rc == PAPI_OK) {
            step = "PAPI_start";
            rc = PAPI_start(set);
            if (rc == PAPI_OK) {
                long long v = 0;
                PAPI_stop(set, &v);
            }
        }
        if (rc == PAPI_OK) {
            e->usable = 1;
            usable++;
        } else {
            static const char *const names[]
                = { "PAPI_OK", "PAPI_EINVAL", "PAPI_ENOMEM", "PAPI_ESYS", "PAPI_ECMP",
                      "PAPI_ECLOST", "PAPI_EBUG", "PAPI_ENOEVNT", "PAPI_ECNFLCT", "PAPI_ENOTRUN",
                      "PAPI_EISRUN", "PAPI_ENOEVST", "PAPI_ENOTPRESET", "PAPI_ENOCNTR",
                      "PAPI_EMISC", "PAPI_EPERM", "PAPI_ENOINIT", "PAPI_ENOCMP", "PAPI_ENOSUPP",
                      "PAPI_ENOIMPL", "PAPI_EBUF", "PAPI_EINVAL_DOM", "PAPI_EATTR", "PAPI_ECOUNT",
                      "PAPI_ECOMBO", "PAPI_ECMP_DISABLED", "PAPI_EDELAY_INIT", "PAPI_EMULPASS" };
            char ename[32];
            if (rc < 0 && -rc < (int)(sizeof names / sizeof names[0]))
                copy_str(ename, sizeof ename, names[-rc]);
            else
                snprintf(ename, sizeof ename, "code %d", rc);
            snprintf(e->reason, sizeof e->reason, "%s: %s (%s)", step, PAPI_strerror(rc), ename);
        }
        if (set != PAPI_NULL) {
            PAPI_cleanup_eventset(set);
            PAPI_destroy_eventset(&set);
        }
    }
    if (usable) {
        copy_str(m->papi_status, sizeof m->papi_status, "ok");
    } else {
        /* Name the CPU component's own disabled reason when it gives one. */
        const char *why = "";
        int ncmp = PAPI_num_components();
        for (int ci = 0; ci < ncmp; ci++) {
            const PAPI_component_info_t *cinfo = PAPI_get_component_info(ci);
            if (cinfo && !strcmp(cinfo->name, "perf_event") && cinfo->disabled)
                why = cinfo->disabled_reason;
        }
        snprintf(m->papi_status, sizeof m->papi_status, "no event can be counted%s%.96s",
            why[0] ? ": perf_event component disabled: " : " (no usable PMU)", why);
    }
#else
    copy_str(m->papi_status, sizeof m->papi_status, "built without PAPI (-DCOMET_PAPI=OFF)");
    for (size_t i = 0; i < ne; i++)
        copy_str(m->events[i].reason, sizeof m->events[i].reason, m->papi_status);
#endif
}

static void make_id(comet_probe_machine *m)
{
    /* FNV-1a over the fields that identify the hardware (not its load). */
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s|%s|%u|%u|%u|%" PRIu64, m->hostname, m->cpu_model,
        m->packages, m->cores, m->pus, m->memory_bytes >> 30);
    for (size_t i = 0; i < m->ncaches && n > 0 && (size_t)n < sizeof buf; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "|L%d:%" PRIu64, m->caches[i].level,
            m->caches[i].size);
    uint64_t h = 1469598103934665603ull;
    for (const char *p = buf; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ull;
    }
    snprintf(m->id, sizeof m->id, "%016" PRIx64, h);
}

int comet_probe_run(const comet_probe_opts *opts, comet_probe_machine *m, char *err, size_t errlen)
{
    static const comet_probe_opts none;
    hwloc_topology_t topo = NULL;
    int rc = 0;
    if (!m)
        return comet_util_seterr(err, errlen, -EINVAL, "probe: NULL machine");
    if (!opts)
        opts = &none;
    memset(m, 0, sizeof *m);

    if (hwloc_topology_init(&topo) != 0) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "probe: hwloc_topology_init failed");
        goto fail;
    }
    if (opts->synthetic && hwloc_topology_set_synthetic(topo, opts->synthetic) != 0) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "probe: invalid synthetic topology '%s'", opts->synthetic);
        goto fail;
    }
    if (hwloc_topology_load(topo) != 0) {
        rc = comet_util_seterr(
            err, errlen, -EIO, "probe: hwloc_topology_load failed: %s", strerror(errno));
        goto fail;
    }
    m->packages = (unsigned)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    m->cores = (unsigned)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    m->pus = (unsigned)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    m->numa_nodes = (unsigned)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (m->cores == 0)
        m->cores = m->pus; /* some VMs expose PUs without cores */

    static const hwloc_obj_type_t ctypes[] = { HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
        HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE };
    for (size_t t = 0; t < sizeof ctypes / sizeof ctypes[0]; t++) {
        int nb = hwloc_get_nbobjs_by_type(topo, ctypes[t]);
        if (nb <= 0 || m->ncaches >= COMET_PROBE_MAX_CACHES)
            continue;
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, ctypes[t], 0);
        if (!o || !o->attr)
            continue;
        if (o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
            continue;
        comet_probe_cache *c = &m->caches[m->ncaches++];
        c->level = (int)o->attr->cache.depth;
        copy_str(c->type, sizeof c->type,
            o->attr->cache.type == HWLOC_OBJ_CACHE_DATA ? "data" : "unified");
        c->size = o->attr->cache.size;
        c->line = o->attr->cache.linesize;
        c->shared_by = o->cpuset ? (unsigned)hwloc_bitmap_weight(o->cpuset) : 1;
        c->count = (unsigned)nb;
    }
    /* User overrides (CARM-style), also for levels hwloc did not report. */
    for (int lvl = 1; lvl <= 4; lvl++) {
        if (!opts->cache_override[lvl])
            continue;
        comet_probe_cache *c = NULL;
        for (size_t i = 0; i < m->ncaches; i++)
            if (m->caches[i].level == lvl)
                c = &m->caches[i];
        if (!c && m->ncaches < COMET_PROBE_MAX_CACHES) {
            c = &m->caches[m->ncaches++];
            c->level = lvl;
            copy_str(c->type, sizeof c->type, lvl == 1 ? "data" : "unified");
            c->line = 64;
            c->shared_by = 1;
            c->count = 1;
        }
        if (c) {
            c->size = opts->cache_override[lvl];
            c->overridden = 1;
        }
    }

    hwloc_obj_t root = hwloc_get_root_obj(topo);
    m->memory_hwloc = root ? root->total_memory : 0;
    m->memory_bytes = m->memory_hwloc;
    copy_str(m->memory_source, sizeof m->memory_source, "hwloc");
    const char *model = NULL;
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    if (pkg)
        model = hwloc_obj_get_info_by_name(pkg, "CPUModel");
    if (model)
        copy_str(m->cpu_model, sizeof m->cpu_model, model);

    if (!opts->synthetic) {
        uint64_t mi = meminfo_total();
        /* hwloc counts only memory it can attribute to NUMA nodes; some VMs
         * report a fraction of what the kernel manages. */
        if (mi && (m->memory_hwloc == 0 || (double)m->memory_hwloc < 0.75 * (double)mi)) {
            snprintf(m->memory_note, sizeof m->memory_note,
                "hwloc reported %.1f GiB, /proc/meminfo %.1f GiB: using /proc/meminfo",
                (double)m->memory_hwloc / (1 << 30), (double)mi / (1 << 30));
            m->memory_bytes = mi;
            copy_str(m->memory_source, sizeof m->memory_source, "meminfo");
        }
        cpuinfo_fill(m);
        if (!opts->skip_clock)
            m->mhz_measured = measure_mhz();
        __builtin_cpu_init();
        m->avx = __builtin_cpu_supports("avx") != 0;
        m->avx2 = __builtin_cpu_supports("avx2") != 0;
        m->fma = __builtin_cpu_supports("fma") != 0;
        m->avx512f = __builtin_cpu_supports("avx512f") != 0;
        if (gethostname(m->hostname, sizeof m->hostname) != 0)
            copy_str(m->hostname, sizeof m->hostname, "unknown");
        m->hostname[sizeof m->hostname - 1] = '\0';
    } else {
        copy_str(m->hostname, sizeof m->hostname, "synthetic");
        copy_str(m->memory_source, sizeof m->memory_source, "hwloc");
    }

    const char *cfg = openblas_get_config();
    copy_str(m->blas, sizeof m->blas, cfg ? cfg : "");
    m->blas_threads = openblas_get_num_threads();
    {
        /* Set by the CLI before it re-executed itself (cli/main.c). */
        const char *pol = getenv("COMET_BLAS_CORE_POLICY");
        copy_str(
            m->blas_core_policy, sizeof m->blas_core_policy, pol ? pol : "environment as given");
    }
    if (!opts->skip_mpi) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        /* Allowed before MPI_Init (MPI-3). */
        if (MPI_Get_library_version(ver, &len) == MPI_SUCCESS) {
            ver[strcspn(ver, "\n")] = '\0';
            copy_str(m->mpi, sizeof m->mpi, ver);
        }
    }
#if defined(__clang__)
    snprintf(m->compiler, sizeof m->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(m->compiler, sizeof m->compiler, "gcc %s", __VERSION__);
#else
    copy_str(m->compiler, sizeof m->compiler, "unknown");
#endif
    if (!opts->skip_papi)
        probe_papi(m);
    else {
        copy_str(m->papi_status, sizeof m->papi_status, "not probed");
        m->nevents = 0;
    }
    make_id(m);
fail:
    if (topo)
        hwloc_topology_destroy(topo);
    return rc;
}

int comet_probe_read_overrides(const char *path, comet_probe_opts *opts, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    char line[256];
    int lineno = 0, rc = 0;
    if (!fp)
        return comet_util_seterr(err, errlen, -errno, "%s: %s", path, strerror(errno));
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        char *p = line;
        line[strcspn(line, "#\n")] = '\0';
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            continue;
        char *end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = '\0';
        int lvl = 0;
        char val[64];
        uint64_t bytes = 0;
        if (sscanf(p, "L%d = %63s", &lvl, val) != 2 && sscanf(p, "L%d=%63s", &lvl, val) != 2) {
            rc = comet_util_seterr(
                err, errlen, -EINVAL, "%s:%d: expected 'L<level>=<size>'", path, lineno);
            goto fail;
        }
        if (lvl < 1 || lvl > 4) {
            rc = comet_util_seterr(
                err, errlen, -EINVAL, "%s:%d: cache level must be 1..4", path, lineno);
            goto fail;
        }
        if (comet_util_parse_u64(val, &bytes) != 0 || bytes == 0 || bytes > (1ull << 40)) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s:%d: invalid cache size '%s' (e.g. 32K, 512KiB, 32M)", path, lineno, val);
            goto fail;
        }
        opts->cache_override[lvl] = bytes;
    }
fail:
    fclose(fp);
    return rc;
}

uint64_t comet_probe_cache_size(const comet_probe_machine *m, int level)
{
    for (size_t i = 0; i < m->ncaches; i++)
        if (m->caches[i].level == level)
            return m->caches[i].size;
    return 0;
}

uint64_t comet_probe_llc_size(const comet_probe_machine *m)
{
    uint64_t best = 0;
    int lvl = 0;
    for (size_t i = 0; i < m->ncaches; i++)
        if (m->caches[i].level > lvl) {
            lvl = m->caches[i].level;
            best = m->caches[i].size;
        }
    return best;
}

json_t *comet_probe_to_json(const comet_probe_machine *m)
{
    json_t *j = json_object(), *caches = json_array(), *events = json_array();
    json_object_set_new(j, "id", json_string(m->id));
    json_object_set_new(j, "hostname", json_string(m->hostname));
    json_object_set_new(j, "cpu_model", json_string(m->cpu_model));
    json_object_set_new(j, "packages", json_integer(m->packages));
    json_object_set_new(j, "cores", json_integer(m->cores));
    json_object_set_new(j, "pus", json_integer(m->pus));
    json_object_set_new(j, "numa_nodes", json_integer(m->numa_nodes));
    json_object_set_new(j, "memory_bytes", json_integer((json_int_t)m->memory_bytes));
    json_object_set_new(j, "memory_hwloc_bytes", json_integer((json_int_t)m->memory_hwloc));
    json_object_set_new(j, "memory_source", json_string(m->memory_source));
    if (m->memory_note[0])
        json_object_set_new(j, "memory_note", json_string(m->memory_note));
    for (size_t i = 0; i < m->ncaches; i++) {
        const comet_probe_cache *c = &m->caches[i];
        json_array_append_new(caches,
            json_pack("{s:i,s:s,s:I,s:i,s:i,s:i,s:b}", "level", c->level, "type", c->type, "size",
                (json_int_t)c->size, "line", c->line, "shared_by", c->shared_by, "count", c->count,
                "overridden", c->overridden));
    }
    json_object_set_new(j, "caches", caches);
    json_object_set_new(j, "isa",
        json_pack("{s:b,s:b,s:b,s:b}", "avx", m->avx, "avx2", m->avx2, "fma", m->fma, "avx512f",
            m->avx512f));
    json_object_set_new(j, "mhz", json_real(m->mhz));
    if (m->mhz_measured > 0)
        json_object_set_new(j, "mhz_measured", json_real(m->mhz_measured));
    json_object_set_new(j, "blas",
        json_pack("{s:s,s:i,s:s}", "config", m->blas, "threads", m->blas_threads, "core_policy",
            m->blas_core_policy));
    json_object_set_new(j, "mpi", json_string(m->mpi));
    json_object_set_new(j, "compiler", json_string(m->compiler));
    for (size_t i = 0; i < m->nevents; i++) {
        const comet_probe_event *e = &m->events[i];
        json_t *ev = json_pack("{s:s,s:b}", "name", e->name, "usable", e->usable);
        if (!e->usable)
            json_object_set_new(ev, "reason", json_string(e->reason));
        json_array_append_new(events, ev);
    }
    json_object_set_new(j, "papi",
        json_pack("{s:s,s:s,s:o}", "version", m->papi_version, "status", m->papi_status, "events",
            events));
    return j;
}

static void jstr(const json_t *o, const char *k, char *dst, size_t n)
{
    const char *s = json_string_value(json_object_get(o, k));
    copy_str(dst, n, s ? s : "");
}

int comet_probe_from_json(const json_t *j, comet_probe_machine *m, char *err, size_t errlen)
{
    if (!json_is_object(j))
        return comet_util_seterr(err, errlen, -EINVAL, "machine: expected an object");
    memset(m, 0, sizeof *m);
    jstr(j, "id", m->id, sizeof m->id);
    jstr(j, "hostname", m->hostname, sizeof m->hostname);
    jstr(j, "cpu_model", m->cpu_model, sizeof m->cpu_model);
    m->packages = (unsigned)json_integer_value(json_object_get(j, "packages"));
    m->cores = (unsigned)json_integer_value(json_object_get(j, "cores"));
    m->pus = (unsigned)json_integer_value(json_object_get(j, "pus"));
    m->numa_nodes = (unsigned)json_integer_value(json_object_get(j, "numa_nodes"));
    m->memory_bytes = (uint64_t)json_integer_value(json_object_get(j, "memory_bytes"));
    m->memory_hwloc = (uint64_t)json_integer_value(json_object_get(j, "memory_hwloc_bytes"));
    jstr(j, "memory_source", m->memory_source, sizeof m->memory_source);
    jstr(j, "memory_note", m->memory_note, sizeof m->memory_note);
    const json_t *caches = json_object_get(j, "caches");
    size_t i;
    json_t *c;
    json_array_foreach(caches, i, c)
    {
        if (m->ncaches >= COMET_PROBE_MAX_CACHES)
            break;
        comet_probe_cache *pc = &m->caches[m->ncaches++];
        pc->level = (int)json_integer_value(json_object_get(c, "level"));
        jstr(c, "type", pc->type, sizeof pc->type);
        pc->size = (uint64_t)json_integer_value(json_object_get(c, "size"));
        pc->line = (unsigned)json_integer_value(json_object_get(c, "line"));
        pc->shared_by = (unsigned)json_integer_value(json_object_get(c, "shared_by"));
        pc->count = (unsigned)json_integer_value(json_object_get(c, "count"));
        pc->overridden = json_is_true(json_object_get(c, "overridden"));
    }
    const json_t *isa = json_object_get(j, "isa");
    m->avx = json_is_true(json_object_get(isa, "avx"));
    m->avx2 = json_is_true(json_object_get(isa, "avx2"));
    m->fma = json_is_true(json_object_get(isa, "fma"));
    m->avx512f = json_is_true(json_object_get(isa, "avx512f"));
    m->mhz = json_number_value(json_object_get(j, "mhz"));
    m->mhz_measured = json_number_value(json_object_get(j, "mhz_measured"));
    const json_t *blas = json_object_get(j, "blas");
    jstr(blas, "config", m->blas, sizeof m->blas);
    m->blas_threads = (int)json_integer_value(json_object_get(blas, "threads"));
    jstr(blas, "core_policy", m->blas_core_policy, sizeof m->blas_core_policy);
    jstr(j, "mpi", m->mpi, sizeof m->mpi);
    jstr(j, "compiler", m->compiler, sizeof m->compiler);
    const json_t *papi = json_object_get(j, "papi");
    jstr(papi, "version", m->papi_version, sizeof m->papi_version);
    jstr(papi, "status", m->papi_status, sizeof m->papi_status);
    json_array_foreach(json_object_get(papi, "events"), i, c)
    {
        if (m->nevents >= COMET_PROBE_MAX_EVENTS)
            break;
        comet_probe_event *e = &m->events[m->nevents++];
        jstr(c, "name", e->name, sizeof e->name);
        e->usable = json_is_true(json_object_get(c, "usable"));
        jstr(c, "reason", e->reason, sizeof e->reason);
    }
    if (!m->cores || !m->id[0])
        return comet_util_seterr(err, errlen, -EINVAL, "machine: missing 'cores' or 'id'");
    return 0;
}

static const char *human_bytes(uint64_t b, char *buf, size_t n)
{
    if (b >= (1ull << 30) && b % (1ull << 20) == 0 && b >= 10 * (1ull << 30))
        snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 30))
        snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, n, "%g MiB", (double)b / (1ull << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%g KiB", (double)b / 1024);
    else
        snprintf(buf, n, "%" PRIu64 " B", b);
    return buf;
}

void comet_probe_print(const comet_probe_machine *m, FILE *fp)
{
    char b[64];
    fprintf(fp, "machine      %s (id %s)\n", m->hostname, m->id);
    fprintf(fp, "cpu          %s%s", m->cpu_model, m->mhz > 0 ? "" : "\n");
    if (m->mhz > 0 && m->mhz_measured > 0)
        fprintf(fp, " @ %.0f MHz (measured %.0f MHz)\n", m->mhz, m->mhz_measured);
    else if (m->mhz > 0)
        fprintf(fp, " @ %.0f MHz\n", m->mhz);
    fprintf(fp, "topology     %u package(s), %u core(s), %u PU(s), %u NUMA node(s)\n", m->packages,
        m->cores, m->pus, m->numa_nodes);
    fprintf(fp, "memory       %s (from %s)\n", human_bytes(m->memory_bytes, b, sizeof b),
        m->memory_source);
    if (m->memory_note[0])
        fprintf(fp, "             note: %s\n", m->memory_note);
    fprintf(fp, "caches       level  type      size        line  shared by  instances\n");
    for (size_t i = 0; i < m->ncaches; i++) {
        const comet_probe_cache *c = &m->caches[i];
        fprintf(fp, "             L%-5d %-9s %-11s %-5u %-10u %u%s\n", c->level, c->type,
            human_bytes(c->size, b, sizeof b), c->line, c->shared_by, c->count,
            c->overridden ? "  (user override)" : "");
    }
    fprintf(fp, "isa          avx %s, avx2 %s, fma %s, avx512f %s\n", m->avx ? "yes" : "no",
        m->avx2 ? "yes" : "no", m->fma ? "yes" : "no", m->avx512f ? "yes" : "no");
    fprintf(fp, "blas         %s (%d thread%s)\n", m->blas, m->blas_threads,
        m->blas_threads == 1 ? "" : "s");
    fprintf(fp, "blas core    %s\n", m->blas_core_policy);
    fprintf(fp, "mpi          %s\n", m->mpi[0] ? m->mpi : "(not queried)");
    fprintf(fp, "compiler     %s\n", m->compiler);
    fprintf(fp, "papi         %s%s%s\n", m->papi_version[0] ? m->papi_version : "-",
        m->papi_status[0] ? ": " : "", m->papi_status);
    for (size_t i = 0; i < m->nevents; i++)
        fprintf(fp, "  %-13s %s%s%s\n", m->events[i].name,
            m->events[i].usable ? "usable" : "unavailable", m->events[i].usable ? "" : ": ",
            m->events[i].usable ? "" : m->events[i].reason);
}
