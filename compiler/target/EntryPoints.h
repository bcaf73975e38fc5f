//===- EntryPoints.h - the C entry points of compiled layers ----*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_ENTRYPOINTS_H
#define MHAC_COMPILER_TARGET_ENTRYPOINTS_H

#include "compiler/target/LayerABI.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace llvm {
class Module;
} // namespace llvm

namespace mhac {

/// How the kernels of a layer take their tensors.
enum class KernelConvention {
  /// MLIR's: each tensor a memref descriptor (allocated and aligned pointers, offset, sizes,
  /// strides) spread over scalar arguments; no result.
  MemrefDescriptors,
  /// Halide's: each tensor a pointer to a halide_buffer_t (dimensions innermost first, int32
  /// extents and strides); an int result, 0 on success or a halide_error_code_t.
  HalideBuffers,
  /// The CUDA target's host functions (CudaHost.h): memref descriptors of device memory, then
  /// the stream; an mhac_status result. The entry points then take a stream last, NAME_run
  /// reads the parameters where they are, and kv_lens (device memory) is clamped by the
  /// kernels rather than checked.
  CudaLaunches,
};

/// Adds to `module` (LLVM IR of lowered layers: per layer a function named after it and its
/// preparation function, taking their tensors by `convention`) what the C header promises for
/// each layer; the layer and preparation functions become internal kernels:
///   int32_t NAME_run(tensors..., out, [batch], [seq], [kv_seq])   prepares, then runs
///   int32_t NAME_prepare(parameters..., void *prepared)           NAME_PREPARED_BYTES
///   int32_t NAME_run_prepared(x, [memory], prepared, [kv_lens], out, [sizes...])
///   their packed forms NAME_run_packed, NAME_prepare_packed, NAME_run_prepared_packed
///   const mhac_layer *NAME_metadata(void)
/// Each layer's metadata (an internal global, metadataSymbol(layer)) lists the features enabled
/// in `targetFeatures` (LLVM's feature string the code is compiled with).
llvm::Error addEntryPoints(llvm::Module &module, llvm::ArrayRef<LayerABI> layers,
                           llvm::StringRef targetFeatures,
                           KernelConvention convention = KernelConvention::MemrefDescriptors);

/// Adds `mhac_module_layers()`, the null-terminated list of the metadata of `layers` (a weak
/// symbol, for programs that load the module as a shared library). Called once the module
/// holds the entry points of every layer: layers compiled separately are linked first.
llvm::Error addModuleLayerList(llvm::Module &module, llvm::ArrayRef<LayerABI> layers);

/// The enabled features of LLVM's feature string ("+avx2,-avx512f,+fma" -> "avx2,fma"), as
/// mhac_layer.cpu_features lists them: code compiled with it may use any of them, so the runtime
/// checks them all before running it.
std::string enabledCpuFeatures(llvm::StringRef targetFeatures);

/// The name of the internal global holding the mhac_layer of `layer`.
inline std::string metadataSymbol(const LayerABI &layer) { return layer.cName() + ".layer"; }

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_ENTRYPOINTS_H
