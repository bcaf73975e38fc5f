/* The f32 FMA peak of this machine, measured: each thread runs independent chains of AVX-512 (or
 * AVX2) FMAs, enough to cover the FMA latency on both ports; with `bf16`, chains of AVX512-BF16
 * dot products (vdpbf16ps: two bf16 products per f32 lane, 4 FLOPs a lane), the peak of bf16
 * layers' kernels. Every chain lives in a register: 24
 * of the 32 zmm registers, 12 of the 16 ymm registers (more would spill, and the spills' loads
 * and stores would be measured instead of the FMAs). A round is about 40 ms, as long as a layer
 * call: rounds of 1 ms, thread start-up and the clock's ramp included, measured 72-90 GFLOP/s
 * on a Zen 3 core that sustains 90-94. With `amx`, AMX's tdpbf16ps on four independent result
 * tiles (16 x 16 f32, each += a 16 x 32 bf16 tile times a 32 x 16 one: 16384 FLOPs), enough to
 * cover its latency, the tiles' operands in tile registers. Prints the best of 5 rounds.
 *
 *   peak [THREADS] [bf16|amx]   prints "THREADS threads: G GFLOP/s"
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
enum { kChains = 24, kIterations = 10000000 };
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define REDUCE(v) _mm512_reduce_add_ps(v)
#else
enum { kChains = 12, kIterations = 20000000 };
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#define ADD _mm256_add_ps
static float REDUCE(__m256 v) {
  float lanes[8];
  _mm256_storeu_ps(lanes, v);
  float sum = 0;
  for (int i = 0; i < 8; ++i)
    sum += lanes[i];
  return sum;
}
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

#if defined(__AVX512BF16__)
/* The same chains on vdpbf16ps: acc += a.even * b.even + a.odd * b.odd, per f32 lane. */
static void *bf16Worker(void *result) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_ps(0.001f * i);
  __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f7f), b = (__m512bh)_mm512_set1_epi16(0x38d1);
  for (long it = 0; it < kIterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  *(float *)result = _mm512_reduce_add_ps(sum);
  return NULL;
}
#endif

#if defined(__AMX_BF16__)
enum { kTileIterations = 2000000 };
/* Result tiles 0-3 += input tiles 4-5 x weight tiles 6-7, every tile 16 rows of 64 bytes. */
static void *amxWorker(void *result) {
  struct {
    unsigned char palette, startRow, reserved[14];
    unsigned short bytesPerRow[16];
    unsigned char rows[16];
  } config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.bytesPerRow[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
  static const unsigned short ones[16 * 32] = {0};
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (long it = 0; it < kTileIterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  *(float *)result = out[0];
  return NULL;
}

/* Linux hands a process AMX's tile data only once asked (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XFEATURE_XTILEDATA); without it the first tile instruction is SIGILL. */
static int requestTileData(void) { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }
#endif

static void *worker(void *result) {
  vec acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = SET1(0.001f * i);
  vec a = SET1(0.9999f), b = SET1(0.0001f);
  for (long it = 0; it < kIterations; ++it) {
    /* Unrolled by hand, so that every chain lives in a register. */
#pragma GCC unroll 24 /* at least kChains */
    for (int i = 0; i < kChains; ++i)
      acc[i] = FMA(acc[i], a, b);
  }
  vec sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = ADD(sum, acc[i]);
  *(float *)result = REDUCE(sum); /* keeps the chains alive */
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 64)
    return 2;
  int bf16 = argc > 2 && strcmp(argv[2], "bf16") == 0;
  int amx = argc > 2 && strcmp(argv[2], "amx") == 0;
  void *(*run)(void *) = worker;
  /* FLOPs of one thread's run: an FMA is 2 a lane, vdpbf16ps 4. */
  double flops = 2.0 * LANES * kChains * (double)kIterations;
  if (amx) {
#if defined(__AMX_BF16__)
    if (!requestTileData()) {
      fprintf(stderr, "peak: Linux did not grant AMX's tile data to this process\n");
      return 1;
    }
    run = amxWorker;
    flops = 4.0 * 16 * 16 * 32 * 2 * (double)kTileIterations;
#else
    fprintf(stderr, "peak: this CPU (as compiled for) has no AMX-BF16\n");
    return 1;
#endif
  }
  if (bf16) {
#if defined(__AVX512BF16__)
    run = bf16Worker;
    flops *= 2;
#else
    fprintf(stderr, "peak: this CPU (as compiled for) has no AVX512-BF16\n");
    return 1;
#endif
  }
  pthread_t ids[64];
  float sink[64];
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    double start = now();
    for (int t = 0; t < threads; ++t)
      pthread_create(&ids[t], NULL, run, &sink[t]);
    for (int t = 0; t < threads; ++t)
      pthread_join(ids[t], NULL);
    double seconds = now() - start;
    double gflops = flops * threads / seconds * 1e-9;
    if (gflops > best)
      best = gflops;
  }
  printf("%d threads: %.1f GFLOP/s\n", threads, best);
  return sink[0] == 12345.0f; /* never true; uses the results */
}
