/*===- Cuda.c - the CUDA driver, loaded at run time -------------------------===*
 *
 * Part of mhac. The few driver calls CUDA layers and mha-run need, through dlopen of
 * libcuda.so.1: a program that links mhac's runtime never links CUDA, and runs on machines
 * without it. The driver's types are declared here as the driver API defines them (handles are
 * pointers, device memory a 64-bit address), so no CUDA header is needed to build the runtime.
 *
 *===----------------------------------------------------------------------===*/

#include "mhac/runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_STUB_LIBRARY = 34, /* the toolkit's stub libcuda.so, on a machine without a driver */
  CUDA_ERROR_NO_DEVICE = 100,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* Above this, a kernel must opt in to dynamic shared memory. */
#define DEFAULT_SHARED_BYTES (48 * 1024)

/* The driver's entry points, by their versioned names where the API has several. */
static struct {
  CUresult (*init)(unsigned);
  CUresult (*getErrorName)(CUresult, const char **);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*ctxGetCurrent)(CUcontext *);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*ctxGetDevice)(CUdevice *);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*moduleLoadData)(CUmodule *, const void *);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*funcSetAttribute)(CUfunction, int, int);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **, void **);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*memFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*memcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*eventCreate)(CUevent *, unsigned);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*eventSynchronize)(CUevent);
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*eventDestroy)(CUevent);
} cu;

static pthread_once_t loadOnce = PTHREAD_ONCE_INIT;
/* MHAC_OK once the driver is loaded and initialized; else why not. */
static int32_t loadStatus = MHAC_ERROR_NO_DEVICE;
static char loadError[512];

/* Serializes the lazy loading of modules and functions. */
static pthread_mutex_t loadMutex = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local char lastError[512];

const char *mhac_cuda_last_error(void) { return lastError; }

/* Records that `call` failed with `result`; returns the status it maps to. */
static int32_t driverError(const char *call, CUresult result) {
  const char *name = NULL, *text = NULL;
  if (cu.getErrorName && cu.getErrorName(result, &name) == CUDA_SUCCESS && name &&
      cu.getErrorString && cu.getErrorString(result, &text) == CUDA_SUCCESS && text)
    snprintf(lastError, sizeof lastError, "%s: %s (%s)", call, name, text);
  else
    snprintf(lastError, sizeof lastError, "%s: CUDA error %d", call, result);
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_STUB_LIBRARY)
    return MHAC_ERROR_NO_DEVICE;
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    return MHAC_ERROR_OUT_OF_MEMORY;
  return MHAC_ERROR_DRIVER;
}

#define CHECK(call, args)                                                                          \
  do {                                                                                             \
    CUresult result_ = cu.call args;                                                               \
    if (result_ != CUDA_SUCCESS)                                                                   \
      return driverError("cu" #call, result_);                                                     \
  } while (0)

static void loadDriver(void) {
  /* MHAC_CUDA_DRIVER names another library, for tests of the paths without a GPU. */
  const char *path = getenv("MHAC_CUDA_DRIVER");
  void *library = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    snprintf(loadError, sizeof loadError, "cannot load the CUDA driver (%s): %s",
             path && *path ? path : "libcuda.so.1", dlerror());
    return;
  }
  struct {
    void **slot;
    const char *name;
  } symbols[] = {
      {(void **)&cu.init, "cuInit"},
      {(void **)&cu.getErrorName, "cuGetErrorName"},
      {(void **)&cu.getErrorString, "cuGetErrorString"},
      {(void **)&cu.deviceGet, "cuDeviceGet"},
      {(void **)&cu.deviceGetAttribute, "cuDeviceGetAttribute"},
      {(void **)&cu.deviceGetName, "cuDeviceGetName"},
      {(void **)&cu.ctxGetCurrent, "cuCtxGetCurrent"},
      {(void **)&cu.ctxSetCurrent, "cuCtxSetCurrent"},
      {(void **)&cu.ctxGetDevice, "cuCtxGetDevice"},
      {(void **)&cu.primaryCtxRetain, "cuDevicePrimaryCtxRetain"},
      {(void **)&cu.moduleLoadData, "cuModuleLoadData"},
      {(void **)&cu.moduleGetFunction, "cuModuleGetFunction"},
      {(void **)&cu.funcSetAttribute, "cuFuncSetAttribute"},
      {(void **)&cu.launchKernel, "cuLaunchKernel"},
      {(void **)&cu.memAlloc, "cuMemAlloc_v2"},
      {(void **)&cu.memFree, "cuMemFree_v2"},
      {(void **)&cu.memAllocAsync, "cuMemAllocAsync"},
      {(void **)&cu.memFreeAsync, "cuMemFreeAsync"},
      {(void **)&cu.memcpyHtoD, "cuMemcpyHtoD_v2"},
      {(void **)&cu.memcpyDtoH, "cuMemcpyDtoH_v2"},
      {(void **)&cu.memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
      {(void **)&cu.streamSynchronize, "cuStreamSynchronize"},
      {(void **)&cu.eventCreate, "cuEventCreate"},
      {(void **)&cu.eventRecord, "cuEventRecord"},
      {(void **)&cu.eventSynchronize, "cuEventSynchronize"},
      {(void **)&cu.eventElapsedTime, "cuEventElapsedTime"},
      {(void **)&cu.eventDestroy, "cuEventDestroy_v2"},
  };
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
    *symbols[i].slot = dlsym(library, symbols[i].name);
    if (!*symbols[i].slot) {
      snprintf(loadError, sizeof loadError, "the CUDA driver has no %s: it is older than CUDA 11.2",
               symbols[i].name);
      memset(&cu, 0, sizeof cu);
      return;
    }
  }
  CUresult result = cu.init(0);
  if (result != CUDA_SUCCESS) {
    loadStatus = driverError("cuInit", result);
    snprintf(loadError, sizeof loadError, "%s", lastError);
    return;
  }
  loadStatus = MHAC_OK;
}

