/* The two products of mhac's AVX2 attention, written by hand with two register tile shapes and
 * timed in the same run: the experiment behind the AVX2 `AttentionSchedule` (bench/RESULTS.md).
 *
 *   attention_tiles [ROUNDS]
 *
 * For each block of queries (transposed, qT[64][QB], as mhac keeps them) and each block of KB
 * keys of one head (rows of a [S][768] matrix, as the projections write them):
 *   scores  sT[KB][QB] = K . qT    tiles of key rows x ymm of queries, over the head
 *   update  o[QB][64] += sT^T . V  tiles of query rows x ymm of the head, over the keys
 * both through one micro-kernel (broadcast one operand, load the other).
 * "2x4" is the tiling mhac had (8 accumulators: 6 loads per 8 FMAs, each accumulator's two FMAs
 * of a step a latency apart), "6x2" the projections' 6 x 16 tile (12 accumulators: 8 loads per
 * 12 FMAs). No softmax: this times the products alone. Prints the best round's GFLOP/s.
 * Build: cc -O3 -march=native attention_tiles.c -o attention_tiles
 */
#define _POSIX_C_SOURCE 199309L
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef __AVX2__
#error "attention_tiles is AVX2 code: build it with -march=native on an AVX2 CPU"
#endif

enum { kHead = 64, kStride = 768, kSeq = 576, kHeads = 12 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The micro-kernel both products share: c[r][:] (+)= sum_k a[r][k] * b[k][:] for ROWS rows of
 * VECS ymm, a broadcast and b loaded, accumulated in registers over `depth` steps. Elements are
 * addressed by strides, so that one kernel reads both the keys' rows and the queries' columns. */
#define DEFINE_TILE(NAME, ROWS, VECS)                                                            \
  static void NAME(const float *a, long aRow, long aStep, const float *b, long bStep, float *c, \
                   long cRow, int depth, int accumulate) {                                     \
    __m256 acc[ROWS][VECS];                                                                     \
    for (int r = 0; r < ROWS; ++r)                                                              \
      for (int v = 0; v < VECS; ++v)                                                            \
        acc[r][v] = accumulate ? _mm256_load_ps(c + r * cRow + 8 * v) : _mm256_setzero_ps();    \
    for (int k = 0; k < depth; ++k) {                                                           \
      __m256 x[VECS];                                                                           \
      for (int v = 0; v < VECS; ++v)                                                            \
        x[v] = _mm256_loadu_ps(b + k * bStep + 8 * v);                                          \
      for (int r = 0; r < ROWS; ++r) {                                                          \
        __m256 s = _mm256_broadcast_ss(a + r * aRow + k * aStep);                               \
        for (int v = 0; v < VECS; ++v)                                                          \
          acc[r][v] = _mm256_fmadd_ps(s, x[v], acc[r][v]);                                      \
      }                                                                                         \
    }                                                                                           \
    for (int r = 0; r < ROWS; ++r)                                                              \
      for (int v = 0; v < VECS; ++v)                                                            \
        _mm256_store_ps(c + r * cRow + 8 * v, acc[r][v]);                                       \
  }
DEFINE_TILE(tile2x4, 2, 4)
DEFINE_TILE(tile6x2, 6, 2)

typedef void (*Tile)(const float *, long, long, const float *, long, float *, long, int, int);

/* sT[KB][QB] = K . qT in tiles of `rows` key rows x `width` queries, over the head. */
static void scores(Tile tile, int rows, int width, int qb, int kb, const float *qT,
                   const float *k, float *sT) {
  for (int q0 = 0; q0 < qb; q0 += width)
    for (int j = 0; j < kb; j += rows)
      tile(k + j * kStride, kStride, 1, qT + q0, qb, sT + j * qb + q0, qb, kHead, 0);
}

/* o[QB][64] += sT^T . V in tiles of `rows` query rows x `width` columns, over the keys. */
static void update(Tile tile, int rows, int width, int qb, int kb, const float *sT,
                   const float *v, float *o) {
  for (int c0 = 0; c0 < kHead; c0 += width)
    for (int i = 0; i < qb; i += rows)
      tile(sT + i, 1, qb, v + c0, kStride, o + i * kHead + c0, kHead, kb, 1);
}

/* One layer's worth of both products (12 heads of a kSeq-long sequence); best of `rounds`. */
static void run(const char *name, Tile tile, int rows, int vecs, int qb, int kb, int rounds) {
  float *qT = aligned_alloc(64, sizeof(float) * kHead * qb);
  float *k = aligned_alloc(64, sizeof(float) * kSeq * kStride);
  float *v = aligned_alloc(64, sizeof(float) * kSeq * kStride);
  float *sT = aligned_alloc(64, sizeof(float) * kb * qb);
  float *o = aligned_alloc(64, sizeof(float) * qb * kHead);
  for (int i = 0; i < kHead * qb; ++i)
    qT[i] = 1e-3f * (i % 7);
  for (int i = 0; i < kSeq * kStride; ++i) {
    k[i] = 1e-3f * (i % 5);
    v[i] = 1e-3f * (i % 3);
  }
  for (int i = 0; i < qb * kHead; ++i)
    o[i] = 0;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    double start = now();
    for (int block = 0; block < kSeq / qb * kHeads; ++block)
      for (int j0 = 0; j0 + kb <= kSeq; j0 += kb) {
        scores(tile, rows, 8 * vecs, qb, kb, qT, k + j0 * kStride, sT);
        update(tile, rows, 8 * vecs, qb, kb, sT, v + j0 * kStride, o);
      }
    double seconds = now() - start;
    best = seconds < best ? seconds : best;
  }
  double flops = 4.0 * (kSeq / qb * kHeads) * (kSeq / kb) * qb * kb * kHead;
  printf("%s  query block %d, key block %d: %6.2f ms  %5.1f GFLOP/s  (checksum %g)\n", name, qb,
         kb, best * 1e3, flops / best * 1e-9, (double)o[0] + sT[1]);
  free(qT), free(k), free(v), free(sT), free(o);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  for (int repeat = 0; repeat < 2; ++repeat) {
    run("2x4", tile2x4, 2, 4, 32, 64, rounds);
    run("6x2", tile6x2, 6, 2, 48, 48, rounds);
    run("6x2", tile6x2, 6, 2, 48, 96, rounds);
  }
  return 0;
}
