/*===- ThreadPool.c - the default implementation of parallel loops --------===*
 *
 * Part of mhac.
 *
 * A persistent pool. Each thread of a loop owns a contiguous share of its iterations, takes
 * them from the front, and when its share runs out takes the last iterations of the others'
 * (work stealing). Contiguous shares keep neighbouring tiles, which share data (a weight
 * panel, a head's keys and values), in one core's caches; stealing balances uneven ones
 * (causal attention). Between loops, workers spin for a while watching for the next one
 * before they sleep on a condition variable.
 * A layer runs its loops back to back, and waking a sleeping thread costs tens of microseconds
 * on the machines we measured; a spinning worker joins the next loop within about one. The
 * calling thread works too, and waits for stragglers by spinning briefly, then sleeping. One
 * loop runs at a time (loops from several application threads are serialized); a loop started
 * inside an iteration runs inline, which also makes nesting safe.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE /* sched_getaffinity */

#include "mhac/runtime.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Upper bound on threads, so that a mistaken MHAC_NUM_THREADS cannot exhaust the process. */
enum { kMaxThreads = 256 };
/* A share of iterations is packed as (next << 32) | end, so that its owner (taking `next`)
 * and a thief (taking `end - 1`) change it with one compare-and-swap; a loop of more
 * iterations runs in rounds of at most this many. */
static const int64_t kMaxRound = INT64_C(0x7fffffff);
/* How long a thread spins for the next loop (a worker) or for the last worker (the caller)
 * before it sleeps. */
static const int64_t kSpinNanoseconds = 200 * 1000;

typedef struct Pool {
  pthread_mutex_t mutex;      /* guards everything below but the atomics */
  pthread_cond_t wake;        /* workers wait here for a loop (or for shutdown) */
  pthread_cond_t done;        /* the caller waits here for the last worker */
  pthread_mutex_t submission; /* one loop at a time */
  pthread_t workers[kMaxThreads];
  int32_t numWorkers;  /* threads besides the caller */
  int32_t wanted;      /* threads requested, caller included; 0 = default */
  /* Bumped for every loop (under `mutex`), so workers tell a new loop from the last; read
   * without the mutex by spinning workers. */
  atomic_uint_least64_t generation;
  int32_t sleepers;      /* workers waiting on `wake` */
  atomic_int shutdown;   /* set (with a generation bump) to stop the workers */

  /* The loop being run: iterations [base, base + count) of the task, shared out. */
  mhac_task task;
  void *closure;
  int64_t base;
  int32_t participants;                       /* the caller and the workers */
  atomic_uint_least64_t shares[kMaxThreads];  /* (next << 32) | end, one per participant */
  atomic_int_least32_t active; /* workers still inside the loop */
  atomic_int_least32_t status; /* first failure, or MHAC_OK */
} Pool;

static Pool pool = {
    .mutex = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .submission = PTHREAD_MUTEX_INITIALIZER,
};

static mhac_parallel_for_fn custom;
static void *customUser;

/* Set while a thread runs iterations of the default pool: nested loops then run inline. */
static _Thread_local int insideLoop;

static int32_t defaultThreads(void) {
  const char *text = getenv("MHAC_NUM_THREADS");
  if (text && *text) {
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (end && *end == '\0' && value >= 1)
      return value > kMaxThreads ? kMaxThreads : (int32_t)value;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int cpus = CPU_COUNT(&set);
    if (cpus >= 1)
      return cpus > kMaxThreads ? kMaxThreads : cpus;
  }
  return 1;
}

/* The first iteration left in `share` (its owner) or, with `fromEnd`, the last (a thief);
 * -1 when it is empty. */
static int64_t take(atomic_uint_least64_t *share, int fromEnd) {
  uint64_t packed = atomic_load_explicit(share, memory_order_relaxed);
  for (;;) {
    uint64_t next = packed >> 32, end = packed & 0xffffffffu;
    if (next >= end)
      return -1;
    uint64_t taken = fromEnd ? (next << 32) | (end - 1) : ((next + 1) << 32) | end;
    if (atomic_compare_exchange_weak_explicit(share, &packed, taken, memory_order_relaxed,
                                              memory_order_relaxed))
      return (int64_t)(fromEnd ? end - 1 : next);
  }
}

/* Runs iterations of participant `self`'s share, then steals from the others' until every
 * share is empty. */
static void runIterations(int32_t self) {
  int previous = insideLoop;
  insideLoop = 1;
  int32_t victim = self;
  for (;;) {
    int64_t index = take(&pool.shares[self], 0);
    for (int32_t tried = 0; index < 0 && tried < pool.participants; ++tried) {
      index = take(&pool.shares[victim], 1);
      if (index < 0)
        victim = (victim + 1) % pool.participants;
    }
    if (index < 0)
      break;
    int32_t status = pool.task(pool.closure, pool.base + index);
    if (status != MHAC_OK) {
      int32_t expected = MHAC_OK;
      atomic_compare_exchange_strong(&pool.status, &expected, status);
    }
  }
  insideLoop = previous;
}

static int64_t nanoseconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  sched_yield();
#endif
}

/* Spins until the generation moves past `seen` or kSpinNanoseconds pass; returns whether it
 * moved. */
static int spinForLoop(uint64_t seen) {
  int64_t deadline = nanoseconds() + kSpinNanoseconds;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (atomic_load_explicit(&pool.generation, memory_order_acquire) != seen)
        return 1;
      relax();
    }
    if (nanoseconds() > deadline)
      return 0;
  }
}

