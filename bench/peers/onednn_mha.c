/* A multi-head attention layer composed from oneDNN primitives, the way a library user at the
 * best configuration would write it: four matmul projections whose weights are reordered once,
 * outside the timed calls, into the layout oneDNN picks for them (format "any"), with the bias
 * fused; then one batched matmul over every (batch, head) for the scores (the scale as an output
 * scale, the causal mask as a fused binary add), a softmax primitive in place, and one batched
 * matmul for the values that writes each head straight into [B, S, D]. Heads are read in place
 * through strides. It materializes B·H·S·S scores, which mhac never does. With `bf16`, every
 * tensor (weights, activations, scores) is bf16 and oneDNN's bf16 kernels run (vdpbf16ps or
 * AMX where the CPU has them), accumulating in f32. The model zoo's layers add head widths
 * other than D / H, grouped-query heads (each key and value head copied for the G query heads
 * of its group, as PyTorch users repeat them: oneDNN 2.6's matmul broadcasting them over a
 * group dimension instead ran 700x slower, on its reference kernel), cross-attention (keys and
 * values projected from a memory of kv_seq rows of kv_dim) and layers without biases.
 *
 *   onednn_mha B S D H CAUSAL CALLS [f32|bf16] [head_dim=N kv_heads=N kv_seq=N kv_dim=N bias=0|1]
 *                                                prints "median MS"
 *
 * Threads: OMP_NUM_THREADS (Debian's oneDNN runs on OpenMP).
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_common.h"

#define CHECK(call)                                                                            \
  do {                                                                                         \
    dnnl_status_t status_ = (call);                                                            \
    if (status_ != dnnl_success) {                                                             \
      fprintf(stderr, "onednn_mha: %s: %s\n", #call, dnnl_status2str(status_));                \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static dnnl_engine_t engine;
static dnnl_stream_t stream;
/* The element type of the layer's tensors (the causal mask stays f32). */
static dnnl_data_type_t elementType = dnnl_f32;

/* `n` floats rewritten in place as their bf16 (truncated) in the first half of the buffer. */
static void toBf16(float *values, size_t n) {
  unsigned short *halves = (unsigned short *)values;
  for (size_t i = 0; i < n; ++i) {
    unsigned bits;
    memcpy(&bits, &values[i], 4);
    halves[i] = (unsigned short)(bits >> 16);
  }
}

static dnnl_memory_desc_t strided(int ndims, const dnnl_dims_t dims, const dnnl_dims_t strides) {
  dnnl_memory_desc_t md;
  CHECK(dnnl_memory_desc_init_by_strides(&md, ndims, dims, elementType, strides));
  return md;
}

static dnnl_memory_desc_t plainOf(int ndims, const dnnl_dims_t dims, dnnl_data_type_t type) {
  dnnl_memory_desc_t md;
  dnnl_format_tag_t tag = ndims == 2 ? dnnl_ab : ndims == 3 ? dnnl_abc : dnnl_abcd;
  CHECK(dnnl_memory_desc_init_by_tag(&md, ndims, dims, type, tag));
  return md;
}

static dnnl_memory_desc_t plain(int ndims, const dnnl_dims_t dims) {
  return plainOf(ndims, dims, elementType);
}

static dnnl_memory_t memory(const dnnl_memory_desc_t *md, void *handle) {
  dnnl_memory_t m;
  CHECK(dnnl_memory_create(&m, md, engine, handle));
  return m;
}

/* A matmul primitive; `attr` may be NULL. */
static dnnl_primitive_t matmul(const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *weights,
                               const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst,
                               const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd_out) {
  dnnl_matmul_desc_t desc;
  CHECK(dnnl_matmul_desc_init(&desc, src, weights, bias, dst));
  dnnl_primitive_desc_t pd;
  CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL));
  dnnl_primitive_t primitive;
  CHECK(dnnl_primitive_create(&primitive, pd));
  if (pd_out)
    *pd_out = pd;
  else
    CHECK(dnnl_primitive_desc_destroy(pd));
  return primitive;
}

static void run(dnnl_primitive_t primitive, int nargs, const dnnl_exec_arg_t *args) {
  CHECK(dnnl_primitive_execute(primitive, stream, nargs, args));
}

/* y[M, N] = x[M, K] W[N, K]^T (+ b), with W reordered once into oneDNN's preferred layout; `b`
 * NULL: no bias. */
typedef struct {
  dnnl_primitive_t primitive;
  dnnl_memory_t weights, bias;
} Linear;

