/* Prints the offset of every field of mhac_layer (or, with an argument, its size). */
#include "mhac/runtime.h"

#include <stddef.h>
#include <stdio.h>

#define FIELD(name) printf("%s %zu\n", #name, offsetof(mhac_layer, name))

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    printf("%zu\n", sizeof(mhac_layer));
    return 0;
  }
  FIELD(abi_version); FIELD(name); FIELD(dtype); FIELD(model_dim); FIELD(heads);
  FIELD(head_dim); FIELD(kv_heads); FIELD(kv_dim); FIELD(batch); FIELD(seq); FIELD(kv_seq);
  FIELD(cross); FIELD(causal); FIELD(kv_lens); FIELD(bias); FIELD(scale); FIELD(num_tensors);
  FIELD(run_packed); FIELD(prepared_bytes); FIELD(prepare_packed); FIELD(run_prepared_packed);
  FIELD(cpu_features); FIELD(schedule); FIELD(device);
  return 0;
}
