/* The loop nest mhac generates for a projection, written by hand with AVX-512 intrinsics, to
 * tell what code generation loses from what the memory system costs (bench/RESULTS.md).
 *
 *   panel_gemm M N K WEIGHTS PACKED
 *
 * C[M][N] += A[M][K] B: cache tiles of 256 rows x 128 columns; inside, reduction blocks of 256,
 * 32-column panels, 8-row register tiles (16 zmm accumulators, 2 loads and 8 broadcasts per 16
 * FMAs). PACKED = 1 reads B as contiguous panels [N/32][K][32], 0 as W^T rows padded to N + 16.
 * WEIGHTS distinct weight matrices and outputs are used in turn, as the projections of a layer
 * are: with 1, everything stays in cache from one call to the next. Prints the best GFLOP/s of
 * 20 rounds. Build: cc -O3 -march=native panel_gemm.c -o panel_gemm
 */
#define _POSIX_C_SOURCE 199309L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kTileRows = 256, kTileColumns = 128, kBlock = 256, kPanel = 32, kRows = 8 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One cache tile: rows [0, kTileRows) of A and C, the panels of B from `b`. */
static void tile(const float *a, long lda, const float *b, long rowStride, long panelStride,
                 float *c, long ldc, int k) {
  for (int k0 = 0; k0 < k; k0 += kBlock)
    for (int n0 = 0; n0 < kTileColumns; n0 += kPanel) {
      const float *panel = b + (n0 / kPanel) * panelStride + (long)k0 * rowStride;
      for (int m0 = 0; m0 < kTileRows; m0 += kRows) {
        __m512 acc[2 * kRows];
        for (int i = 0; i < kRows; ++i) {
          acc[2 * i] = _mm512_loadu_ps(c + (m0 + i) * ldc + n0);
          acc[2 * i + 1] = _mm512_loadu_ps(c + (m0 + i) * ldc + n0 + 16);
        }
        const float *row = a + m0 * lda + k0, *bk = panel;
        for (int kk = 0; kk < kBlock; ++kk, bk += rowStride) {
          __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);
          for (int i = 0; i < kRows; ++i) {
            __m512 x = _mm512_set1_ps(row[i * lda + kk]);
            acc[2 * i] = _mm512_fmadd_ps(x, b0, acc[2 * i]);
            acc[2 * i + 1] = _mm512_fmadd_ps(x, b1, acc[2 * i + 1]);
          }
        }
        for (int i = 0; i < kRows; ++i) {
          _mm512_storeu_ps(c + (m0 + i) * ldc + n0, acc[2 * i]);
          _mm512_storeu_ps(c + (m0 + i) * ldc + n0 + 16, acc[2 * i + 1]);
        }
      }
    }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: panel_gemm M N K WEIGHTS PACKED\n");
    return 2;
  }
  int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]), weights = atoi(argv[4]);
  int packed = atoi(argv[5]);
  if (m % kTileRows || n % kTileColumns || k % kBlock || weights < 1) {
    fprintf(stderr, "panel_gemm: M, N, K must be multiples of %d, %d, %d\n", kTileRows,
            kTileColumns, kBlock);
    return 2;
  }
  long rowStride = packed ? kPanel : n + 16, panelStride = packed ? (long)kPanel * k : kPanel;
  float *a = aligned_alloc(64, sizeof(float) * (size_t)m * (size_t)k);
  float **b = malloc(sizeof(float *) * (size_t)weights), **c = malloc(sizeof(float *) * (size_t)weights);
  for (long i = 0; i < (long)m * k; ++i)
    a[i] = 1e-3f * (float)(i % 7);
  for (int w = 0; w < weights; ++w) {
    b[w] = aligned_alloc(64, sizeof(float) * (size_t)k * (size_t)(n + 16));
    c[w] = aligned_alloc(64, sizeof(float) * (size_t)m * (size_t)n);
    for (long i = 0; i < (long)k * (n + 16); ++i)
      b[w][i] = 1e-3f * (float)(i % 5);
    for (long i = 0; i < (long)m * n; ++i)
      c[w][i] = 0;
  }
  double best = 1e30;
  for (int round = 0; round < 20; ++round) {
    double start = now();
    for (int w = 0; w < weights; ++w)
      for (int r = 0; r < m; r += kTileRows)
        for (int col = 0; col < n; col += kTileColumns)
          tile(a + (long)r * k, k, b[w] + (col / kPanel) * panelStride, rowStride, panelStride,
               c[w] + (long)r * n + col, n, k);
    double seconds = (now() - start) / weights;
    best = seconds < best ? seconds : best;
  }
  printf("M %d N %d K %d, %d weight%s, %s: %.1f GFLOP/s\n", m, n, k, weights,
         weights > 1 ? "s" : "", packed ? "packed panels" : "W^T rows", 2.0 * m * n * k / best * 1e-9);
  return c[0][1] == 12345.0f;
}
