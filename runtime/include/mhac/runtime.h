/*===- mhac/runtime.h - the C ABI of mhac's generated code and runtime ----===*
 *
 * Part of mhac. Plain C (usable from C and C++), no LLVM or MLIR dependency.
 *
 * Every layer compiled by `mhac compile` exports, next to its typed run function declared in
 * the generated header, a description of itself (`mhac_layer`) with a run function of uniform
 * signature, so that a program (or `mha-run`) can drive any layer it did not see at build time.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MHAC_RUNTIME_H
#define MHAC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the layout of `mhac_layer`; bumped whenever a field changes. */
#define MHAC_ABI_VERSION 6

/* Version of the schedule file format that mhac_layer.schedule is written in. */
#define MHAC_SCHEDULE_FORMAT 1

/* A size given at run time ('?' in the layer file). */
#define MHAC_DYNAMIC (-1)

/* Status codes returned by run functions and runtime calls. */
typedef enum mhac_status {
  MHAC_OK = 0,
  MHAC_ERROR_NULL_POINTER = 1, /* a tensor pointer is NULL */
  MHAC_ERROR_BAD_SIZE = 2,     /* a run-time size is < 1 or does not match the compiled one */
  MHAC_ERROR_BAD_KV_LENS = 3,  /* a kv_lens entry is outside [0, kv_seq] */
  MHAC_ERROR_OUT_OF_MEMORY = 4,
  MHAC_ERROR_INVALID_ARGUMENT = 5, /* any other misuse of a runtime call */
  MHAC_ERROR_ABI_MISMATCH = 6,     /* the layer was compiled for another MHAC_ABI_VERSION */
  MHAC_ERROR_UNSUPPORTED_CPU = 7,  /* this CPU lacks a feature the layer was compiled for */
  MHAC_ERROR_NO_DEVICE = 8,        /* a CUDA layer found no NVIDIA driver or no GPU */
  MHAC_ERROR_DRIVER = 9,           /* the CUDA driver failed: see mhac_cuda_last_error() */
  MHAC_ERROR_BAD_CACHE_LEN = 10,   /* a cache_len entry is negative, or cache_len + seq exceeds
                                      the cache's positions (kv_cache); nothing is written */
} mhac_status;

/* A one-line description of a status code, for messages; never NULL. */
const char *mhac_status_string(int32_t status);

/* Element type of a layer's inputs, weights and outputs. bf16 data is passed as uint16_t
 * holding the upper half of the float32 bit pattern. */
typedef enum mhac_dtype { MHAC_DTYPE_F32 = 0, MHAC_DTYPE_BF16 = 1 } mhac_dtype;

/* Run-time sizes, in the order run functions take them. */
typedef struct mhac_sizes {
  int64_t batch;
  int64_t seq;
  int64_t kv_seq; /* ignored (taken as seq) unless the layer is cross-attention */
} mhac_sizes;

/* A decoder layer's rotary embedding (docs/language.md, "Decoder keys"): the rope keys, with
 * the parameters its scaling does not use 0. */
typedef enum mhac_rope_kind {
  MHAC_ROPE_NONE = 0,
  MHAC_ROPE_HALF = 1,        /* feature d pairs with d + dim/2 (Hugging Face's rotate_half) */
  MHAC_ROPE_INTERLEAVED = 2, /* features 2i and 2i + 1 pair (GPT-J, GGUF) */
} mhac_rope_kind;
typedef enum mhac_rope_scaling {
  MHAC_ROPE_SCALING_NONE = 0,
  MHAC_ROPE_SCALING_LINEAR = 1,
  MHAC_ROPE_SCALING_LLAMA3 = 2,
  MHAC_ROPE_SCALING_YARN = 3,
} mhac_rope_scaling;
typedef struct mhac_rope {
  int32_t kind;    /* mhac_rope_kind */
  int32_t scaling; /* mhac_rope_scaling */
  int64_t dim;     /* rope_dim: rotated features per head */
  int64_t original_max;
  double base, factor, low_freq_factor, high_freq_factor, beta_fast, beta_slow;
  double attention_factor; /* rope_attention_factor; 0: the scaling's own */
  int32_t truncate;        /* rope_truncate (yarn) */
} mhac_rope;

