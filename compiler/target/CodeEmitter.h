//===- CodeEmitter.h - LLVM dialect to LLVM IR to machine code --*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_CODEEMITTER_H
#define MHAC_COMPILER_TARGET_CODEEMITTER_H

#include "compiler/target/LayerABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace mhac {

/// Translates a module in the LLVM dialect to LLVM IR for `machine`, adds the C entry points of
/// `layers`, and optimizes it at O3. Functions are tuned for `tuneCpu` where it is not empty.
llvm::Expected<std::unique_ptr<llvm::Module>> translateAndOptimize(mlir::ModuleOp module,
                                                                   llvm::ArrayRef<LayerABI> layers,
                                                                   llvm::TargetMachine &machine,
                                                                   llvm::StringRef tuneCpu,
                                                                   llvm::LLVMContext &context);

/// Runs LLVM's O3 pipeline, tuned for `machine`, on `module`.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

/// Writes `module` as an object file or assembly, after working around a back-end bug its
/// masked stores may meet (scalarizeSingleLaneMaskedStores).
llvm::Error emitMachineCode(llvm::Module &module, llvm::TargetMachine &machine,
                            llvm::raw_pwrite_stream &out, llvm::CodeGenFileType kind);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_CODEEMITTER_H
