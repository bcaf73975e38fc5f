//===- EntryPoints.h - the C entry points of compiled layers ----*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_ENTRYPOINTS_H
#define MHAC_COMPILER_TARGET_ENTRYPOINTS_H

#include "compiler/target/LayerABI.h"

#include "llvm/Support/Error.h"

namespace llvm {
class Module;
} // namespace llvm

namespace mhac {

/// Adds to `module` (LLVM IR of lowered layers, one function per layer named after it) what
/// the C header promises for each layer; the layer functions become internal kernels:
///   int32_t NAME_run(tensors..., out, [batch], [seq], [kv_seq])   checks, then runs the kernel
///   int32_t NAME_run_packed(void *const *tensors, const mhac_sizes *sizes)
///   const mhac_layer *NAME_metadata(void)
/// and `mhac_module_layers()`, the null-terminated list of the module's layers (a weak symbol,
/// for programs that load the module as a shared library).
llvm::Error addEntryPoints(llvm::Module &module, llvm::ArrayRef<LayerABI> layers);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_ENTRYPOINTS_H
