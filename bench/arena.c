/* Buffers with the same layout in every run (see bench_arena in
 * bench_internal.h). */
#include "bench_internal.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#define ARENA_ALIGN   ((size_t)2 << 20)
#define ARENA_PAGE    ((size_t)4096)
#define ARENA_STAGGER ((size_t)256)

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

int bench_arena_carve(bench_arena *ar, const size_t *sizes, void *out[], int n)
{
    size_t off = 0;
    ar->map = NULL;
    ar->len = 0;
    for (int i = 0; i < n; i++) {
        const size_t sz = sizes[i] ? sizes[i] : 1;
        off = round_up(off, ARENA_PAGE) + (size_t)i * ARENA_STAGGER;
        if (off > SIZE_MAX / 2 || sz > SIZE_MAX / 2 - off)
            return -EOVERFLOW;
        off += sz;
    }
    const size_t total = round_up(off, ARENA_ALIGN), len = total + ARENA_ALIGN;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    ar->map = p;
    ar->len = len;
    char *base = (char *)(((uintptr_t)p + ARENA_ALIGN - 1) & ~(uintptr_t)(ARENA_ALIGN - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(base, total, MADV_HUGEPAGE); /* a hint the kernel may refuse */
#endif
    off = 0;
    for (int i = 0; i < n; i++) {
        off = round_up(off, ARENA_PAGE) + (size_t)i * ARENA_STAGGER;
        out[i] = sizes[i] ? base + off : NULL;
        off += sizes[i] ? sizes[i] : 1;
    }
    return 0;
}

void bench_arena_free(bench_arena *ar)
{
    if (ar && ar->map)
        munmap(ar->map, ar->len);
    if (ar) {
        ar->map = NULL;
        ar->len = 0;
    }
}