/* Description of one compiled layer; see docs/language.md for the meaning of each size. */
typedef struct mhac_layer {
  int32_t abi_version; /* MHAC_ABI_VERSION of the compiler that produced it */
  const char *name;
  int32_t dtype; /* mhac_dtype */
  int64_t model_dim, heads, head_dim, kv_heads, kv_dim;
  int64_t batch, seq, kv_seq;           /* MHAC_DYNAMIC when given at run time */
  int32_t cross, causal, kv_lens, bias; /* 0 or 1 */
  float scale;
  /* Number of tensor pointers run_packed takes: x, [memory], wq, [bq], wk, [bk], wv, [bv],
   * wo, [bo], [q_norm, k_norm], [sinks], [kv_lens], [k_cache, v_cache, cache_len], out, in
   * this order (bracketed ones only when the layer has them). */
  int32_t num_tensors;
  /* Runs the layer. `tensors` holds num_tensors pointers; `sizes` gives the dimensions that
   * are MHAC_DYNAMIC (the others are ignored). Returns an mhac_status. */
  int32_t (*run_packed)(void *const *tensors, const mhac_sizes *sizes);
  /* Bytes of the prepared parameters: every weight and bias in the layout the kernels read. */
  int64_t prepared_bytes;
  /* Fills `prepared` (prepared_bytes, 64-byte aligned) from the weights and biases among
   * `tensors` (the array run_packed takes; the other entries are not read). */
  int32_t (*prepare_packed)(void *const *tensors, void *prepared);
  /* Runs the layer on prepared parameters: as run_packed, with the weights and biases taken
   * from `prepared` instead of `tensors` (their entries are not read). */
  int32_t (*run_prepared_packed)(void *const *tensors, const void *prepared,
                                 const mhac_sizes *sizes);
  /* The x86 features the layer's code was compiled for and may use, comma-separated, as LLVM
   * names them ("avx2,fma,avx512f,..."): see mhac_layer_missing_cpu_feature. */
  const char *cpu_features;
  /* The schedule the layer was compiled with: its block of a schedule file ("layer NAME {",
   * one "knob = value" line per knob, "}"), in format MHAC_SCHEDULE_FORMAT. Printed by
   * `mha-run MODULE.so --print-schedule`; `mhac compile --schedule` reads it back. */
  const char *schedule;
  /* NULL for a CPU layer. For a layer compiled with `--target cuda:sm_NN`, that target
   * ("cuda:sm_80"): every tensor pointer is then CUDA device memory (kv_lens too), the prepared
   * block as well, and the packed functions run on the default stream, asynchronously. */
  const char *device;
  /* Decoder layers (docs/language.md, "Decoder keys"); 0 where the layer has no such key. */
  mhac_rope rope;
  int64_t kv_cache;   /* N: positions of k_cache and v_cache [batch, N, kv_heads, head_dim] */
  int64_t window;     /* a query at position p sees keys j > p - window */
  double softcap;     /* scores s become softcap * tanh(s / softcap) */
  int32_t qk_norm;    /* 1: q and k heads RMS-normalized with q_norm, k_norm [head_dim] */
  double qk_norm_eps;
  int32_t sinks;      /* 1: a logit per query head, sinks [heads], joins each softmax */
} mhac_layer;

/* FLOPs of one call of `layer` at the given sizes (dynamic ones taken from `sizes`):
 * 2·B·S·D·(H·Dh) for the query projection, 2·2·B·Skv·kv_dim·(Hkv·Dh) for keys and values,
 * 2·B·S·(H·Dh)·D for the output projection, and 4·B·H·S·Skv·Dh for attention, halved when
 * causal. For a layer with a KV cache, sizes->kv_seq is read as every row's cache_len: the keys
 * and values projected are the S new ones, attention's keys cache_len + S (cache_len + the
 * query's own position when causal), at most `window` of them. Returns 0 when a needed size is
 * missing or not positive (a cache_len may be 0). */
double mhac_layer_flops(const mhac_layer *layer, const mhac_sizes *sizes);

/*===----------------------------------------------------------------------===*
 * Parallel loops
 *
 * Generated code runs its parallel loops through mhac_parallel_for, which hands them to the
 * current implementation: by default a persistent pool of worker threads (the caller takes
 * part), or one installed with mhac_set_parallel_for, in the spirit of Halide's
 * halide_do_par_for. Results never depend on the number of threads.
 *===----------------------------------------------------------------------===*/

