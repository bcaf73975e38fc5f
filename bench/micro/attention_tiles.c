/* The two products of mhac's AVX2 attention, written by hand with two register tile shapes and
 * timed in the same run: the experiment behind the AVX2 `AttentionSchedule` (bench/RESULTS.md).
 *
 *   attention_tiles [ROUNDS]
 *
 * For each block of queries (transposed, qT[64][QB], as mhac keeps them) and each block of KB
 * keys of one head (rows of a [S][768] matrix, as the projections write them):
 *   scores  sT[KB][QB] = K . qT    tiles of KEYS key rows x QV ymm of queries, over the head
 *   update  o[QB][64] += sT^T . V  tiles of ROWS query rows x HV ymm of the head, over the keys
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

/* sT[j][q0 + :] for the key rows j of a tile, accumulated over the head in registers. */
#define SCORES(NAME, KEYS, QV)                                                                   \
  static void NAME(int qb, int kb, const float *qT, const float *k, float *sT) {               \
    for (int q0 = 0; q0 < qb; q0 += 8 * QV)                                                     \
      for (int j = 0; j < kb; j += KEYS) {                                                      \
        __m256 acc[KEYS][QV];                                                                   \
        for (int t = 0; t < KEYS; ++t)                                                          \
          for (int v = 0; v < QV; ++v)                                                          \
            acc[t][v] = _mm256_setzero_ps();                                                    \
        for (int d = 0; d < kHead; ++d) {                                                       \
          __m256 q[QV];                                                                         \
          for (int v = 0; v < QV; ++v)                                                          \
            q[v] = _mm256_load_ps(qT + d * qb + q0 + 8 * v);                                    \
          for (int t = 0; t < KEYS; ++t) {                                                      \
            __m256 key = _mm256_broadcast_ss(k + (j + t) * kStride + d);                        \
            for (int v = 0; v < QV; ++v)                                                        \
              acc[t][v] = _mm256_fmadd_ps(key, q[v], acc[t][v]);                                \
          }                                                                                     \
        }                                                                                       \
        for (int t = 0; t < KEYS; ++t)                                                          \
          for (int v = 0; v < QV; ++v)                                                          \
            _mm256_store_ps(sT + (j + t) * qb + q0 + 8 * v, acc[t][v]);                         \
      }                                                                                         \
  }

/* o[i + :][c0 + :] for the query rows of a tile, accumulated over the block's keys. */
#define UPDATE(NAME, ROWS, HV)                                                                   \
  static void NAME(int qb, int kb, const float *sT, const float *v, float *o) {                \
    for (int c0 = 0; c0 < kHead; c0 += 8 * HV)                                                  \
      for (int i = 0; i < qb; i += ROWS) {                                                      \
        __m256 acc[ROWS][HV];                                                                   \
        for (int t = 0; t < ROWS; ++t)                                                          \
          for (int h = 0; h < HV; ++h)                                                          \
            acc[t][h] = _mm256_load_ps(o + (i + t) * kHead + c0 + 8 * h);                       \
        for (int j = 0; j < kb; ++j) {                                                          \
          __m256 x[HV];                                                                         \
          for (int h = 0; h < HV; ++h)                                                          \
            x[h] = _mm256_loadu_ps(v + j * kStride + c0 + 8 * h);                               \
          for (int t = 0; t < ROWS; ++t) {                                                      \
            __m256 p = _mm256_broadcast_ss(sT + j * qb + i + t);                                \
            for (int h = 0; h < HV; ++h)                                                        \
              acc[t][h] = _mm256_fmadd_ps(p, x[h], acc[t][h]);                                  \
          }                                                                                     \
        }                                                                                       \
        for (int t = 0; t < ROWS; ++t)                                                          \
          for (int h = 0; h < HV; ++h)                                                          \
            _mm256_store_ps(o + (i + t) * kHead + c0 + 8 * h, acc[t][h]);                       \
      }                                                                                         \
  }

SCORES(scores2x4, 2, 4)
SCORES(scores6x2, 6, 2)
UPDATE(update2x4, 2, 4)
UPDATE(update6x2, 6, 2)

typedef void (*Product)(int, int, const float *, const float *, float *);

/* One layer's worth of both products (12 heads of a kSeq-long sequence); best of `rounds`. */
static void run(const char *name, Product scores, Product update, int qb, int kb, int rounds) {
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
        scores(qb, kb, qT, k + j0 * kStride, sT);
        update(qb, kb, sT, v + j0 * kStride, o);
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
    run("2x4", scores2x4, update2x4, 32, 64, rounds);
    run("6x2", scores6x2, update6x2, 48, 48, rounds);
    run("6x2", scores6x2, update6x2, 48, 96, rounds);
  }
  return 0;
}
