/* The whole-reduction loop nest of mhac's panel projections with the register tile's shape as a
 * build parameter, to compare tile shapes and input layouts on the memory side (bench/RESULTS.md,
 * "Tried and not kept" of 2026-12-01 evening).
 *
 *   clang -O3 -march=native -DROWS=6 -DVECTORS=4 tile_shapes.c -o tile_shapes
 *   tile_shapes M N K
 *
 * C[M][N] = A[M][K] B with B packed as panels [N / P][K][P], P = 16 x VECTORS: cache tiles of
 * CACHE_ROWS rows (rounded down to whole register tiles) x one panel; in each, register tiles of ROWS rows x the panel over the whole
 * reduction (ROWS x VECTORS zmm accumulators: VECTORS loads and ROWS broadcasts per step), the
 * reduction unrolled by 4. M is rounded down to a multiple of ROWS, N must be a multiple of P.
 * -DPACKED_INPUTS reads each row tile's inputs as [K][ROWS] (one broadcast stream instead of
 * ROWS); -DSAME_INPUT_ROWS has every row tile read the first one's rows (inputs stay in L1).
 * Prints the median and best GFLOP/s of 30 rounds.
 */
#define _POSIX_C_SOURCE 199309L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef __AVX512F__
#error "tile_shapes is an AVX-512 loop nest: build it with -march=native on an AVX-512 CPU"
#endif
#ifndef ROWS
#define ROWS 6
#endif
#ifndef VECTORS
#define VECTORS 4
#endif
#ifndef CACHE_ROWS
#define CACHE_ROWS 258
#endif

/* Cache tiles are whole register tiles: M and kCacheRows are multiples of ROWS. */
enum { kPanel = 16 * VECTORS, kCacheRows = CACHE_ROWS / ROWS * ROWS, kRounds = 30 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* C[ROWS][kPanel] = A[ROWS][k] panel[k][kPanel] (A as [k][ROWS] with PACKED_INPUTS). */
static void tile(int k, const float *a, long lda, const float *panel, float *c, long ldc) {
  __m512 acc[ROWS][VECTORS];
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < VECTORS; ++j)
      acc[i][j] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int kk = 0; kk < k; ++kk) {
    __m512 b[VECTORS];
    for (int j = 0; j < VECTORS; ++j)
      b[j] = _mm512_loadu_ps(panel + (long)kk * kPanel + 16 * j);
    for (int i = 0; i < ROWS; ++i) {
#ifdef PACKED_INPUTS
      __m512 x = _mm512_set1_ps(a[(long)kk * ROWS + i]);
      (void)lda;
#else
      __m512 x = _mm512_set1_ps(a[i * lda + kk]);
#endif
      for (int j = 0; j < VECTORS; ++j)
        acc[i][j] = _mm512_fmadd_ps(x, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < VECTORS; ++j)
      _mm512_storeu_ps(c + i * ldc + 16 * j, acc[i][j]);
}

static int compare(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: tile_shapes M N K\n");
    return 2;
  }
  int m = atoi(argv[1]) / ROWS * ROWS, n = atoi(argv[2]), k = atoi(argv[3]);
  if (m < ROWS || n < kPanel || n % kPanel || k < 1) {
    fprintf(stderr, "tile_shapes: M >= %d, N a multiple of %d, K >= 1\n", ROWS, kPanel);
    return 2;
  }
  float *a = aligned_alloc(64, sizeof(float) * (size_t)m * (size_t)k);
  float *b = aligned_alloc(64, sizeof(float) * (size_t)k * (size_t)n);
  float *c = aligned_alloc(64, sizeof(float) * (size_t)m * (size_t)n);
  for (long i = 0; i < (long)m * k; ++i)
    a[i] = 1e-3f * (float)(i % 7);
  for (long i = 0; i < (long)k * n; ++i)
    b[i] = 1e-3f * (float)(i % 5);
  memset(c, 0, sizeof(float) * (size_t)m * (size_t)n);
  double seconds[kRounds];
  for (int round = 0; round < kRounds; ++round) {
    double start = now();
    for (int r0 = 0; r0 < m; r0 += kCacheRows) {
      int rows = m - r0 < kCacheRows ? m - r0 : kCacheRows;
      for (int n0 = 0; n0 < n; n0 += kPanel) {
        const float *panel = b + (long)(n0 / kPanel) * k * kPanel;
        for (int m0 = 0; m0 < rows; m0 += ROWS) {
#ifdef SAME_INPUT_ROWS
          const float *inputs = a;
#else
          /* Row tile t's inputs start at t * ROWS * k in either layout. */
          const float *inputs = a + (long)(r0 + m0) * k;
#endif
          tile(k, inputs, k, panel, c + (long)(r0 + m0) * n + n0, n);
        }
      }
    }
    seconds[round] = now() - start;
  }
  qsort(seconds, kRounds, sizeof seconds[0], compare);
  double flop = 2.0 * m * n * k;
  printf("%d x %d tiles, cache tiles of %d rows, M %d N %d K %d: median %.1f GFLOP/s, best %.1f\n",
         ROWS, kPanel, kCacheRows, m, n, k, flop / seconds[kRounds / 2] * 1e-9,
         flop / seconds[0] * 1e-9);
  return c[1] == 12345.0f;
}