/* Loads the driver once, and makes sure the calling thread has a context: the current one, or
 * else device 0's primary context. */
static int32_t ready(void) {
  pthread_once(&loadOnce, loadDriver);
  if (loadStatus != MHAC_OK) {
    snprintf(lastError, sizeof lastError, "%s", loadError);
    return loadStatus;
  }
  CUcontext context = NULL;
  CHECK(ctxGetCurrent, (&context));
  if (context)
    return MHAC_OK;
  CUdevice device;
  CHECK(deviceGet, (&device, 0));
  CHECK(primaryCtxRetain, (&context, device));
  CHECK(ctxSetCurrent, (context));
  return MHAC_OK;
}

#define READY()                                                                                    \
  do {                                                                                             \
    int32_t status_ = ready();                                                                     \
    if (status_ != MHAC_OK)                                                                        \
      return status_;                                                                              \
  } while (0)

int32_t mhac_cuda_device(mhac_cuda_device_info *info) {
  if (!info)
    return MHAC_ERROR_INVALID_ARGUMENT;
  READY();
  CUdevice device;
  CHECK(ctxGetDevice, (&device));
  CHECK(deviceGetName, (info->name, (int)sizeof info->name, device));
  CHECK(deviceGetAttribute, (&info->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK(deviceGetAttribute, (&info->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  CHECK(deviceGetAttribute,
        (&info->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  CHECK(deviceGetAttribute, (&info->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device));
  return MHAC_OK;
}

int32_t mhac_cuda_malloc(void **pointer, size_t bytes) {
  if (!pointer)
    return MHAC_ERROR_INVALID_ARGUMENT;
  *pointer = NULL;
  READY();
  CUdeviceptr address = 0;
  CHECK(memAlloc, (&address, bytes ? bytes : 1));
  *pointer = (void *)(uintptr_t)address;
  return MHAC_OK;
}

int32_t mhac_cuda_free(void *pointer) {
  if (!pointer)
    return MHAC_OK;
  READY();
  CHECK(memFree, ((CUdeviceptr)(uintptr_t)pointer));
  return MHAC_OK;
}

int32_t mhac_cuda_copy_to_device(void *device, const void *host, size_t bytes) {
  READY();
  CHECK(memcpyHtoD, ((CUdeviceptr)(uintptr_t)device, host, bytes));
  return MHAC_OK;
}

int32_t mhac_cuda_copy_to_host(void *host, const void *device, size_t bytes) {
  READY();
  CHECK(memcpyDtoH, (host, (CUdeviceptr)(uintptr_t)device, bytes));
  return MHAC_OK;
}

int32_t mhac_cuda_synchronize(void *stream) {
  READY();
  CHECK(streamSynchronize, ((CUstream)stream));
  return MHAC_OK;
}

int32_t mhac_cuda_time_calls(int32_t (*call)(void *closure), void *closure, int32_t count,
                             double *milliseconds) {
  if (!call || count < 1 || !milliseconds)
    return MHAC_ERROR_INVALID_ARGUMENT;
  READY();
  CUevent start = NULL, stop = NULL;
  CHECK(eventCreate, (&start, 0));
  CUresult result = cu.eventCreate(&stop, 0);
  int32_t status = result == CUDA_SUCCESS ? MHAC_OK : driverError("cuEventCreate", result);
  if (status == MHAC_OK && (result = cu.eventRecord(start, NULL)) != CUDA_SUCCESS)
    status = driverError("cuEventRecord", result);
  for (int32_t i = 0; status == MHAC_OK && i < count; ++i)
    status = call(closure);
  if (status == MHAC_OK && (result = cu.eventRecord(stop, NULL)) != CUDA_SUCCESS)
    status = driverError("cuEventRecord", result);
  if (status == MHAC_OK && (result = cu.eventSynchronize(stop)) != CUDA_SUCCESS)
    status = driverError("cuEventSynchronize", result);
  float elapsed = 0;
  if (status == MHAC_OK && (result = cu.eventElapsedTime(&elapsed, start, stop)) != CUDA_SUCCESS)
    status = driverError("cuEventElapsedTime", result);
  *milliseconds = elapsed;
  cu.eventDestroy(start);
  if (stop)
    cu.eventDestroy(stop);
  return status;
}

/* The kernel's function, loading its image's module first if it is not loaded yet. */
static int32_t lookUp(mhac_cuda_kernel *kernel, int32_t sharedBytes, CUfunction *function) {
  *function = __atomic_load_n(&kernel->function, __ATOMIC_ACQUIRE);
  if (*function)
    return MHAC_OK;
  pthread_mutex_lock(&loadMutex);
  int32_t status = MHAC_OK;
  CUresult result = CUDA_SUCCESS;
  CUmodule module = __atomic_load_n(&kernel->image->module, __ATOMIC_ACQUIRE);
  if (!module) {
    if ((result = cu.moduleLoadData(&module, kernel->image->data)) != CUDA_SUCCESS)
      status = driverError("cuModuleLoadData", result);
    else
      __atomic_store_n(&kernel->image->module, module, __ATOMIC_RELEASE);
  }
  CUfunction found = NULL;
  if (status == MHAC_OK &&
      (result = cu.moduleGetFunction(&found, module, kernel->name)) != CUDA_SUCCESS)
    status = driverError("cuModuleGetFunction", result);
  /* A kernel's shared memory is the same at every launch: its opt-in is set once. */
  if (status == MHAC_OK && sharedBytes > DEFAULT_SHARED_BYTES &&
      (result = cu.funcSetAttribute(found, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    sharedBytes)) != CUDA_SUCCESS)
    status = driverError("cuFuncSetAttribute", result);
  if (status == MHAC_OK) {
    __atomic_store_n(&kernel->function, found, __ATOMIC_RELEASE);
    *function = found;
  }
  pthread_mutex_unlock(&loadMutex);
  return status;
}

int32_t mhac_cuda_launch(mhac_cuda_kernel *kernel, int64_t grid_x, int64_t grid_y, int32_t block_x,
                         int32_t shared_bytes, void *stream, void **params) {
  if (!kernel || !params || block_x < 1 || shared_bytes < 0)
    return MHAC_ERROR_INVALID_ARGUMENT;
  if (grid_x < 0 || grid_y < 0 || grid_x > 2147483647 || grid_y > 65535)
    return MHAC_ERROR_BAD_SIZE;
  if (grid_x == 0 || grid_y == 0)
    return MHAC_OK;
  READY();
  CUfunction function;
  int32_t status = lookUp(kernel, shared_bytes, &function);
  if (status != MHAC_OK)
    return status;
  CHECK(launchKernel, (function, (unsigned)grid_x, (unsigned)grid_y, 1, (unsigned)block_x, 1, 1,
                       (unsigned)shared_bytes, (CUstream)stream, params, NULL));
  return MHAC_OK;
}

int32_t mhac_cuda_alloc_async(void **pointer, size_t bytes, void *stream) {
  if (!pointer)
    return MHAC_ERROR_INVALID_ARGUMENT;
  *pointer = NULL;
  READY();
  CUdeviceptr address = 0;
  CHECK(memAllocAsync, (&address, bytes ? bytes : 1, (CUstream)stream));
  *pointer = (void *)(uintptr_t)address;
  return MHAC_OK;
}

int32_t mhac_cuda_free_async(void *pointer, void *stream) {
  if (!pointer)
    return MHAC_OK;
  READY();
  CHECK(memFreeAsync, ((CUdeviceptr)(uintptr_t)pointer, (CUstream)stream));
  return MHAC_OK;
}

int32_t mhac_cuda_copy_async(void *destination, const void *source, size_t bytes, void *stream) {
  if (!bytes)
    return MHAC_OK;
  READY();
  CHECK(memcpyDtoDAsync, ((CUdeviceptr)(uintptr_t)destination, (CUdeviceptr)(uintptr_t)source,
                          bytes, (CUstream)stream));
  return MHAC_OK;
}
