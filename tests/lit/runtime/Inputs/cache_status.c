/* The cache statuses of a decoder layer's entry points from plain C: a cache_len out of range
 * is refused before anything is written, and a good call writes its tokens' rows only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"

enum { B = 2, S = 2, D = 16, N = 8, HKV = 1, DH = 8, ROW = HKV * DH };

static float k_cache[B * N * ROW], v_cache[B * N * ROW];
static float k_before[B * N * ROW], v_before[B * N * ROW];

/* Rows of the caches that changed since the last snapshot, as "b:position" pairs. */
static void print_changed_rows(const char *what) {
  printf("%s changed rows:", what);
  for (int b = 0; b < B; ++b)
    for (int n = 0; n < N; ++n) {
      size_t at = (size_t)(b * N + n) * ROW;
      if (memcmp(&k_cache[at], &k_before[at], ROW * sizeof(float)) ||
          memcmp(&v_cache[at], &v_before[at], ROW * sizeof(float)))
        printf(" %d:%d", b, n);
    }
  printf("\n");
  memcpy(k_before, k_cache, sizeof k_cache);
  memcpy(v_before, v_cache, sizeof v_cache);
}

int main(void) {
  float *x = calloc(B * S * D, sizeof(float));
  float *w = calloc(D * D, sizeof(float));
  float *norm = calloc(DH, sizeof(float));
  float sinks[2] = {0.5f, -0.5f};
  float *out = calloc(B * S * D, sizeof(float));
  for (int i = 0; i < B * S * D; ++i)
    x[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < D * D; ++i)
    w[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
  for (int i = 0; i < DH; ++i)
    norm[i] = 1.0f;
  /* Row 1 has 3 tokens cached; every other position holds NaN, which a layer that read a
   * position past its row's cache_len + S would return. */
  for (int i = 0; i < B * N * ROW; ++i)
    k_cache[i] = v_cache[i] = i >= N * ROW && i < (N + 3) * ROW ? 0.25f : NAN;
  memcpy(k_before, k_cache, sizeof k_cache);
  memcpy(v_before, v_cache, sizeof v_cache);

  int32_t lens[B] = {0, 3};
#define RUN(len0, len1)                                                                          \
  (lens[0] = (len0), lens[1] = (len1),                                                           \
   decoder_run(x, w, w, w, w, norm, norm, sinks, k_cache, v_cache, lens, out, B, S))
  printf("ok: %d\n", RUN(0, 3));
  print_changed_rows("ok");
  int finite = 1;
  for (int i = 0; i < B * S * D; ++i)
    finite &= isfinite(out[i]) != 0;
  printf("finite: %d\n", finite);
  printf("last fitting: %d\n", RUN(2, N - S));
  print_changed_rows("last fitting");
  printf("one past: %d (%s)\n", RUN(0, N - S + 1), mhac_status_string(MHAC_ERROR_BAD_CACHE_LEN));
  printf("negative: %d\n", RUN(-1, 0));
  print_changed_rows("refused");
  printf("null cache: %d\n",
         decoder_run(x, w, w, w, w, norm, norm, sinks, NULL, v_cache, lens, out, B, S));
  printf("null cache_len: %d\n",
         decoder_run(x, w, w, w, w, norm, norm, sinks, k_cache, v_cache, NULL, out, B, S));

  void *prepared = malloc(decoder_PREPARED_BYTES);
  printf("prepare: %d\n", decoder_prepare(w, w, w, w, norm, norm, sinks, prepared));
  lens[0] = 4;
  lens[1] = 0;
  printf("prepared: %d\n", decoder_run_prepared(x, prepared, k_cache, v_cache, lens, out, B, S));
  print_changed_rows("prepared");
  lens[0] = N;
  printf("prepared full: %d\n",
         decoder_run_prepared(x, prepared, k_cache, v_cache, lens, out, B, S));
  print_changed_rows("prepared refused");
  free(prepared);

  const mhac_layer *layer = decoder_metadata();
  printf("metadata: abi %d, rope %d dim %lld base %g, kv_cache %lld, window %lld, softcap %g, "
         "qk_norm %d eps %g, sinks %d, tensors %d\n",
         MHAC_ABI_VERSION, layer->rope.kind, (long long)layer->rope.dim, layer->rope.base,
         (long long)layer->kv_cache, (long long)layer->window, layer->softcap, layer->qk_norm,
         layer->qk_norm_eps, layer->sinks, layer->num_tensors);
  printf("flops: %.0f %.0f\n", decoder_flops(1, 1, 0), decoder_flops(1, 1, 6));
  return 0;
}
