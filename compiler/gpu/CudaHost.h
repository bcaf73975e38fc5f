//===- CudaHost.h - the host side of a layer's CUDA kernels -----*- C++ -*-===//
//
// Part of mhac. Written with LLVM's IRBuilder: the layer function and its preparation function
// that addEntryPoints wraps (KernelConvention::CudaLaunches), which queue the layer's launches
// through mhac's runtime, and the device image they launch from.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_GPU_CUDAHOST_H
#define MHAC_COMPILER_GPU_CUDAHOST_H

#include "compiler/gpu/CudaKernels.h"
#include "compiler/target/LayerABI.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace llvm {
class Module;
} // namespace llvm

namespace mhac {

/// Adds to `module` the device image `image` of `layer` (a fatbinary, or PTX) and the host
/// functions that launch `kernels` from it:
///   int32_t NAME(tensors as memref descriptors..., void *stream)
///     allocates the intermediates on the stream, queues the five launches, frees them;
///   int32_t mhac_prepare_NAME(parameters..., prepared parameters..., void *stream)
///     copies the parameters into the prepared block (the kernels read PyTorch's layout).
/// Each returns an mhac_status; the parameters' prepared shapes must be set.
llvm::Error addCudaHostCode(llvm::Module &module, const LayerABI &layer,
                            const CudaLayerKernels &kernels, llvm::StringRef image);

} // namespace mhac

#endif // MHAC_COMPILER_GPU_CUDAHOST_H
