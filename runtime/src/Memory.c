/*===- Memory.c - the buffers of generated code ---------------------------===*
 *
 * Part of mhac.
 *
 * A layer allocates its intermediates (projections, transposed weights) on every call. Fresh
 * large allocations are fresh pages from the kernel, which it must clear: for BERT-base at
 * batch 8 that cost a fifth of the run. Freed large blocks are therefore kept in a small cache
 * and handed out again to requests they fit without wasting more than half of themselves.
 *
 *===----------------------------------------------------------------------===*/

#include "mhac/runtime.h"

#include <pthread.h>
#include <stdlib.h>

enum {
  kHeader = 64,       /* keeps the caller's memory 64-byte aligned */
  kCachedBlocks = 32, /* blocks kept for reuse */
  kSmall = 64 * 1024, /* below this, malloc does well on its own */
};
static const size_t kMaxCachedBytes = (size_t)1 << 30;

typedef struct Block {
  void *base;
  size_t capacity;
} Block;

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static Block cache[kCachedBlocks];
static int cached;
static size_t cachedBytes;

void *mhac_alloc(size_t size) {
  if (size > (size_t)-1 - kHeader)
    return NULL;
  if (size >= kSmall) {
    pthread_mutex_lock(&mutex);
    int best = -1;
    for (int i = 0; i < cached; ++i)
      if (cache[i].capacity >= size && cache[i].capacity / 2 <= size &&
          (best < 0 || cache[i].capacity < cache[best].capacity))
        best = i;
    if (best >= 0) {
      Block block = cache[best];
      cache[best] = cache[--cached];
      cachedBytes -= block.capacity;
      pthread_mutex_unlock(&mutex);
      return (char *)block.base + kHeader;
    }
    pthread_mutex_unlock(&mutex);
  }
  void *base = NULL;
  if (posix_memalign(&base, kHeader, size + kHeader) != 0)
    return NULL;
  *(size_t *)base = size;
  return (char *)base + kHeader;
}

void mhac_free(void *pointer) {
  if (!pointer)
    return;
  void *base = (char *)pointer - kHeader;
  size_t capacity = *(size_t *)base;
  if (capacity >= kSmall) {
    pthread_mutex_lock(&mutex);
    if (cached < kCachedBlocks && cachedBytes + capacity <= kMaxCachedBytes) {
      cache[cached++] = (Block){base, capacity};
      cachedBytes += capacity;
      pthread_mutex_unlock(&mutex);
      return;
    }
    pthread_mutex_unlock(&mutex);
  }
  free(base);
}