/* One iteration of a parallel loop. Returns MHAC_OK or an mhac_status. */
typedef int32_t (*mhac_task)(void *closure, int64_t index);

/* An implementation of parallel loops: runs task(closure, i) for every i in [0, count), in any
 * order and possibly concurrently, and returns once all have finished: MHAC_OK, or the status
 * of a failed iteration. `user` is the pointer given to mhac_set_parallel_for. */
typedef int32_t (*mhac_parallel_for_fn)(void *user, mhac_task task, void *closure, int64_t count);

/* Runs a parallel loop with the current implementation. A loop started from inside an
 * iteration of the default pool runs on the calling thread. */
int32_t mhac_parallel_for(mhac_task task, void *closure, int64_t count);

/* Installs `fn` (called with `user`) as the implementation of parallel loops; NULL restores the
 * default pool. Not to be called while a loop runs. */
void mhac_set_parallel_for(mhac_parallel_for_fn fn, void *user);

/* Sets the number of threads of the default pool, the caller included: 1 runs loops on the
 * calling thread; 0 restores the default, MHAC_NUM_THREADS from the environment or else the
 * number of CPUs the process may use. Returns MHAC_OK, or MHAC_ERROR_INVALID_ARGUMENT for a
 * negative count. Not to be called while a loop runs. */
int32_t mhac_set_num_threads(int32_t count);

/* The number of threads the default pool uses. */
int32_t mhac_get_num_threads(void);

/*===----------------------------------------------------------------------===*
 * Memory of generated code
 *
 * Generated code allocates its intermediate buffers here. Freed large blocks are cached and
 * reused, so that a layer called in a loop does not map (and have the kernel clear) fresh pages
 * on every call. mhac_alloc returns 64-byte aligned memory, or NULL.
 *===----------------------------------------------------------------------===*/
void *mhac_alloc(size_t size);
void mhac_free(void *pointer);

/* Halide's runtime hooks, for code from `mhac compile --backend halide` (its copy of Halide's
 * runtime calls these instead of its own): halide_do_par_for on mhac_parallel_for, halide_malloc
 * and halide_free on mhac_alloc and mhac_free, halide_error returning the error as a status. */
int mhac_halide_do_par_for(void *user_context, int (*task)(void *, int, uint8_t *), int min,
                           int size, uint8_t *closure);
void *mhac_halide_malloc(void *user_context, size_t size);
void mhac_halide_free(void *user_context, void *pointer);
void mhac_halide_error(void *user_context, const char *message);

/* The first of `features` (a comma-separated list of LLVM's names for x86 features) that this
 * CPU, or the operating system's support of its registers, lacks; NULL when it has them all.
 * Names the runtime does not know are not checked. Never fails otherwise. The first list that
 * names an AMX feature makes the runtime ask Linux for the process's permission to use AMX's
 * tiles (arch_prctl(ARCH_REQ_XCOMP_PERM)); AMX counts as present only if it was granted. */
const char *mhac_missing_cpu_feature(const char *features);

/* The first of the layer's cpu_features this CPU lacks, or NULL: its code would stop on an
 * illegal instruction here. mhac_module_open refuses modules with such layers; a program that
 * links a layer's object and calls NAME_run itself checks once, with this. */
const char *mhac_layer_missing_cpu_feature(const mhac_layer *layer);

/* Runs `layer` (checking that it was compiled for this ABI version and that this CPU has its
 * features: MHAC_ERROR_UNSUPPORTED_CPU otherwise); see run_packed. */
int32_t mhac_layer_run(const mhac_layer *layer, void *const *tensors, const mhac_sizes *sizes);

/* Prepares the weights and biases among `tensors` (see prepare_packed) into a new block from
 * mhac_alloc (for a CUDA layer, device memory from mhac_cuda_malloc, filled before the call
 * returns), stored in *prepared (release it with mhac_free, or mhac_cuda_free), after the same
 * checks as mhac_layer_run. Prepare once per set of weights; then mhac_layer_run_prepared skips
 * the rearrangement NAME_run does on every call. */
int32_t mhac_layer_prepare(const mhac_layer *layer, void *const *tensors, void **prepared);

/* Runs `layer` on parameters prepared by mhac_layer_prepare, which made the CPU check; see
 * run_prepared_packed. */
int32_t mhac_layer_run_prepared(const mhac_layer *layer, void *const *tensors, const void *prepared,
                                const mhac_sizes *sizes);

