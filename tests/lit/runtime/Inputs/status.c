/* Exercises the status codes of the generated entry points from plain C. */
#include <stdio.h>
#include <stdlib.h>

#include "masked.h"

int main(void) {
  enum { B = 2, S = 3, SKV = 5, D = 8 };
  float *x = calloc(B * S * D, sizeof(float));
  float *memory = calloc(B * SKV * D, sizeof(float));
  float *w = calloc(D * D, sizeof(float));
  float *b = calloc(D, sizeof(float));
  float *out = calloc(B * S * D, sizeof(float));
  int32_t lens[B] = {5, 0};

  printf("ok: %d\n", masked_run(x, memory, w, b, w, b, w, b, w, b, lens, out, B, SKV));
  printf("null: %d\n", masked_run(x, NULL, w, b, w, b, w, b, w, b, lens, out, B, SKV));
  printf("batch 0: %d\n", masked_run(x, memory, w, b, w, b, w, b, w, b, lens, out, 0, SKV));
  printf("kv_seq -1: %d\n", masked_run(x, memory, w, b, w, b, w, b, w, b, lens, out, B, -1));
  lens[1] = 6;
  printf("kv_lens 6: %d\n", masked_run(x, memory, w, b, w, b, w, b, w, b, lens, out, B, SKV));
  lens[1] = -1;
  printf("kv_lens -1: %d (%s)\n", masked_run(x, memory, w, b, w, b, w, b, w, b, lens, out, B, SKV),
         mhac_status_string(MHAC_ERROR_BAD_KV_LENS));
  void *tensors[12] = {x, memory, w, b, w, b, w, b, w, b, lens, out};
  printf("packed without tensors: %d\n", masked_run_packed(NULL, NULL));
  printf("packed without sizes: %d\n", masked_run_packed(tensors, NULL));

  /* The prepared path: the same checks, and the parameters from the block. */
  void *prepared = malloc(masked_PREPARED_BYTES);
  printf("prepare: %d\n", masked_prepare(w, b, w, b, w, b, w, b, prepared));
  printf("prepare null: %d\n", masked_prepare(w, b, w, NULL, w, b, w, b, prepared));
  printf("prepare into null: %d\n", masked_prepare(w, b, w, b, w, b, w, b, NULL));
  lens[1] = 0;
  printf("prepared ok: %d\n", masked_run_prepared(x, memory, prepared, lens, out, B, SKV));
  printf("prepared null: %d\n", masked_run_prepared(x, memory, NULL, lens, out, B, SKV));
  printf("prepared batch 0: %d\n", masked_run_prepared(x, memory, prepared, lens, out, 0, SKV));
  lens[1] = 6;
  printf("prepared kv_lens 6: %d\n", masked_run_prepared(x, memory, prepared, lens, out, B, SKV));
  mhac_sizes sizes = {B, 0, SKV};
  lens[1] = 0;
  printf("prepared packed: %d\n", masked_run_prepared_packed(tensors, prepared, &sizes));
  printf("prepared packed without sizes: %d\n",
         masked_run_prepared_packed(tensors, prepared, NULL));
  printf("prepare packed: %d\n", masked_prepare_packed(tensors, prepared));
  printf("prepare packed without tensors: %d\n", masked_prepare_packed(NULL, prepared));
  free(prepared);

  const mhac_layer *layer = masked_metadata();
  printf("metadata: %s d=%lld h=%lld kv_seq=%lld cross=%d kv_lens=%d tensors=%d\n", layer->name,
         (long long)layer->model_dim, (long long)layer->heads, (long long)layer->kv_seq,
         layer->cross, layer->kv_lens, layer->num_tensors);
  printf("flops: %.0f\n", masked_flops(B, SKV));
  printf("prepared bytes: %lld (header %zu)\n", (long long)layer->prepared_bytes,
         masked_PREPARED_BYTES);
  return 0;
}
