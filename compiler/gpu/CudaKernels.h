//===- CudaKernels.h - a layer's kernels on a CUDA GPU ----------*- C++ -*-===//
//
// Part of mhac. A layer runs on the GPU as five launches: the query, key and value
// projections (two launches of one kernel for keys and values), fused attention, and the
// output projection. Their intermediates (queries, keys, values, attention output) are in a
// workspace of the call, in the layer's element type. The projections of bf16 layers run on
// tensor cores (when their input rows are whole 16-byte chunks); everything else in f32 FMAs,
// which keep f32 layers within their accuracy (TF32 tensor cores would not).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_GPU_CUDAKERNELS_H
#define MHAC_COMPILER_GPU_CUDAKERNELS_H

#include "compiler/frontend/LayerSpec.h"
#include "compiler/schedules/Schedule.h"
#include "compiler/target/CpuTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mhac {

/// How the host launches one kernel.
struct CudaLaunch {
  std::string kernel;      ///< its name in the device image
  int64_t threads = 0;     ///< threads per block (along x)
  int64_t sharedBytes = 0; ///< dynamic shared memory per block
  /// The tile of the output a block computes: a projection's rows (over the grid's x) and
  /// columns (over y); attention's query rows.
  int64_t tileRows = 0, tileCols = 0;
  /// Attention's heads per block: the grid's y covers heads / headsPerBlock.
  int64_t headsPerBlock = 1;
  /// Bytes a projection's input and weights must be aligned to (0: any element alignment).
  int64_t operandAlignment = 0;
};

/// The kernels of one layer, and what the host needs to launch them.
struct CudaLayerKernels {
  CudaLaunch projectQuery, projectKeyValue, attention, projectOutput;
  CudaSchedule schedule;
};

/// Registers the dialects the kernels and their lowering to device code use.
void registerCudaDialects(mlir::DialectRegistry &registry);

/// The name of the gpu.module holding `layer`'s kernels.
std::string deviceModuleName(const LayerSpec &layer);

/// Adds a gpu.module with the kernels of `layer`, as `schedule` tiles them, to `module`.
llvm::Expected<CudaLayerKernels> addLayerKernels(mlir::ModuleOp module, const LayerSpec &layer,
                                                 const Schedule &schedule);

/// What device code to embed.
enum class DeviceCodeFormat {
  Fatbin, ///< a fatbinary: the cubin for the chip, and the PTX for later ones (needs ptxas)
  Ptx,    ///< PTX alone, which the driver compiles when the module is loaded
};

/// Lowers the gpu.modules of `module` to NVVM and then to `format`, for `device`. On return the
/// module holds one gpu.binary per gpu.module.
llvm::Error lowerToDeviceCode(mlir::ModuleOp module, const CudaDevice &device,
                              DeviceCodeFormat format);

/// Lowers them to the NVVM dialect only (`mhac compile --emit=nvvm`).
llvm::Error lowerToNVVM(mlir::ModuleOp module, const CudaDevice &device);

/// The device code of the gpu.binary named `name` in `module`, once lowered.
llvm::Expected<std::string> deviceImage(mlir::ModuleOp module, llvm::StringRef name);

/// Where ptxas comes from: the CUDA toolkit at $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, or the one
/// whose ptxas is on PATH, or /usr/local/cuda; empty when there is none.
std::string findCudaToolkit();

} // namespace mhac

#endif // MHAC_COMPILER_GPU_CUDAKERNELS_H