static Linear linear(int64_t m, int64_t n, int64_t k, const float *w, float *b) {
  dnnl_memory_desc_t src = plain(2, (dnnl_dims_t){m, k});
  dnnl_memory_desc_t dst = plain(2, (dnnl_dims_t){m, n});
  dnnl_memory_desc_t bias = plain(2, (dnnl_dims_t){1, n});
  dnnl_memory_desc_t any;
  CHECK(dnnl_memory_desc_init_by_tag(&any, 2, (dnnl_dims_t){k, n}, elementType,
                                     dnnl_format_tag_any));
  dnnl_primitive_desc_t pd;
  Linear result;
  result.primitive = matmul(&src, &any, b ? &bias : NULL, &dst, NULL, &pd);
  /* The user's W [N, K] read as W^T [K, N], reordered into the primitive's layout. */
  dnnl_memory_desc_t user = strided(2, (dnnl_dims_t){k, n}, (dnnl_dims_t){1, k});
  const dnnl_memory_desc_t *packed = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t from = memory(&user, (void *)w);
  CHECK(dnnl_memory_create(&result.weights, packed, engine, DNNL_MEMORY_ALLOCATE));
  dnnl_primitive_desc_t reorder_pd;
  CHECK(dnnl_reorder_primitive_desc_create(&reorder_pd, &user, engine, packed, engine, NULL));
  dnnl_primitive_t reorder;
  CHECK(dnnl_primitive_create(&reorder, reorder_pd));
  run(reorder, 2,
      (dnnl_exec_arg_t[]){{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, result.weights}});
  CHECK(dnnl_stream_wait(stream));
  CHECK(dnnl_primitive_destroy(reorder));
  CHECK(dnnl_primitive_desc_destroy(reorder_pd));
  CHECK(dnnl_primitive_desc_destroy(pd));
  CHECK(dnnl_memory_destroy(from));
  result.bias = b ? memory(&bias, b) : NULL;
  return result;
}

static void apply(const Linear *l, dnnl_memory_t src, dnnl_memory_t dst) {
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src},
                            {DNNL_ARG_WEIGHTS, l->weights},
                            {DNNL_ARG_DST, dst},
                            {DNNL_ARG_BIAS, l->bias}};
  run(l->primitive, l->bias ? 4 : 3, args);
}

/* Each of the Hkv heads of `from` ([rows, Hkv, Dh] elements of `size` bytes) copied G times
 * into `to` ([rows, Hkv * G, Dh]). */
static void repeatHeads(const char *from, char *to, int64_t rows, int64_t Hkv, int64_t G,
                        int64_t Dh, size_t size) {
  size_t head = (size_t)Dh * size;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t g = 0; g < G; ++g)
        memcpy(to + ((r * Hkv + h) * G + g) * head, from + (r * Hkv + h) * head, head);
}