/*===----------------------------------------------------------------------===*
 * CUDA
 *
 * Layers compiled for `--target cuda:*` run through the CUDA driver, which the runtime loads
 * with dlopen("libcuda.so.1") on the first call: nothing links CUDA. Their kernels load into
 * the CUDA context current on the calling thread, or else device 0's primary context (the one
 * the CUDA runtime and PyTorch use), once per process. With no driver or no GPU, calls return
 * MHAC_ERROR_NO_DEVICE; a driver error returns MHAC_ERROR_DRIVER, and mhac_cuda_last_error()
 * says which call failed and why. Streams are CUstream values; NULL is the default stream.
 *===----------------------------------------------------------------------===*/

/* The message of the last CUDA error of the calling thread ("" when none); never NULL. */
const char *mhac_cuda_last_error(void);

/* The GPU calls run on, and the facts a peak is computed from. */
typedef struct mhac_cuda_device_info {
  char name[256];
  int32_t major, minor; /* compute capability */
  int32_t multiprocessors;
  int32_t clock_khz; /* the SMs' peak clock */
} mhac_cuda_device_info;
int32_t mhac_cuda_device(mhac_cuda_device_info *info);

/* Device memory, for programs that drive CUDA layers without the CUDA runtime (mha-run):
 * allocation, copies to and from the host, and synchronization with a stream. */
int32_t mhac_cuda_malloc(void **pointer, size_t bytes);
int32_t mhac_cuda_free(void *pointer);
int32_t mhac_cuda_copy_to_device(void *device, const void *host, size_t bytes);
int32_t mhac_cuda_copy_to_host(void *host, const void *device, size_t bytes);
int32_t mhac_cuda_synchronize(void *stream);

/* Times `count` calls of call(closure), each returning an mhac_status, on the default stream:
 * *milliseconds is the time between CUDA events recorded before the first and after the last. */
int32_t mhac_cuda_time_calls(int32_t (*call)(void *closure), void *closure, int32_t count,
                             double *milliseconds);

/* What generated code uses: its device code (a fatbinary, or PTX ending in NUL) and each kernel
 * in it, with the handles the runtime loads on first use. */
typedef struct mhac_cuda_image {
  const void *data;
  void *module; /* CUmodule, loaded on first use */
} mhac_cuda_image;
typedef struct mhac_cuda_kernel {
  mhac_cuda_image *image;
  const char *name;
  void *function; /* CUfunction, looked up on first use */
} mhac_cuda_kernel;

/* Launches `kernel` on a grid of grid_x x grid_y blocks of block_x threads, with `shared_bytes`
 * of dynamic shared memory, on `stream`; `params` as cuLaunchKernel takes them. */
int32_t mhac_cuda_launch(mhac_cuda_kernel *kernel, int64_t grid_x, int64_t grid_y, int32_t block_x,
                         int32_t shared_bytes, void *stream, void **params);

/* Device memory ordered on `stream` (the workspace of a call): freed once the work queued
 * before mhac_cuda_free_async has run. */
int32_t mhac_cuda_alloc_async(void **pointer, size_t bytes, void *stream);
int32_t mhac_cuda_free_async(void *pointer, void *stream);

/* Copies `bytes` between device buffers, ordered on `stream`. */
int32_t mhac_cuda_copy_async(void *destination, const void *source, size_t bytes, void *stream);

/* Every module (object or shared library) written by `mhac compile` defines this weak function,
 * returning its layers as a NULL-terminated array. */
const mhac_layer *const *mhac_module_layers(void);

/* A shared library written by `mhac compile --shared`, opened at run time. */
typedef struct mhac_module mhac_module;

/* Opens the module at `path`. On failure returns NULL and writes a one-line message (naming the
 * file) into `error`, a buffer of `error_size` bytes (which may be 0). */
mhac_module *mhac_module_open(const char *path, char *error, size_t error_size);

/* Closes a module; its layers must not be used afterwards. NULL is ignored. */
void mhac_module_close(mhac_module *module);

/* Number of layers of an open module, and the index-th (NULL when out of range). */
int32_t mhac_module_num_layers(const mhac_module *module);
const mhac_layer *mhac_module_layer(const mhac_module *module, int32_t index);

/* The layer named `name`, or NULL. */
const mhac_layer *mhac_module_find_layer(const mhac_module *module, const char *name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MHAC_RUNTIME_H */
