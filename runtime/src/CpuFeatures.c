/*===- CpuFeatures.c - does this CPU run a layer's code? -------------------===*
 *
 * Part of mhac. A layer records the x86 features its code was compiled with (LLVM's names);
 * code run on a CPU without one of them dies of SIGILL, so the runtime checks them first,
 * against CPUID and, for the vector registers, against the state the operating system saves
 * (XCR0). AMX needs more: Linux enables its tile data only for a process that asks
 * (arch_prctl(ARCH_REQ_XCOMP_PERM)), and a tile instruction without that permission is a
 * SIGILL although CPUID and XCR0 show AMX. The runtime asks once, the first time a layer's
 * features name AMX, and reports AMX only where the permission was granted. (Asking is not
 * free: the process's signal frames then hold 8 KiB of tiles, and a thread whose alternate
 * signal stack is too small makes the kernel refuse; so layers without AMX never ask.)
 *
 *===----------------------------------------------------------------------===*/

#include "mhac/runtime.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { EAX, EBX, ECX, EDX };

/* Register state the OS must save for a feature's registers (XCR0 bits). */
enum {
  STATE_NONE = 0,
  STATE_AVX = 0x6,     /* SSE and the upper halves of ymm */
  STATE_AVX512 = 0xe6, /* and the opmasks, the upper halves of zmm0-15, zmm16-31 */
  STATE_AMX = 0x60000, /* the tile configuration and the tiles */
};

typedef struct CpuFeature {
  const char *name; /* as LLVM names it */
  unsigned leaf, subleaf, reg, bit, state;
} CpuFeature;

/* Linux's arch_prctl codes for the permission to use dynamically enabled register state, and
 * the state component of AMX's tile data (asm/prctl.h; not every libc's headers have them). */
enum {
  ARCH_GET_XCOMP_PERM_CODE = 0x1022,
  ARCH_REQ_XCOMP_PERM_CODE = 0x1023,
  XFEATURE_XTILEDATA = 18,
};

/* The features LLVM may use in vector code and around it. A name missing here is not checked. */
static const CpuFeature kFeatures[] = {
    {"sse", 1, 0, EDX, 25, STATE_NONE},
    {"sse2", 1, 0, EDX, 26, STATE_NONE},
    {"sse3", 1, 0, ECX, 0, STATE_NONE},
    {"pclmul", 1, 0, ECX, 1, STATE_NONE},
    {"ssse3", 1, 0, ECX, 9, STATE_NONE},
    {"fma", 1, 0, ECX, 12, STATE_AVX},
    {"cx16", 1, 0, ECX, 13, STATE_NONE},
    {"sse4.1", 1, 0, ECX, 19, STATE_NONE},
    {"sse4.2", 1, 0, ECX, 20, STATE_NONE},
    {"movbe", 1, 0, ECX, 22, STATE_NONE},
    {"popcnt", 1, 0, ECX, 23, STATE_NONE},
    {"aes", 1, 0, ECX, 25, STATE_NONE},
    {"avx", 1, 0, ECX, 28, STATE_AVX},
    {"f16c", 1, 0, ECX, 29, STATE_AVX},
    {"bmi", 7, 0, EBX, 3, STATE_NONE},
    {"avx2", 7, 0, EBX, 5, STATE_AVX},
    {"bmi2", 7, 0, EBX, 8, STATE_NONE},
    {"avx512f", 7, 0, EBX, 16, STATE_AVX512},
    {"avx512dq", 7, 0, EBX, 17, STATE_AVX512},
    {"adx", 7, 0, EBX, 19, STATE_NONE},
    {"avx512ifma", 7, 0, EBX, 21, STATE_AVX512},
    {"avx512cd", 7, 0, EBX, 28, STATE_AVX512},
    {"sha", 7, 0, EBX, 29, STATE_NONE},
    {"avx512bw", 7, 0, EBX, 30, STATE_AVX512},
    {"avx512vl", 7, 0, EBX, 31, STATE_AVX512},
    {"avx512vbmi", 7, 0, ECX, 1, STATE_AVX512},
    {"avx512vbmi2", 7, 0, ECX, 6, STATE_AVX512},
    {"gfni", 7, 0, ECX, 8, STATE_NONE},
    {"vaes", 7, 0, ECX, 9, STATE_AVX},
    {"vpclmulqdq", 7, 0, ECX, 10, STATE_AVX},
    {"avx512vnni", 7, 0, ECX, 11, STATE_AVX512},
    {"avx512bitalg", 7, 0, ECX, 12, STATE_AVX512},
    {"avx512vpopcntdq", 7, 0, ECX, 14, STATE_AVX512},
    {"avx512vp2intersect", 7, 0, EDX, 8, STATE_AVX512},
    {"amx-bf16", 7, 0, EDX, 22, STATE_AMX},
    {"avx512fp16", 7, 0, EDX, 23, STATE_AVX512},
    {"amx-tile", 7, 0, EDX, 24, STATE_AMX},
    {"amx-int8", 7, 0, EDX, 25, STATE_AMX},
    {"avxvnni", 7, 1, EAX, 4, STATE_AVX},
    {"avx512bf16", 7, 1, EAX, 5, STATE_AVX512},
    {"sahf", 0x80000001, 0, ECX, 0, STATE_NONE},
    {"lzcnt", 0x80000001, 0, ECX, 5, STATE_NONE},
    {"sse4a", 0x80000001, 0, ECX, 6, STATE_NONE},
    {"prfchw", 0x80000001, 0, ECX, 8, STATE_NONE},
    {"xop", 0x80000001, 0, ECX, 11, STATE_AVX},
    {"fma4", 0x80000001, 0, ECX, 16, STATE_AVX},
};