int main(int argc, char **argv) {
  PeerShape shape;
  if (!parse_shape(argc, argv, &shape))
    return 2;
  int64_t B = shape.batch, S = shape.seq, D = shape.dim, H = shape.heads;
  int64_t Dh = shape.headDim, Hkv = shape.kvHeads, Skv = shape.kvSeq, KVD = shape.kvDim;
  int64_t G = H / Hkv, Q = H * Dh, KV = Hkv * Dh, M = B * S, Mkv = B * Skv;
  int causal = shape.causal, calls = shape.calls;
  int cross = Skv != S || KVD != D;
  if (shape.bf16)
    elementType = dnnl_bf16;
  if (H % Hkv != 0) {
    fprintf(stderr, "onednn_mha: kv_heads must divide heads\n");
    return 2;
  }
  CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));

  /* Weights [N, K] of the q, k, v and out projections; biases of N. */
  const int64_t outs[4] = {Q, KV, KV, D}, ins[4] = {D, KVD, KVD, Q};
  float *x = randoms((size_t)(M * D), 1.0f), *memoryRows = randoms((size_t)(Mkv * KVD), 1.0f);
  float *w[4], *b[4];
  for (int i = 0; i < 4; ++i) {
    w[i] = randoms((size_t)(outs[i] * ins[i]), 0.036f);
    b[i] = shape.bias ? randoms((size_t)outs[i], 0.036f) : NULL;
  }
  float *q = malloc(M * Q * 4), *k = malloc(Mkv * KV * 4), *v = malloc(Mkv * KV * 4);
  /* Keys and values with every query head's copy (grouped-query layers only). */
  float *kAll = G > 1 ? malloc(Mkv * Q * 4) : k, *vAll = G > 1 ? malloc(Mkv * Q * 4) : v;
  float *a = malloc(M * Q * 4), *out = malloc(M * D * 4);
  float *scores = malloc((size_t)(B * H * S * Skv) * 4);
  float *mask = malloc((size_t)(S * Skv) * 4);
  double *times = malloc(sizeof(double) * (size_t)(calls + 1));
  if (!x || !memoryRows || !q || !k || !v || !kAll || !vAll || !a || !out || !scores || !mask ||
      !times) {
    fprintf(stderr, "onednn_mha: out of memory\n");
    return 1;
  }
  /* Query i sees keys up to i + (Skv - S): the last query row sees every key. */
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < Skv; ++j)
      mask[i * Skv + j] = j > i + (Skv - S) ? -INFINITY : 0.0f;
  if (shape.bf16) {
    toBf16(x, (size_t)(M * D));
    toBf16(memoryRows, (size_t)(Mkv * KVD));
    for (int i = 0; i < 4; ++i) {
      toBf16(w[i], (size_t)(outs[i] * ins[i]));
      if (b[i])
        toBf16(b[i], (size_t)outs[i]);
    }
  }

  Linear projection[4];
  const int64_t rowsOf[4] = {M, Mkv, Mkv, M};
  for (int i = 0; i < 4; ++i)
    projection[i] = linear(rowsOf[i], outs[i], ins[i], w[i], b[i]);
  dnnl_memory_desc_t xMd = plain(2, (dnnl_dims_t){M, D});
  dnnl_memory_desc_t memoryMd = plain(2, (dnnl_dims_t){Mkv, KVD});
  dnnl_memory_desc_t qMd = plain(2, (dnnl_dims_t){M, Q}), kvMd = plain(2, (dnnl_dims_t){Mkv, KV});
  dnnl_memory_t xm = memory(&xMd, x), memm = memory(&memoryMd, memoryRows);
  dnnl_memory_t qm = memory(&qMd, q), km = memory(&kvMd, k), vm = memory(&kvMd, v);
  dnnl_memory_t am = memory(&qMd, a), outm = memory(&xMd, out);
  dnnl_memory_t kvInput = cross ? memm : xm;

  /* Heads in place: queries [B, S, H, Dh] seen as [B, H, S, Dh], keys (each query head's)
   * [B, Skv, H, Dh] as [B, H, Dh, Skv] and values as [B, H, Skv, Dh]. */
  const dnnl_dims_t heads = {B, H, S, Dh}, headStrides = {S * Q, Dh, Q, 1};
  dnnl_memory_desc_t headMd = strided(4, heads, headStrides);
  dnnl_memory_desc_t keysT =
      strided(4, (dnnl_dims_t){B, H, Dh, Skv}, (dnnl_dims_t){Skv * Q, Dh, 1, Q});
  dnnl_memory_desc_t valueMd =
      strided(4, (dnnl_dims_t){B, H, Skv, Dh}, (dnnl_dims_t){Skv * Q, Dh, Q, 1});
  dnnl_memory_desc_t scoreMd = plain(4, (dnnl_dims_t){B, H, S, Skv});
  dnnl_memory_desc_t maskMd = plainOf(4, (dnnl_dims_t){1, 1, S, Skv}, dnnl_f32);

  dnnl_primitive_attr_t scoreAttr;
  CHECK(dnnl_primitive_attr_create(&scoreAttr));
  float scale = 1.0f / sqrtf((float)Dh);
  CHECK(dnnl_primitive_attr_set_output_scales(scoreAttr, 1, 0, &scale));
  if (causal) {
    dnnl_post_ops_t ops;
    CHECK(dnnl_post_ops_create(&ops));
    CHECK(dnnl_post_ops_append_binary(ops, dnnl_binary_add, &maskMd));
    CHECK(dnnl_primitive_attr_set_post_ops(scoreAttr, ops));
    CHECK(dnnl_post_ops_destroy(ops));
  }
  dnnl_primitive_t scoresOp = matmul(&headMd, &keysT, NULL, &scoreMd, scoreAttr, NULL);
  dnnl_primitive_t valuesOp = matmul(&scoreMd, &valueMd, NULL, &headMd, NULL, NULL);
  dnnl_softmax_v2_desc_t softmaxDesc;
  CHECK(dnnl_softmax_v2_forward_desc_init(&softmaxDesc, dnnl_forward_inference,
                                          dnnl_softmax_accurate, &scoreMd, &scoreMd, 3));
  dnnl_primitive_desc_t softmaxPd;
  CHECK(dnnl_primitive_desc_create(&softmaxPd, &softmaxDesc, NULL, engine, NULL));
  dnnl_primitive_t softmaxOp;
  CHECK(dnnl_primitive_create(&softmaxOp, softmaxPd));

  dnnl_memory_t qh = memory(&headMd, q), kh = memory(&keysT, kAll), vh = memory(&valueMd, vAll);
  dnnl_memory_t ah = memory(&headMd, a), sm = memory(&scoreMd, scores);
  dnnl_memory_t mm = memory(&maskMd, mask);

  for (int call = 0; call <= calls; ++call) { /* call 0 warms up */
    double start = now();
    apply(&projection[0], xm, qm);
    apply(&projection[1], kvInput, km);
    apply(&projection[2], kvInput, vm);
    if (G > 1) {
      CHECK(dnnl_stream_wait(stream));
      size_t size = shape.bf16 ? 2 : 4;
      repeatHeads((const char *)k, (char *)kAll, Mkv, Hkv, G, Dh, size);
      repeatHeads((const char *)v, (char *)vAll, Mkv, Hkv, G, Dh, size);
    }
    dnnl_exec_arg_t scoreArgs[] = {{DNNL_ARG_SRC, qh},
                                   {DNNL_ARG_WEIGHTS, kh},
                                   {DNNL_ARG_DST, sm},
                                   {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mm}};
    run(scoresOp, causal ? 4 : 3, scoreArgs);
    run(softmaxOp, 2, (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, sm}, {DNNL_ARG_DST, sm}});
    run(valuesOp, 3,
        (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, vh}, {DNNL_ARG_DST, ah}});
    apply(&projection[3], am, outm);
    CHECK(dnnl_stream_wait(stream));
    times[call] = now() - start;
  }
  print_median(times, calls);
  return out[0] == 12345.0f;
}
