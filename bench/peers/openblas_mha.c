/* A multi-head attention layer composed from OpenBLAS: four sgemm projections (bias preloaded
 * into the output, beta = 1), and per (batch, head) an sgemm for the scores, a stable softmax
 * and an sgemm for the values, the way a library user would write it. It materializes each
 * head's S x Skv scores, which mhac never does.
 *
 *   openblas_mha B S D H CAUSAL CALLS   prints "median MS"
 *
 * Threads: OPENBLAS_NUM_THREADS. Set OPENBLAS_CORETYPE to the CPU's (Debian's OpenBLAS may
 * detect a recent Xeon as Prescott).
 */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_common.h"

/* y[M, N] = x[M, K] W[N, K]^T + b */
static void linear(const float *x, const float *w, const float *b, float *y, int m, int n,
                   int k) {
  for (int i = 0; i < m; ++i)
    memcpy(y + (size_t)i * n, b, n * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 1.0f, y, n);
}

int main(int argc, char **argv) {
  PeerShape shape;
  if (!parse_shape(argc, argv, &shape))
    return 2;
  int B = shape.batch, S = shape.seq, D = shape.dim, H = shape.heads;
  int causal = shape.causal, calls = shape.calls;
  int Dh = D / H, M = B * S;
  float scale = 1.0f / sqrtf((float)Dh);
  float *x = randoms((size_t)M * D, 1.0f), *w[4], *b[4];
  for (int i = 0; i < 4; ++i) {
    w[i] = randoms((size_t)D * D, 0.036f);
    b[i] = randoms(D, 0.036f);
  }
  float *q = malloc((size_t)M * D * 4), *k = malloc((size_t)M * D * 4);
  float *v = malloc((size_t)M * D * 4), *a = malloc((size_t)M * D * 4);
  float *out = malloc((size_t)M * D * 4), *scores = malloc((size_t)S * S * 4);
  double *times = malloc(sizeof(double) * (calls + 1));

  for (int call = 0; call <= calls; ++call) { /* call 0 warms up */
    double start = now();
    linear(x, w[0], b[0], q, M, D, D);
    linear(x, w[1], b[1], k, M, D, D);
    linear(x, w[2], b[2], v, M, D, D);
    for (int bi = 0; bi < B; ++bi)
      for (int h = 0; h < H; ++h) {
        const float *qh = q + (size_t)bi * S * D + h * Dh, *kh = k + (size_t)bi * S * D + h * Dh;
        const float *vh = v + (size_t)bi * S * D + h * Dh;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, Dh, scale, qh, D, kh, D, 0.0f,
                    scores, S);
        for (int i = 0; i < S; ++i) {
          float *row = scores + (size_t)i * S;
          int valid = causal ? i + 1 : S;
          float max = -FLT_MAX, sum = 0;
          for (int j = 0; j < valid; ++j)
            max = row[j] > max ? row[j] : max;
          for (int j = 0; j < valid; ++j)
            sum += row[j] = expf(row[j] - max);
          for (int j = 0; j < valid; ++j)
            row[j] /= sum;
          for (int j = valid; j < S; ++j)
            row[j] = 0;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, Dh, S, 1.0f, scores, S, vh, D,
                    0.0f, a + (size_t)bi * S * D + h * Dh, D);
      }
    linear(a, w[3], b[3], out, M, D, D);
    times[call] = now() - start;
  }
  print_median(times, calls);
  return out[0] == 12345.0f;
}