enum { kNumFeatures = sizeof kFeatures / sizeof kFeatures[0] };

/* Whether this CPU has each entry of kFeatures, computed once: CPUID traps to the hypervisor
 * in a VM and costs microseconds. */
static bool gHas[kNumFeatures];
static pthread_once_t gDetected = PTHREAD_ONCE_INIT;

static unsigned long long savedState(void) {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) /* OSXSAVE */
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((unsigned long long)hi << 32) | lo;
}

static void detect(void) {
  unsigned long long state = savedState();
  for (int i = 0; i < kNumFeatures; ++i) {
    const CpuFeature *f = &kFeatures[i];
    unsigned regs[4] = {0, 0, 0, 0};
    gHas[i] =
        __get_cpuid_count(f->leaf, f->subleaf, &regs[EAX], &regs[EBX], &regs[ECX], &regs[EDX]) &&
        (regs[f->reg] >> f->bit & 1u) && (state & f->state) == f->state;
  }
}

/* Whether this process may use AMX's tile data: asked for once, on the first check of a list
 * that names an AMX feature this CPU and the OS's XCR0 support. */
static bool gTilesPermitted;
static pthread_once_t gTilesRequested = PTHREAD_ONCE_INIT;

static void requestTiles(void) {
#ifdef __linux__
  unsigned long long permitted = 0;
  gTilesPermitted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM_CODE, XFEATURE_XTILEDATA) == 0 &&
                    syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM_CODE, &permitted) == 0 &&
                    (permitted >> XFEATURE_XTILEDATA & 1u);
#endif
}

/* Whether the CPU has the feature at `index` and the process may use it. */
static bool usable(int index) {
  if (!gHas[index])
    return false;
  if (kFeatures[index].state != STATE_AMX)
    return true;
  pthread_once(&gTilesRequested, requestTiles);
  return gTilesPermitted;
}

/* The index in kFeatures of the `length` characters at `name`, or -1. */
static int lookup(const char *name, size_t length) {
  for (int i = 0; i < kNumFeatures; ++i)
    if (strlen(kFeatures[i].name) == length && memcmp(kFeatures[i].name, name, length) == 0)
      return i;
  return -1;
}

const char *mhac_missing_cpu_feature(const char *features) {
  if (!features)
    return NULL;
  pthread_once(&gDetected, detect);
  for (const char *p = features; *p;) {
    size_t length = strcspn(p, ",");
    int index = lookup(p, length);
    if (index >= 0 && !usable(index))
      return kFeatures[index].name;
    p += length;
    if (*p == ',')
      ++p;
  }
  return NULL;
}

const char *mhac_layer_missing_cpu_feature(const mhac_layer *layer) {
  return layer ? mhac_missing_cpu_feature(layer->cpu_features) : NULL;
}
