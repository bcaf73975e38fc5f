/* A stand-in for libcuda.so.1 that runs nothing: device memory is host memory, and every call
 * the runtime makes is printed, so that a test can follow what a CUDA layer asks of the driver
 * (module loads, lookups, launches with their grids and sizes, workspaces, copies) on a machine
 * without a GPU. Loaded through MHAC_CUDA_DRIVER. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int context;
static const char *names[64];
static int functions;

CUresult cuInit(unsigned flags) { return 0; }
CUresult cuGetErrorName(CUresult result, const char **name) {
  *name = "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuGetErrorString(CUresult result, const char **text) {
  *text = "the fake driver";
  return 0;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return 0;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  *value = attribute == 75 ? 9 : attribute == 76 ? 0 : attribute == 16 ? 132 : 1980000;
  return 0;
}
CUresult cuDeviceGetName(char *name, int size, int device) {
  snprintf(name, (size_t)size, "fake GPU");
  return 0;
}
CUresult cuCtxGetCurrent(void **current) {
  *current = context ? &context : NULL;
  return 0;
}
CUresult cuCtxSetCurrent(void *current) {
  context = current != NULL;
  printf("driver: context set\n");
  return 0;
}
CUresult cuCtxGetDevice(int *device) {
  *device = 0;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **primary, int device) {
  *primary = &context;
  printf("driver: primary context of device %d\n", device);
  return 0;
}
CUresult cuModuleLoadData(void **module, const void *image) {
  uint32_t magic;
  memcpy(&magic, image, sizeof magic);
  printf("driver: module loaded (%s)\n", magic == 0xBA55ED50u ? "fatbinary" : "PTX");
  *module = (void *)image;
  return 0;
}
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  printf("driver: function %s\n", name);
  names[functions] = name;
  *function = (void *)(intptr_t)(++functions);
  return 0;
}
CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  printf("driver: %s may use %d bytes of shared memory\n", names[(intptr_t)function - 1], value);
  return 0;
}
/* Kernel parameters: memref<?xT> tensors as (allocated, aligned, offset, size, stride), then
 * index values; a projection has 4 tensors and its rows, attention 5 tensors and 2 sizes. */
CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
  const char *name = names[(intptr_t)function - 1];
  int tensors = strstr(name, "_attention") ? 5 : 4;
  printf("driver: launch %s grid %ux%ux%u block %ux%ux%u shared %u sizes", name, gx, gy, gz, bx,
         by, bz, shared);
  for (int i = 0; i < tensors; ++i)
    printf(" %lld", *(long long *)params[5 * i + 3]);
  printf(" indices");
  for (int i = 5 * tensors; i < 5 * tensors + (tensors == 5 ? 2 : 1); ++i)
    printf(" %lld", *(long long *)params[i]);
  printf("\n");
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  *pointer = (CUdeviceptr)(uintptr_t)calloc(1, bytes);
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  free((void *)(uintptr_t)pointer);
  return 0;
}
CUresult cuMemAllocAsync(CUdeviceptr *pointer, size_t bytes, void *stream) {
  printf("driver: workspace of %zu bytes on stream %p\n", bytes, stream);
  *pointer = (CUdeviceptr)(uintptr_t)aligned_alloc(256, (bytes + 255) / 256 * 256);
  return 0;
}
CUresult cuMemFreeAsync(CUdeviceptr pointer, void *stream) {
  printf("driver: workspace freed\n");
  free((void *)(uintptr_t)pointer);
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr device, const void *host, size_t bytes) {
  memcpy((void *)(uintptr_t)device, host, bytes);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *host, CUdeviceptr device, size_t bytes) {
  memcpy(host, (void *)(uintptr_t)device, bytes);
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes, void *stream) {
  printf("driver: copy of %zu bytes\n", bytes);
  memcpy((void *)(uintptr_t)to, (void *)(uintptr_t)from, bytes);
  return 0;
}
CUresult cuStreamSynchronize(void *stream) { return 0; }
CUresult cuEventCreate(void **event, unsigned flags) {
  *event = malloc(1);
  return 0;
}
CUresult cuEventRecord(void *event, void *stream) { return 0; }
CUresult cuEventSynchronize(void *event) { return 0; }
CUresult cuEventElapsedTime(float *milliseconds, void *start, void *stop) {
  *milliseconds = 1.0f;
  return 0;
}
CUresult cuEventDestroy_v2(void *event) {
  free(event);
  return 0;
}
