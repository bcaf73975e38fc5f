/* What the C peers share: their command line, random data, a clock, and the "median MS" line
 * bench.py reads. */
#ifndef MHAC_BENCH_PEERS_PEER_COMMON_H
#define MHAC_BENCH_PEERS_PEER_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The command line of every C peer: NAME B S D H CAUSAL CALLS [f32|bf16]. */
typedef struct {
  int batch, seq, dim, heads, causal, calls;
  int bf16; /* the layer's tensors in bf16 (peers that support it) */
} PeerShape;

/* Reads the command line into `shape`; on a wrong one prints the usage and returns 0. */
static int parse_shape(int argc, char **argv, PeerShape *shape) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: %s B S D H CAUSAL CALLS [f32|bf16]\n", argv[0]);
    return 0;
  }
  *shape = (PeerShape){atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                       atoi(argv[5]), atoi(argv[6]), argc == 8 && argv[7][0] == 'b'};
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
