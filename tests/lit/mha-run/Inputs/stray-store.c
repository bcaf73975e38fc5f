/* A module of one f32 layer, written by hand, whose run copies x to its output and then stores
 * where a layer must not: one element past the output's end, one before its start
 * (STRAY_BEFORE), or into x (STRAY_INPUT). mha-run must catch each, before any check of the
 * values. */
#include "mhac/runtime.h"

#include <string.h>

enum { kModel = 8, kSeq = 1, kBatch = 1 };

static int32_t run(void *const *tensors, const mhac_sizes *sizes) {
  (void)sizes;
  float *x = (float *)tensors[0];
  float *out = (float *)tensors[5];
  memcpy(out, x, sizeof(float) * kModel * kSeq * kBatch);
#if defined(STRAY_BEFORE)
  out[-1] = 0.0f;
#elif defined(STRAY_INPUT)
  x[0] += 1.0f;
#else
  out[kModel * kSeq * kBatch] = 0.0f;
#endif
  return MHAC_OK;
}

static int32_t prepare(void *const *tensors, void *prepared) {
  (void)tensors;
  (void)prepared;
  return MHAC_OK;
}

static int32_t run_prepared(void *const *tensors, const void *prepared, const mhac_sizes *sizes) {
  (void)prepared;
  return run(tensors, sizes);
}

static const mhac_layer kLayer = {
    .abi_version = MHAC_ABI_VERSION,
    .name = "stray",
    .dtype = MHAC_DTYPE_F32,
    .model_dim = kModel, .heads = 1, .head_dim = kModel, .kv_heads = 1, .kv_dim = kModel,
    .batch = kBatch, .seq = kSeq, .kv_seq = kSeq,
    .scale = 1.0f,
    .num_tensors = 6,
    .run_packed = run,
    .prepared_bytes = 64,
    .prepare_packed = prepare,
    .run_prepared_packed = run_prepared,
    .cpu_features = "",
    .schedule = "layer stray {\n}\n",
};

const mhac_layer *const *mhac_module_layers(void) {
  static const mhac_layer *const layers[] = {&kLayer, 0};
  return layers;
}
