#include <stdio.h>
#include <stdlib.h>

#include "vit_b16.h"

int main(void) {
  const mhac_layer *layer = vit_b16_metadata();
  size_t d = (size_t)layer->model_dim, tokens = (size_t)layer->seq;
  float *x = calloc(tokens * d, sizeof(float)), *out = calloc(tokens * d, sizeof(float));
  float *w = calloc(d * d, sizeof(float)), *b = calloc(d, sizeof(float));
  for (size_t i = 0; i < d; ++i)
    b[i] = 0.5f;
  int32_t status = vit_b16_run(x, w, b, w, b, w, b, w, b, out, 1);
  /* Zero weights: the output is the output bias everywhere. */
  printf("%s: status %d (%s), out[0] = %g, out[last] = %g\n", layer->name, status,
         mhac_status_string(status), out[0], out[tokens * d - 1]);
  return status;
}
