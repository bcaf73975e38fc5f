/* Calls a CUDA layer where there is no GPU: every call returns a status, with the driver's
 * side of the story in mhac_cuda_last_error(), and nothing crashes. */
#include "layers.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "misaligned") == 0) {
    static uint16_t bits[64] __attribute__((aligned(16)));
    int32_t status = llama_run(bits + 1, bits, bits, bits, bits, bits, 1, 4, NULL);
    printf("llama_run with a misaligned x: %d (%s)\n", status, mhac_status_string(status));
    return 0;
  }
  const mhac_layer *layer = bert_metadata();
  printf("device %s, abi %d\n", layer->device, layer->abi_version);
  /* The pointers are never dereferenced: the run stops at the driver. */
  static float host[16];
  int32_t status =
      bert_run(host, host, host, host, host, host, host, host, host, host, 2, 128, NULL);
  printf("bert_run: %d (%s): %s\n", status, mhac_status_string(status), mhac_cuda_last_error());
  status = bert_run(host, NULL, host, host, host, host, host, host, host, host, 2, 128, NULL);
  printf("bert_run with a NULL weight: %d (%s)\n", status, mhac_status_string(status));
  status = bert_run(host, host, host, host, host, host, host, host, host, host, 0, 128, NULL);
  printf("bert_run with batch 0: %d (%s)\n", status, mhac_status_string(status));
  void *device = host;
  status = mhac_cuda_malloc(&device, 1024);
  printf("mhac_cuda_malloc: %d, pointer %s\n", status, device ? "set" : "NULL");
  return 0;
}
