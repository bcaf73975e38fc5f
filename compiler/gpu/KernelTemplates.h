//===- KernelTemplates.h - the CUDA kernels, specialized per layer -*- C++ -*-===//
//
// Part of mhac. The GPU kernels are written as MLIR (compiler/gpu/kernels/*.mlir, compiled in)
// with their sizes and tiles as arguments marked `mhac.bind`. A layer's kernel is a copy of
// its template with those arguments replaced by constants, its `mhac.storage` tensors retyped
// to the layer's element type, and its `mhac.unroll` loops, whose bounds are then constant,
// unrolled: the thread tiles' arrays then have constant indices, and become one scalar slot
// per element, which mem2reg turns into registers.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_GPU_KERNELTEMPLATES_H
#define MHAC_COMPILER_GPU_KERNELTEMPLATES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <set>
#include <string>
#include <variant>

namespace mhac {

/// What a specialized kernel is made of: the template (a kernel of compiler/gpu/kernels/NAME.mlir
/// named NAME), the values of its `mhac.bind` arguments, the `mhac.storage` tensors that
/// hold bf16 (the others stay f32), and the threads of its blocks.
struct KernelSpecialization {
  std::string templateName;
  std::map<std::string, std::variant<int64_t, float>> bindings;
  std::set<std::string> bf16Tensors;
  /// Becomes the kernel's `known_block_size` (PTX `.reqntid`): ptxas then keeps each thread's
  /// registers within what a block of that many threads may have (65536 / threads), spilling
  /// if it must, so that no launch fails for want of registers.
  int64_t threads = 0;
};

/// Adds to `module` a kernel `name` made from `specialization`. Fails (with a diagnostic on the
/// module) when an argument is left unbound, a binding names no argument, or an unrolled loop's
/// bounds are not constant: all internal errors.
mlir::FailureOr<mlir::gpu::GPUFuncOp>
addSpecializedKernel(mlir::gpu::GPUModuleOp module, llvm::StringRef name,
                     const KernelSpecialization &specialization);

} // namespace mhac

#endif // MHAC_COMPILER_GPU_KERNELTEMPLATES_H
