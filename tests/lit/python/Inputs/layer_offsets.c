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
  FIELD(cpu_features); FIELD(schedule); FIELD(device); FIELD(rope); FIELD(kv_cache);
  FIELD(window); FIELD(softcap); FIELD(qk_norm); FIELD(qk_norm_eps); FIELD(sinks);
  FIELD(rope.kind); FIELD(rope.scaling); FIELD(rope.dim); FIELD(rope.original_max);
  FIELD(rope.base); FIELD(rope.factor); FIELD(rope.low_freq_factor); FIELD(rope.high_freq_factor);
  FIELD(rope.beta_fast); FIELD(rope.beta_slow); FIELD(rope.attention_factor);
  FIELD(rope.truncate);
  return 0;
}
