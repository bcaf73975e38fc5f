/* The machine's memory read bandwidth: THREADS threads sum their share of a 1 GiB array of
 * floats (far larger than any cache), best of five passes. The ceiling of a layer that streams
 * its weights once per call (a decoding step, S = 1).
 *   cc -O3 -march=native -pthread bandwidth.c -o bandwidth && ./bandwidth [THREADS]
 * prints "N threads: X GB/s". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kBytes = 1 << 30 };

typedef struct Share {
  const float *begin;
  size_t count;
  float sum;
} Share;

static void *sum(void *argument) {
  Share *share = argument;
  /* Eight partial sums: the adds vectorize and do not wait on each other. */
  float partial[8] = {0};
  for (size_t i = 0; i + 8 <= share->count; i += 8)
    for (int j = 0; j < 8; ++j)
      partial[j] += share->begin[i + j];
  for (int j = 0; j < 8; ++j)
    share->sum += partial[j];
  return NULL;
}

static double seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256)
    return 2;
  size_t count = kBytes / sizeof(float);
  float *data = malloc(kBytes);
  if (!data)
    return 1;
  for (size_t i = 0; i < count; ++i)
    data[i] = (float)(i & 7);
  double best = 0, total = 0;
  for (int pass = 0; pass < 5; ++pass) {
    pthread_t ids[256];
    Share shares[256];
    double start = seconds();
    for (int t = 0; t < threads; ++t) {
      shares[t] = (Share){data + count / threads * t, count / threads, 0};
      pthread_create(&ids[t], NULL, sum, &shares[t]);
    }
    for (int t = 0; t < threads; ++t) {
      pthread_join(ids[t], NULL);
      total += shares[t].sum;
    }
    double rate = kBytes / (seconds() - start) * 1e-9;
    best = rate > best ? rate : best;
  }
  printf("%d threads: %.1f GB/s (checksum %.0f)\n", threads, best, total);
  return 0;
}
