/* The AVX2 loop nest mhac generates for a projection, written by hand twice, with its reduction
 * loop rolled and unrolled by 4, and timed against oneDNN's sgemm in the same rounds: the
 * experiment behind `ProjectionSchedule::reductionUnroll` (bench/RESULTS.md).
 *
 *   avx2_unroll [ROUNDS]
 *
 * C[512][768] = A[512][768] B with B packed as contiguous 16-column panels [48][768][16]: cache
 * tiles of 72 rows x 128 columns; inside, one panel at a time, its reduction blocks of 128 in
 * order, and for each block every 6-row register tile (12 ymm accumulators: 2 loads and 6
 * broadcasts per 12 FMAs). Four weight matrices are used in turn, as the projections of a layer
 * are. Each round times 20 products of each contender in turn; prints the mean (which the
 * slow minutes of a shared machine weigh on) and the best round.
 * Build: cc -O3 -march=native avx2_unroll.c -ldnnl -o avx2_unroll
 */
#define _POSIX_C_SOURCE 199309L
#include <dnnl.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef __AVX2__
#error "avx2_unroll is the AVX2 loop nest: build it with -march=native on an AVX2 CPU"
#endif

enum { kM = 512, kN = 768, kK = 768, kTileRows = 72, kTileColumns = 128, kBlock = 128 };
enum { kPanel = 16, kRows = 6, kWeights = 4, kProducts = 20 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* C[6][16] (+)= A[6][kBlock] Bblock[kBlock][16], the reduction unrolled UNROLL times. */
#define DEFINE_TILE(NAME, UNROLL)                                                             \
  static void NAME(const float *restrict a, const float *restrict block, float *restrict c,   \
                   int first) {                                                                \
    __m256 acc[kRows][2];                                                                      \
    for (int i = 0; i < kRows; ++i)                                                            \
      for (int j = 0; j < 2; ++j)                                                              \
        acc[i][j] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * kN + 8 * j);         \
    _Pragma(UNROLL) for (int k = 0; k < kBlock; ++k) {                                         \
      __m256 b0 = _mm256_load_ps(block + k * kPanel), b1 = _mm256_load_ps(block + k * kPanel + 8); \
      for (int i = 0; i < kRows; ++i) {                                                        \
        __m256 x = _mm256_broadcast_ss(a + i * kK + k);                                        \
        acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);                                         \
        acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);                                         \
      }                                                                                        \
    }                                                                                          \
    for (int i = 0; i < kRows; ++i)                                                            \
      for (int j = 0; j < 2; ++j)                                                              \
        _mm256_storeu_ps(c + i * kN + 8 * j, acc[i][j]);                                       \
  }
DEFINE_TILE(tileRolled, "GCC unroll 1")
DEFINE_TILE(tileUnrolled, "GCC unroll 4")

typedef void (*Tile)(const float *, const float *, float *, int);

/* One product through the loop nest; edge rows (512 = 7 x 72 + 8) are left out of both the
 * work and the FLOP count. */
static void product(Tile tile, const float *a, const float *packed, float *c) {
  for (int m0 = 0; m0 < kM; m0 += kTileRows) {
    int rows = kM - m0 < kTileRows ? kM - m0 : kTileRows;
    rows -= rows % kRows;
    for (int n0 = 0; n0 < kN; n0 += kTileColumns)
      for (int p = n0 / kPanel; p < (n0 + kTileColumns) / kPanel; ++p)
        for (int k0 = 0; k0 < kK; k0 += kBlock)
          for (int r = 0; r < rows; r += kRows)
            tile(a + (long)(m0 + r) * kK + k0, packed + ((long)p * kK + k0) * kPanel,
                 c + (long)(m0 + r) * kN + p * kPanel, k0 == 0);
  }
}

static float *filled(long count, int seed) {
  float *data = aligned_alloc(64, (size_t)count * sizeof(float));
  for (long i = 0; i < count; ++i)
    data[i] = (float)((i * 7 + seed) % 11) * 0.1f - 0.5f;
  return data;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20;
  float *a = filled((long)kM * kK, 1), *c = filled((long)kM * kN, 0);
  float *weights[kWeights];
  for (int w = 0; w < kWeights; ++w) /* the same numbers serve as packed and plain [K][N] */
    weights[w] = filled((long)kK * kN, w + 2);
  const char *names[] = {"rolled", "unrolled x4", "dnnl_sgemm"};
  double sum[3] = {0}, best[3] = {1e30, 1e30, 1e30};
  for (int round = 0; round < rounds; ++round)
    for (int v = 0; v < 3; ++v) {
      double start = now();
      for (int i = 0; i < kProducts; ++i) {
        const float *w = weights[i % kWeights];
        if (v == 2)
          dnnl_sgemm('N', 'N', kM, kN, kK, 1.f, a, kK, w, kN, 0.f, c, kN);
        else
          product(v == 0 ? tileRolled : tileUnrolled, a, w, c);
      }
      double seconds = (now() - start) / kProducts;
      sum[v] += seconds;
      if (seconds < best[v])
        best[v] = seconds;
    }
  for (int v = 0; v < 3; ++v) {
    double rows = v == 2 ? kM : kM - kM % kTileRows + (kM % kTileRows) / kRows * kRows;
    double flops = 2.0 * rows * kN * kK;
    printf("%-12s mean %7.3f ms (%5.1f GFLOP/s)  best %7.3f ms (%5.1f GFLOP/s)\n", names[v],
           1e3 * sum[v] / rounds, 1e-9 * flops * rounds / sum[v], 1e3 * best[v],
           1e-9 * flops / best[v]);
  }
  return 0;
}
