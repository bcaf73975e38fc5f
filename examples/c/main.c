/* A C program that links a layer compiled by mhac: the object, its header and the runtime.
 *
 *   mhac compile examples/bert_base.mha -o bert_base
 *   cc -I. -Iruntime/include examples/c/main.c bert_base.o build/lib/libmhac_runtime.a -lpthread -lm
 *
 * It runs BERT-base's attention on a batch of two sequences, then prepares the weights once and
 * runs on them prepared, and prints the checksum of both and the time of the prepared call. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bert_base.h"

static float *random_tensor(size_t count, float bound) {
  float *data = malloc(count * sizeof(float));
  for (size_t i = 0; i < count && data; ++i)
    data[i] = bound * (2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
  return data;
}

static double sum(const float *data, size_t count) {
  double total = 0;
  for (size_t i = 0; i < count; ++i)
    total += data[i];
  return total;
}

int main(void) {
  const mhac_layer *layer = bert_base_metadata();
  const int64_t batch = 2;
  const size_t d = (size_t)layer->model_dim, s = (size_t)layer->seq;
  const size_t tokens = (size_t)batch * s;

  float *x = random_tensor(tokens * d, 1.0f);
  float *w[4], *b[4];
  for (int i = 0; i < 4; ++i) {
    w[i] = random_tensor(d * d, 0.036f); /* about 1/sqrt(768), as PyTorch initializes */
    b[i] = random_tensor(d, 0.036f);
  }
  float *out = malloc(tokens * d * sizeof(float));
  if (!x || !out) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }

  /* One call with the weights as they are: the layer rearranges them on every call. */
  int32_t status = bert_base_run(x, w[0], b[0], w[1], b[1], w[2], b[2], w[3], b[3], out, batch);
  if (status != MHAC_OK) {
    fprintf(stderr, "bert_base_run: %s\n", mhac_status_string(status));
    return 1;
  }
  double checksum = sum(out, tokens * d);

  /* What a server does: prepare the weights once, then run on the prepared block. */
  void *prepared = malloc(bert_base_PREPARED_BYTES);
  if (!prepared) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  status = bert_base_prepare(w[0], b[0], w[1], b[1], w[2], b[2], w[3], b[3], prepared);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  if (status == MHAC_OK)
    status = bert_base_run_prepared(x, prepared, out, batch);
  clock_gettime(CLOCK_MONOTONIC, &end);
  if (status != MHAC_OK) {
    fprintf(stderr, "bert_base_run_prepared: %s\n", mhac_status_string(status));
    return 1;
  }
  double preparedChecksum = sum(out, tokens * d);

  double seconds =
      (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  printf("%s: batch %lld, checksum %.6f (%s on prepared weights), %.2f ms, %.1f GFLOP/s\n",
         layer->name, (long long)batch, checksum,
         preparedChecksum == checksum ? "the same" : "DIFFERENT", seconds * 1e3,
         bert_base_flops(batch) / seconds * 1e-9);

  free(prepared);
  free(x);
  free(out);
  for (int i = 0; i < 4; ++i) {
    free(w[i]);
    free(b[i]);
  }
  return 0;
}
