/* Runs the layer `small` of a Halide-backend object on fixed data: with the default pool on
 * two threads, on one thread, and with a parallel-for installed by mhac_set_parallel_for that
 * counts its loops. Halide's parallel loops must reach that implementation, and the output
 * must be bit-identical in all three. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

static int loops;

static int32_t serial_for(void *user, mhac_task task, void *closure, int64_t count) {
  (void)user;
  ++loops;
  for (int64_t i = 0; i < count; ++i) {
    int32_t status = task(closure, i);
    if (status != MHAC_OK)
      return status;
  }
  return MHAC_OK;
}

static float *filled(size_t count, unsigned seed) {
  float *data = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    data[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
  }
  return data;
}

static int run(float *out) {
  const size_t batch = 3, d = 64, s = 33;
  float *x = filled(batch * s * d, 1), *w[4], *b[4];
  for (int i = 0; i < 4; ++i) {
    w[i] = filled(d * d, 10 + i);
    b[i] = filled(d, 20 + i);
  }
  int32_t status = small_run(x, w[0], b[0], w[1], b[1], w[2], b[2], w[3], b[3], out, batch);
  if (status != MHAC_OK)
    fprintf(stderr, "small_run: %s\n", mhac_status_string(status));
  return status;
}

int main(void) {
  const size_t count = 3 * 33 * 64;
  float *pooled = malloc(count * sizeof(float)), *single = malloc(count * sizeof(float)),
        *installed = malloc(count * sizeof(float));
  mhac_set_num_threads(2);
  if (run(pooled))
    return 1;
  mhac_set_num_threads(1);
  if (run(single))
    return 1;
  mhac_set_parallel_for(serial_for, NULL);
  if (run(installed))
    return 1;
  mhac_set_parallel_for(NULL, NULL);
  printf("parallel loops through the installed implementation: %s\n", loops > 0 ? "yes" : "no");
  printf("same output on 2 threads, 1 thread, installed: %s\n",
         !memcmp(pooled, single, count * sizeof(float)) &&
                 !memcmp(pooled, installed, count * sizeof(float))
             ? "yes"
             : "no");
  return 0;
}
