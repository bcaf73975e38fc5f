//===- LayerCompiler.h - layers to one LLVM module, in parallel -*- C++ -*-===//
//
// Part of mhac. The back half of `mhac compile`: every (layer, target) pair is a unit that goes
// from the mha dialect to optimized LLVM IR in its own MLIR and LLVM contexts, on a thread of
// its own (`-j`); the units are then linked into one module: per target, the layers with their
// module list; across targets, variants behind dispatchers. Machine code comes from that
// module in one piece, so a plain NAME.o needs no linker.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_LAYERCOMPILER_H
#define MHAC_TOOLS_MHAC_LAYERCOMPILER_H

#include "compiler/frontend/LayerSpec.h"
#include "compiler/pipeline/CpuPipeline.h"
#include "compiler/target/CpuTarget.h"
#include "compiler/target/LayerABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace mhac {

class StageProgress;

/// One target of a compilation: the CPU and the schedule of every layer for it.
struct TargetPlan {
  CpuTarget target;
  LayerSchedules schedules;
};

struct LayerCompilation {
  const std::vector<LayerSpec> *layers = nullptr;
  std::vector<TargetPlan> plans; ///< in --target's order
  std::string symbolPrefix;
  std::string sourceName; ///< for locations in the IR
  unsigned jobs = 0;      ///< 0: every CPU the process may use
  Backend backend = Backend::Mlir;
  /// Applies MLIR's command-line options (timing, IR printing) to each pass manager.
  PassManagerSetup setupPassManager;
};

struct CompiledLayers {
  /// Every layer's code with its C entry points, the module's layer list, and with several
  /// targets their dispatchers.
  std::unique_ptr<llvm::Module> module;
  /// The machine to emit `module` with: the target's, or a baseline x86-64 one for several
  /// targets (every variant carries its CPU in its functions' attributes).
  std::unique_ptr<llvm::TargetMachine> machine;
  /// The layers' ABI for the header: with several targets, the largest prepared block and the
  /// schedule of each target.
  std::vector<LayerABI> abis;
};

/// The layers' module in the mha dialect, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildVerifiedModule(mlir::MLIRContext &context, llvm::ArrayRef<LayerSpec> layers,
                    llvm::StringRef sourceName);

/// The two steps of the lowering, mha to linalg and linalg to the LLVM dialect, with `plan`'s
/// schedules; each is timed in a scope of its own under `timing` (MLIR's timers take nested
/// scopes from several threads, and sum those of the same name), its pass managers set up by
/// `setup` (MLIR's command-line options) where given.
llvm::Error lowerToLinalg(mlir::ModuleOp module, const TargetPlan &plan,
                          const PassManagerSetup &setup, mlir::TimingScope &timing);
llvm::Error lowerToLLVMDialect(mlir::ModuleOp module, const TargetPlan &plan,
                               const PassManagerSetup &setup, mlir::TimingScope &timing);

/// Compiles `compilation` into one LLVM module in `context`. Reports progress on `progress`
/// and times the stages under `timing`.
llvm::Expected<CompiledLayers> compileLayers(const LayerCompilation &compilation,
                                             llvm::LLVMContext &context, StageProgress &progress,
                                             mlir::TimingScope &timing);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_LAYERCOMPILER_H
