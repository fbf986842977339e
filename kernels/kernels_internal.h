/* Internal declarations shared by the kernels sources. */
#ifndef COMET_KERNELS_INTERNAL_H
#define COMET_KERNELS_INTERNAL_H

#include "comet_kernels.h"

#include <stddef.h>

/* OpenBLAS threading control (declared in its cblas.h). */
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

/** 1 when the AVX2+FMA paths are selected. */
int kern_use_avx2(void);
/** 1 when the AVX-512F micro-kernel tile is selected (implies AVX2). */
int kern_use_avx512(void);

/* In-place/out-of-place single-row passes (dispatching AVX2 or portable). */
void kern_softmax_row(const float *x, float *y, size_t n, float scale);
void kern_layernorm_row(
    const float *x, float *y, size_t n, const float *gamma, const float *beta, float eps);
/* Row passes over the m rows of a cache-resident tile X into Y (the fused
 * epilogue): pipelined across rows like the unfused passes; scratch (two
 * rows of ldscr floats) receives softmax's exps; stream selects NT stores
 * for Y (softmax only with scratch). */
void kern_softmax_rows_tile(size_t m, size_t n, const float *X, size_t ldx, float *Y, size_t ldy,
    float scale, float *scratch, size_t ldscr, int stream);
void kern_layernorm_rows_tile(size_t m, size_t n, const float *X, size_t ldx, float *Y, size_t ldy,
    const float *gamma, const float *beta, float eps, int stream);
/* The rows [*r0, *r1) of M the calling thread owns in its OpenMP team: a
 * contiguous share, the same for every pass of a kernel (GEMM blocks, row
 * passes, the BLAS baseline's slabs), so a row is produced, passed over and
 * written by one core. Blocks taken as threads came free moved half of the
 * unfused same-GEMM baseline's intermediate between its two passes through
 * the core-to-core path, which a VM host moves between one L3 and two (Zen
 * 4 VM, full set, 2 threads across two L3s: that baseline's fusion effect
 * read 1.1-1.7x, median 1.3x, where one thread read 1.0-1.1x). */
void kern_thread_rows(size_t M, size_t *r0, size_t *r1);
/* 1 when an output of this many bytes is written with NT stores. */
int kern_stream_output(size_t bytes);
/* sfence after NT stores (no-op when stream is 0). */
void kern_stream_fence(int stream);
/* Row statistics used by the distributed kernels. */
float kern_row_max(const float *x, size_t n, int *has_nan);
double kern_row_sum(const float *x, size_t n);
/* y[i] = exp(x[i] - m), returns the sum (x may equal y). */
double kern_exp_shift_sum(const float *x, float *y, size_t n, float m);
void kern_scale(float *y, size_t n, float s);
/* comet_kernels_softmax_rows with may_stream 0: ordinary stores whatever the
 * size, for an output read again at once (attention's S before P V). */
int kern_softmax_rows_ex(size_t M, size_t N, const float *X, size_t ldx, float *Y, size_t ldy,
    float scale, int threads, int may_stream);
/* Row passes over outputs of at least this many bytes use non-temporal
 * stores (default 16 MiB); tests set 0 to cover that path on small shapes. */
void kern_set_stream_min_bytes(size_t bytes);
/* 0: softmax rows run without their scratch rows (the fallback when they
 * cannot be allocated); 1 (default): with them. For tests. */
void kern_set_row_scratch(int on);

/* Micro-kernel GEMM with B packed once into 16-column panels. */
size_t kern_packed_b_floats(size_t K, size_t N);
void kern_pack_b(size_t K, size_t N, const float *B, size_t ldb, float *Bp);
/* C[mb x N] = alpha * A[mb x K] * B (packed), row-major, ldc. */
void kern_ukernel_gemm(size_t mb, size_t N, size_t K, float alpha, const float *A, size_t lda,
    const float *Bp, float *C, size_t ldc);

/* Same with panel stride pstride floats and C += (accumulate) or C =. */
void kern_ukernel_gemm_ex(size_t mb, size_t N, size_t K, float alpha, const float *A, size_t lda,
    const float *Bp, size_t pstride, int accumulate, float *C, size_t ldc);
/* Attention operands packed once per head: K^T in 16-key panels, V in
 * 16-column panels (panel stride lk*16). */
size_t kern_packed_kt_floats(size_t lk, size_t d);
size_t kern_packed_v_floats(size_t lk, size_t d);
/* One head's K^T, then its V after kern_packed_kt_floats, into dst. Each
 * thread packs what it consumes, into its own buffer: panels one core wrote
 * and another reads cross the core-to-core path, whose latency the host
 * changes under a VM (26 ns on one L3, 150 ns across; the Zen 4 VM's 2-thread
 * attention took 0.61 ms with shared panels there, 0.40 ms with its own). */
void kern_pack_attn_head(size_t lk, size_t d, const float *K, const float *V, float *dst);

int kern_check_dims(size_t a, size_t b, size_t c, size_t *prod);

#endif
