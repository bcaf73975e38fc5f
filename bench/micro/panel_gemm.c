/* The loop nest mhac generates for a projection, written by hand with AVX-512 intrinsics, to
 * tell what code generation loses from what the memory system costs (bench/RESULTS.md).
 *
 *   panel_gemm M N K WEIGHTS PREFETCH [whole]
 *
 * C[M][N] += A[M][K] B with B packed as contiguous 64-column panels [N/64][K][64]: cache tiles
 * of 256 rows x 128 columns; inside, one panel at a time, its reduction blocks of 128 in order,
 * and for each block every 6-row register tile (24 zmm accumulators: 4 loads and 6 broadcasts
 * per 24 FMAs), edge rows one by one. PREFETCH = 1 makes row tile t of T prefetch lines
 * [t, t + 1) x lines / T of the next block, one per reduction step (mhac's loop nest until
 * 2026-12-01, with its mhac-prefetch-weight-blocks pass).
 * WEIGHTS distinct weight matrices and outputs are used in turn, as the projections of a layer
 * are: with 1, they stay in cache from one call to the next. With `whole`, the loop nest mhac
 * has used since: for each panel, every row tile over the whole reduction, its accumulators
 * loaded and stored once (PREFETCH is then ignored). Prints the median and best
 * GFLOP/s of 50 rounds. Build: cc -O3 -march=native panel_gemm.c -o panel_gemm
 */
#define _POSIX_C_SOURCE 199309L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef __AVX512F__
#error "panel_gemm is the AVX-512 loop nest: build it with -march=native on an AVX-512 CPU"
#endif

enum { kTileRows = 256, kTileColumns = 128, kBlock = 128, kPanel = 64, kRows = 6, kRounds = 50 };
enum { kVectors = kPanel / 16, kBlockLines = kBlock * kPanel / 16 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* C[rows][64] += A[rows][depth] Bblock[depth][64] for `rows` <= kRows, prefetching line
 * `firstLine + kk * perTile / kBlock` of `next` at step kk (none when `next` is NULL). */
static void tile(int rows, int depth, const float *a, long lda, const float *block, float *c,
                 long ldc, const char *next, long firstLine, long perTile) {
  __m512 acc[kRows][kVectors];
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < kVectors; ++j)
      acc[i][j] = _mm512_loadu_ps(c + i * ldc + 16 * j);
  for (int kk = 0; kk < depth; ++kk) {
    if (next)
      _mm_prefetch(next + 64 * (firstLine + kk * perTile / kBlock), _MM_HINT_T0);
    __m512 b[kVectors];
    for (int j = 0; j < kVectors; ++j)
      b[j] = _mm512_loadu_ps(block + kk * kPanel + 16 * j);
    for (int i = 0; i < rows; ++i) {
      __m512 x = _mm512_set1_ps(a[i * lda + kk]);
      for (int j = 0; j < kVectors; ++j)
        acc[i][j] = _mm512_fmadd_ps(x, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < kVectors; ++j)
      _mm512_storeu_ps(c + i * ldc + 16 * j, acc[i][j]);
}

/* One cache tile: rows [0, tileRows) of A and C, panels from `panels` on. */
static void cacheTile(int tileRows, const float *a, long lda, const float *panels, int k,
                      float *c, long ldc, int prefetch, int whole) {
  if (whole) {
    for (int n0 = 0; n0 < kTileColumns; n0 += kPanel) {
      const float *panel = panels + (long)(n0 / kPanel) * k * kPanel;
      int m0 = 0;
      for (; m0 + kRows <= tileRows; m0 += kRows)
        tile(kRows, k, a + (long)m0 * lda, lda, panel, c + (long)m0 * ldc + n0, ldc, NULL, 0, 0);
      for (; m0 < tileRows; ++m0)
        tile(1, k, a + (long)m0 * lda, lda, panel, c + (long)m0 * ldc + n0, ldc, NULL, 0, 0);
    }
    return;
  }
  long tiles = tileRows / kRows, perTile = tiles ? (kBlockLines + tiles - 1) / tiles : 0;
  for (int n0 = 0; n0 < kTileColumns; n0 += kPanel)
    for (int k0 = 0; k0 < k; k0 += kBlock) {
      const float *block = panels + (long)(n0 / kPanel) * k * kPanel + (long)k0 * kPanel;
      /* The next block in memory: the panel's next one, or the next panel's first. */
      const char *next = prefetch ? (const char *)(block + kBlock * kPanel) : NULL;
      int m0 = 0;
      for (; m0 + kRows <= tileRows; m0 += kRows)
        tile(kRows, kBlock, a + (long)m0 * lda + k0, lda, block, c + (long)m0 * ldc + n0, ldc,
             next, (m0 / kRows) * perTile, perTile);
      for (; m0 < tileRows; ++m0)
        tile(1, kBlock, a + (long)m0 * lda + k0, lda, block, c + (long)m0 * ldc + n0, ldc, NULL,
             0, 0);
    }
}

static int compare(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  int whole = argc == 7 && strcmp(argv[6], "whole") == 0;
  if (argc != 6 && !whole) {
    fprintf(stderr, "usage: panel_gemm M N K WEIGHTS PREFETCH [whole]\n");
    return 2;
  }
  int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]), weights = atoi(argv[4]);
  int prefetch = atoi(argv[5]);
  if (m < 1 || n % kTileColumns || k % kBlock || weights < 1) {
    fprintf(stderr, "panel_gemm: N and K must be multiples of %d and %d\n", kTileColumns, kBlock);
    return 2;
  }
  float *a = aligned_alloc(64, sizeof(float) * (size_t)m * (size_t)k);
  float **b = malloc(sizeof(float *) * (size_t)weights), **c = malloc(sizeof(float *) * (size_t)weights);
  for (long i = 0; i < (long)m * k; ++i)
    a[i] = 1e-3f * (float)(i % 7);
  for (int w = 0; w < weights; ++w) {
    /* One block more than the weights: the last block prefetches the block after it (mhac
     * clamps those addresses to the buffer instead). */
    b[w] = aligned_alloc(64, sizeof(float) * ((size_t)k * (size_t)n + kBlock * kPanel));
    c[w] = aligned_alloc(64, sizeof(float) * (size_t)m * (size_t)n);
    for (long i = 0; i < (long)k * n; ++i)
      b[w][i] = 1e-3f * (float)(i % 5);
    memset(c[w], 0, sizeof(float) * (size_t)m * (size_t)n);
  }
  double seconds[kRounds];
  for (int round = 0; round < kRounds; ++round) {
    double start = now();
    for (int w = 0; w < weights; ++w)
      for (int r = 0; r < m; r += kTileRows)
        for (int col = 0; col < n; col += kTileColumns)
          cacheTile(m - r < kTileRows ? m - r : kTileRows, a + (long)r * k, k,
                    b[w] + (long)(col / kPanel) * k * kPanel, k, c[w] + (long)r * n + col, n,
                    prefetch, whole);
    seconds[round] = (now() - start) / weights;
  }
  qsort(seconds, kRounds, sizeof seconds[0], compare);
  double flop = 2.0 * m * n * k;
  const char *loops = whole      ? "whole reductions"
                      : prefetch ? "blocks, prefetch on"
                                 : "blocks, prefetch off";
  printf("M %d N %d K %d, %d weight%s, %s: median %.1f GFLOP/s, best %.1f\n", m, n, k, weights,
         weights > 1 ? "s" : "", loops, flop / seconds[kRounds / 2] * 1e-9,
         flop / seconds[0] * 1e-9);
  return c[0][1] == 12345.0f;
}
