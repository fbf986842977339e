/**
 * @file comet_probe.h
 * @brief Machine probe: topology and caches through hwloc, memory (with a
 *        /proc/meminfo fallback where hwloc's figure is implausible), ISA
 *        flags, BLAS identity and threading, MPI library, compiler, and PAPI
 *        event availability tested by adding *and starting* each event.
 *
 * The JSON form of comet_probe_machine (comet_probe_to_json()) is the
 * "machine" object every bench record embeds.
 */
#ifndef COMET_PROBE_H
#define COMET_PROBE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Maximum cache levels recorded (L1d..L4). */
#define COMET_PROBE_MAX_CACHES 8
/** PAPI events probed. */
#define COMET_PROBE_MAX_EVENTS 8

/** One cache level as seen by hwloc. */
typedef struct comet_probe_cache {
    int level; /**< 1, 2, 3, ... */
    char type[12]; /**< "data", "unified", "instruction" */
    uint64_t size; /**< bytes per instance */
    unsigned line; /**< line size in bytes */
    unsigned shared_by; /**< PUs sharing one instance */
    unsigned count; /**< instances in the machine */
    int overridden; /**< size set by the user, not hwloc */
} comet_probe_cache;

/** Availability of one PAPI event. */
typedef struct comet_probe_event {
    char name[32]; /**< e.g. "PAPI_TOT_CYC" */
    int usable; /**< 1 if it could be added and started */
    char reason[128]; /**< why not, e.g. "PAPI_add_event: Event does not exist (PAPI_ENOEVNT)" */
} comet_probe_event;

/** A description of the machine comet runs on. */
typedef struct comet_probe_machine {
    char hostname[64]; /**< gethostname() */
    char cpu_model[128]; /**< from hwloc CPUModel or /proc/cpuinfo */
    unsigned packages; /**< sockets */
    unsigned cores; /**< physical cores */
    unsigned pus; /**< hardware threads */
    unsigned numa_nodes; /**< NUMA nodes */
    uint64_t memory_bytes; /**< total memory used by comet */
    uint64_t memory_hwloc; /**< what hwloc reported */
    char memory_source[16]; /**< "hwloc" or "meminfo" */
    char memory_note[160]; /**< why meminfo was taken, if it was */
    size_t ncaches; /**< entries in caches[] */
    comet_probe_cache caches[COMET_PROBE_MAX_CACHES]; /**< data/unified caches L1..Ln */
    int avx, avx2, fma, avx512f; /**< ISA flags (cpuid via the compiler builtins) */
    double mhz; /**< nominal clock from /proc/cpuinfo (0 if unknown) */
    char blas[160]; /**< OpenBLAS config string */
    int blas_threads; /**< OpenBLAS thread count at probe time */
    char blas_core_policy[128]; /**< how the OpenBLAS core type was chosen (COMET_BLAS_CORE) */
    char mpi[160]; /**< MPI library version (first line) */
    char compiler[96]; /**< compiler that built comet */
    char papi_version[32]; /**< PAPI version, or "" */
    char papi_status[160]; /**< "ok", or why PAPI is disabled */
    size_t nevents; /**< entries in events[] */
    comet_probe_event events[COMET_PROBE_MAX_EVENTS]; /**< per-event availability */
    char id[17]; /**< short hash of the stable fields (same machine -> same id) */
    double mhz_measured; /**< clock a core sustains, timed on a multiply chain (0 if not) */
} comet_probe_machine;

/** Probe options: user overrides, as CARM allows. Zero means "probe". */
typedef struct comet_probe_opts {
    uint64_t cache_override[5]; /**< [1]=L1d, [2]=L2, [3]=L3, [4]=L4 in bytes; 0 = hwloc */
    const char *synthetic; /**< hwloc synthetic topology string (tests), or NULL */
    int skip_papi; /**< do not touch PAPI */
    int skip_mpi; /**< do not query the MPI library */
    int skip_clock; /**< do not time the clock (mhz_measured stays 0; ~40 ms saved) */
} comet_probe_opts;

/**
 * Probes the machine. Never fails for missing PAPI counters (they are
 * reported as unusable with a reason).
 * @return 0 or a negative errno (hwloc failure), message in err.
 */
int comet_probe_run(const comet_probe_opts *opts, comet_probe_machine *m, char *err, size_t errlen);

/**
 * Reads cache overrides from a file of lines "L1=32K", "L2=512K", "L3=32M"
 * ('#' comments). Errors name file:line.
 */
int comet_probe_read_overrides(const char *path, comet_probe_opts *opts, char *err, size_t errlen);

/** Size of the last-level / given-level data cache, 0 if absent. */
uint64_t comet_probe_cache_size(const comet_probe_machine *m, int level);
/** Size of the largest cache level present. */
uint64_t comet_probe_llc_size(const comet_probe_machine *m);

/** The machine as a new JSON object (the record "machine" object). */
json_t *comet_probe_to_json(const comet_probe_machine *m);
/**
 * The clock the calling core runs at now, in MHz: the time of iters x 4
 * dependent 64-bit multiplies (3 cycles each on x86-64 cores since Core 2 and
 * Zen; 2^16 iterations take about 0.2 ms at 4 GHz). 0 on other ISAs.
 */
double comet_probe_clock_mhz(uint64_t iters);
/** Reads back what comet_probe_to_json() wrote. */
int comet_probe_from_json(const json_t *j, comet_probe_machine *m, char *err, size_t errlen);
/** Prints the human table. */
void comet_probe_print(const comet_probe_machine *m, FILE *fp);

#ifdef __cplusplus
}
#endif
#endif /* COMET_PROBE_H */