/* What a worker starts from: its participant number (1 and up; the caller is 0), and the
 * generation when it was created (any later one is a loop to join). */
typedef struct WorkerStart {
  int32_t participant;
  uint64_t generation;
} WorkerStart;
static WorkerStart starts[kMaxThreads];

static void *workerMain(void *argument) {
  const WorkerStart *start = argument;
  int32_t self = start->participant;
  uint64_t seen = start->generation;
  for (;;) {
    if (!spinForLoop(seen)) {
      /* The generation only changes under the mutex: checked again here, no wake-up is lost. */
      pthread_mutex_lock(&pool.mutex);
      while (atomic_load(&pool.generation) == seen) {
        ++pool.sleepers;
        pthread_cond_wait(&pool.wake, &pool.mutex);
        --pool.sleepers;
      }
      pthread_mutex_unlock(&pool.mutex);
    }
    if (atomic_load(&pool.shutdown))
      break;
    seen = atomic_load(&pool.generation);
    runIterations(self);
    /* The caller checks `active` under the mutex before it sleeps: signalled under it too. */
    if (atomic_fetch_sub(&pool.active, 1) == 1) {
      pthread_mutex_lock(&pool.mutex);
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.mutex);
    }
  }
  return NULL;
}

static void stopWorkers(void) {
  pthread_mutex_lock(&pool.mutex);
  atomic_store(&pool.shutdown, 1);
  atomic_fetch_add(&pool.generation, 1); /* wakes spinning workers too */
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mutex);
  for (int32_t i = 0; i < pool.numWorkers; ++i)
    pthread_join(pool.workers[i], NULL);
  pool.numWorkers = 0;
  atomic_store(&pool.shutdown, 0);
}

/* Starts or stops workers so that the pool has `threads` threads, caller included. Called with
 * `submission` held. A worker that cannot be created just leaves the pool smaller. */
static void resize(int32_t threads) {
  if (pool.numWorkers == threads - 1)
    return;
  stopWorkers();
  for (int32_t i = 0; i < threads - 1; ++i) {
    starts[i] = (WorkerStart){i + 1, atomic_load(&pool.generation)};
    if (pthread_create(&pool.workers[i], NULL, workerMain, &starts[i]) != 0)
      break;
    pool.numWorkers = i + 1;
  }
}

/* Runs iterations [base, base + count) on the caller and the workers; `submission` held. */
static void runRound(int64_t base, int64_t count) {
  pool.base = base;
  pool.participants = pool.numWorkers + 1;
  for (int32_t p = 0; p < pool.participants; ++p) {
    uint64_t first = (uint64_t)(count * p / pool.participants);
    uint64_t end = (uint64_t)(count * (p + 1) / pool.participants);
    atomic_store_explicit(&pool.shares[p], (first << 32) | end, memory_order_relaxed);
  }
  atomic_store(&pool.active, pool.numWorkers);
  if (pool.numWorkers > 0) {
    /* Under the mutex, so that a worker about to sleep sees either the new generation or the
     * broadcast; only sleeping workers need the broadcast. */
    pthread_mutex_lock(&pool.mutex);
    atomic_fetch_add(&pool.generation, 1);
    if (pool.sleepers > 0)
      pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mutex);
  }

  runIterations(0);

  /* Workers finish their last iteration; most loops end here without sleeping. */
  int64_t deadline = nanoseconds() + kSpinNanoseconds;
  while (atomic_load(&pool.active) > 0 && nanoseconds() < deadline)
    for (int i = 0; i < 64 && atomic_load(&pool.active) > 0; ++i)
      relax();
  pthread_mutex_lock(&pool.mutex);
  while (atomic_load(&pool.active) > 0)
    pthread_cond_wait(&pool.done, &pool.mutex);
  pthread_mutex_unlock(&pool.mutex);
}

static int32_t poolParallelFor(mhac_task task, void *closure, int64_t count) {
  if (count <= 0)
    return MHAC_OK;
  if (!task)
    return MHAC_ERROR_INVALID_ARGUMENT;
  if (insideLoop || count == 1) {
    for (int64_t i = 0; i < count; ++i) {
      int32_t status = task(closure, i);
      if (status != MHAC_OK)
        return status;
    }
    return MHAC_OK;
  }

  pthread_mutex_lock(&pool.submission);
  resize(pool.wanted > 0 ? pool.wanted : defaultThreads());
  pool.task = task;
  pool.closure = closure;
  atomic_store(&pool.status, MHAC_OK);
  for (int64_t base = 0; base < count && atomic_load(&pool.status) == MHAC_OK; base += kMaxRound)
    runRound(base, count - base < kMaxRound ? count - base : kMaxRound);
  int32_t status = atomic_load(&pool.status);
  pthread_mutex_unlock(&pool.submission);
  return status;
}

int32_t mhac_parallel_for(mhac_task task, void *closure, int64_t count) {
  if (custom)
    return custom(customUser, task, closure, count);
  return poolParallelFor(task, closure, count);
}

void mhac_set_parallel_for(mhac_parallel_for_fn fn, void *user) {
  custom = fn;
  customUser = user;
}

int32_t mhac_set_num_threads(int32_t count) {
  if (count < 0)
    return MHAC_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&pool.submission);
  pool.wanted = count > kMaxThreads ? kMaxThreads : count;
  pthread_mutex_unlock(&pool.submission);
  return MHAC_OK;
}

int32_t mhac_get_num_threads(void) { return pool.wanted > 0 ? pool.wanted : defaultThreads(); }
