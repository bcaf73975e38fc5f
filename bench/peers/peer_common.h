/* What the C peers share: their command line, random data, a clock, and the "median MS" line
 * bench.py reads. */
#ifndef MHAC_BENCH_PEERS_PEER_COMMON_H
#define MHAC_BENCH_PEERS_PEER_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The command line of every C peer: NAME B S D H CAUSAL CALLS [f32|bf16] [KEY=N ...], the keys
 * (for the model zoo's layers; peers that take them say so) head_dim, kv_heads, kv_seq, kv_dim
 * (a kv_seq or kv_dim makes it cross-attention) and bias (0: none). */
typedef struct {
  int batch, seq, dim, heads, causal, calls;
  int bf16; /* the layer's tensors in bf16 (peers that support it) */
  int headDim, kvHeads, kvSeq, kvDim, bias;
} PeerShape;

/* Reads the command line into `shape`; on a wrong one prints the usage and returns 0. */
static int parse_shape(int argc, char **argv, PeerShape *shape) {
  if (argc < 7) {
    fprintf(stderr, "usage: %s B S D H CAUSAL CALLS [f32|bf16] [head_dim=N kv_heads=N "
                    "kv_seq=N kv_dim=N bias=0|1]\n", argv[0]);
    return 0;
  }
  *shape = (PeerShape){atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                       atoi(argv[5]), atoi(argv[6]), 0};
  shape->headDim = shape->dim / shape->heads;
  shape->kvHeads = shape->heads;
  shape->kvSeq = shape->seq;
  shape->kvDim = shape->dim;
  shape->bias = 1;
  struct {
    const char *key;
    int *value;
  } keys[] = {{"head_dim", &shape->headDim}, {"kv_heads", &shape->kvHeads},
              {"kv_seq", &shape->kvSeq},     {"kv_dim", &shape->kvDim},
              {"bias", &shape->bias}};
  for (int i = 7; i < argc; ++i) {
    char key[16];
    int value, known = 0;
    if (strcmp(argv[i], "bf16") == 0 || strcmp(argv[i], "f32") == 0) {
      shape->bf16 = argv[i][0] == 'b';
      continue;
    }
    if (sscanf(argv[i], "%15[a-z_]=%d", key, &value) == 2 && value >= 0)
      for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k)
        if (strcmp(key, keys[k].key) == 0) {
          *keys[k].value = value;
          known = 1;
        }
    if (!known) {
      fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
      return 0;
    }
  }
  return 1;
}

/* n values uniform in [-bound, bound], or NULL when out of memory. */
static float *randoms(size_t n, float bound) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n && p; ++i)
    p[i] = bound * (2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
  return p;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Prints the median of times[1..calls] (times[0] is the warm-up) in milliseconds. */
static void print_median(double *times, int calls) {
  qsort(times + 1, (size_t)calls, sizeof(double), compare_doubles);
  printf("median %.4f\n", times[1 + calls / 2] * 1e3);
}

#endif /* MHAC_BENCH_PEERS_PEER_COMMON_H */
