/* Runs CUDA layers on the fake driver (fake_driver.c): device memory from the runtime, one
 * call, parameters prepared once, then two calls on them. */
#include "layers.h"

#include <stdio.h>

int main(void) {
  enum { kBatch = 2, kSeq = 77, kKvSeq = 300 };
  void *tensors[12];
  for (int i = 0; i < 12; ++i)
    if (mhac_cuda_malloc(&tensors[i], 1 << 24) != MHAC_OK)
      return 1;
  int32_t status = cross_run(tensors[0], tensors[1], tensors[2], tensors[3], tensors[4],
                             tensors[5], tensors[6], tensors[7], tensors[8], tensors[9],
                             tensors[10], tensors[11], kBatch, kSeq, kKvSeq, NULL);
  printf("cross_run: %d\n", status);
  void *prepared = NULL;
  if (mhac_cuda_malloc(&prepared, llama_PREPARED_BYTES) != MHAC_OK)
    return 1;
  status = llama_prepare(tensors[1], tensors[2], tensors[3], tensors[4], prepared, NULL);
  printf("llama_prepare: %d\n", status);
  for (int call = 0; call < 2; ++call) {
    status = llama_run_prepared(tensors[0], prepared, tensors[5], kBatch, kSeq, NULL);
    printf("llama_run_prepared: %d\n", status);
  }
  return 0;
}
