/*===- Layer.c - status codes and running layers ---------------------------===*
 *
 * Part of mhac.
 *
 *===----------------------------------------------------------------------===*/

#include "mhac/runtime.h"

const char *mhac_status_string(int32_t status) {
  switch (status) {
  case MHAC_OK:
    return "success";
  case MHAC_ERROR_NULL_POINTER:
    return "a tensor pointer is null";
  case MHAC_ERROR_BAD_SIZE:
    return "a run-time size is not positive or does not match the compiled one";
  case MHAC_ERROR_BAD_KV_LENS:
    return "a kv_lens entry is outside [0, kv_seq]";
  case MHAC_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case MHAC_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case MHAC_ERROR_ABI_MISMATCH:
    return "the layer was compiled for another version of the mhac ABI";
  case MHAC_ERROR_UNSUPPORTED_CPU:
    return "this CPU lacks a feature the layer was compiled for";
  case MHAC_ERROR_NO_DEVICE:
    return "no NVIDIA driver or no CUDA GPU";
  case MHAC_ERROR_DRIVER:
    return "the CUDA driver reported an error";
  case MHAC_ERROR_BAD_CACHE_LEN:
    return "a cache_len entry is negative or leaves no room in the cache for the new tokens";
  default:
    return "unknown status";
  }
}

/* The compiled size, or the run-time one when the layer declared it '?'. */
static int64_t resolve(int64_t compiled, int64_t given) {
  return compiled == MHAC_DYNAMIC ? given : compiled;
}

/* Whether `layer` can run here: compiled for this ABI, and for features this CPU has. */
static int32_t check(const mhac_layer *layer) {
  if (layer->abi_version != MHAC_ABI_VERSION)
    return MHAC_ERROR_ABI_MISMATCH;
  if (mhac_layer_missing_cpu_feature(layer))
    return MHAC_ERROR_UNSUPPORTED_CPU;
  return MHAC_OK;
}

int32_t mhac_layer_run(const mhac_layer *layer, void *const *tensors, const mhac_sizes *sizes) {
  if (!layer)
    return MHAC_ERROR_INVALID_ARGUMENT;
  int32_t status = check(layer);
  return status != MHAC_OK ? status : layer->run_packed(tensors, sizes);
}

int32_t mhac_layer_prepare(const mhac_layer *layer, void *const *tensors, void **prepared) {
  if (!layer || !prepared)
    return MHAC_ERROR_INVALID_ARGUMENT;
  *prepared = NULL;
  int32_t status = check(layer);
  if (status != MHAC_OK)
    return status;
  void *block = NULL;
  if (layer->device) {
    status = mhac_cuda_malloc(&block, (size_t)layer->prepared_bytes);
    if (status != MHAC_OK)
      return status;
  } else if (!(block = mhac_alloc((size_t)layer->prepared_bytes))) {
    return MHAC_ERROR_OUT_OF_MEMORY;
  }
  status = layer->prepare_packed(tensors, block);
  if (status == MHAC_OK && layer->device)
    status = mhac_cuda_synchronize(NULL);
  if (status != MHAC_OK) {
    if (layer->device)
      mhac_cuda_free(block);
    else
      mhac_free(block);
    return status;
  }
  *prepared = block;
  return MHAC_OK;
}

int32_t mhac_layer_run_prepared(const mhac_layer *layer, void *const *tensors, const void *prepared,
                                const mhac_sizes *sizes) {
  if (!layer)
    return MHAC_ERROR_INVALID_ARGUMENT;
  if (layer->abi_version != MHAC_ABI_VERSION)
    return MHAC_ERROR_ABI_MISMATCH;
  return layer->run_prepared_packed(tensors, prepared, sizes);
}

/* The keys the S queries of a self-attention row see in all, where past = the cache_len of a
 * layer with a cache (0 without): query i has position past + i and sees the keys
 * [max(0, p - window + 1), past + S) up to p with causal. */
static double seenKeys(const mhac_layer *layer, double past, double s) {
  double total = 0;
  for (double i = 0; i < s; ++i) {
    double p = past + i, end = layer->causal ? p + 1 : past + s;
    double first = layer->window && p - (double)layer->window + 1 > 0 ? p - (double)layer->window + 1
                                                                       : 0;
    total += end - first;
  }
  return total;
}

double mhac_layer_flops(const mhac_layer *layer, const mhac_sizes *sizes) {
  if (!layer || !sizes)
    return 0;
  double b = (double)resolve(layer->batch, sizes->batch);
  double s = (double)resolve(layer->seq, sizes->seq);
  double skv = layer->cross ? (double)resolve(layer->kv_seq, sizes->kv_seq) : s;
  double past = layer->kv_cache ? (double)sizes->kv_seq : 0;
  if (b <= 0 || s <= 0 || skv <= 0 || past < 0)
    return 0;
  double d = (double)layer->model_dim, dh = (double)layer->head_dim;
  double h = (double)layer->heads, hkv = (double)layer->kv_heads;
  double kvDim = (double)layer->kv_dim;
  double projections =
      2 * b * s * d * (h * dh) + 2 * 2 * b * skv * kvDim * (hkv * dh) + 2 * b * s * (h * dh) * d;
  double attention = 4 * b * h * s * skv * dh;
  if (layer->causal)
    attention /= 2;
  if (layer->kv_cache || layer->window)
    attention = 4 * b * h * seenKeys(layer, past, s) * dh;
  return projections + attention;
}
