/*===- HalideHooks.c - Halide's runtime hooks, served by mhac's runtime ---===*
 *
 * Part of mhac.
 *
 * Code from the Halide backend carries its own copy of Halide's runtime, made internal. mhac
 * replaces four of its functions with these, so that both backends share one thread pool, one
 * allocator and one way of failing: parallel loops run on mhac_parallel_for (and obey
 * mhac_set_num_threads, MHAC_NUM_THREADS and mhac_set_parallel_for), buffers come from
 * mhac_alloc, and an error becomes the status the pipeline returns, never abort().
 * The signatures are those of halide_do_par_for, halide_malloc, halide_free and halide_error.
 *
 *===----------------------------------------------------------------------===*/

#include "mhac/runtime.h"

typedef int (*HalideTask)(void *user_context, int index, uint8_t *closure);

typedef struct HalideLoop {
  HalideTask task;
  void *user_context;
  int min;
  uint8_t *closure;
} HalideLoop;

static int32_t runHalideTask(void *closure, int64_t index) {
  const HalideLoop *loop = closure;
  /* Halide's tasks return 0 or a negative halide_error_code_t, which is passed back as is. */
  return loop->task(loop->user_context, loop->min + (int)index, loop->closure);
}

int mhac_halide_do_par_for(void *user_context, HalideTask task, int min, int size,
                           uint8_t *closure) {
  HalideLoop loop = {task, user_context, min, closure};
  return size > 0 ? mhac_parallel_for(runHalideTask, &loop, size) : 0;
}

void *mhac_halide_malloc(void *user_context, size_t size) {
  (void)user_context;
  return mhac_alloc(size);
}

void mhac_halide_free(void *user_context, void *pointer) {
  (void)user_context;
  mhac_free(pointer);
}

void mhac_halide_error(void *user_context, const char *message) {
  /* The pipeline returns the error's code, which the entry point turns into its status. */
  (void)user_context;
  (void)message;
}
