//===- CodeEmitter.cpp - LLVM dialect to LLVM IR to machine code ----------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/CodeEmitter.h"

#include "compiler/target/EntryPoints.h"
#include "compiler/target/SingleLaneMaskedStores.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace mhac {

Expected<std::unique_ptr<Module>> translateAndOptimize(mlir::ModuleOp module,
                                                       ArrayRef<LayerABI> layers,
                                                       TargetMachine &machine, StringRef tuneCpu,
                                                       LLVMContext &context) {
  std::unique_ptr<Module> llvmModule = mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return createStringError(inconvertibleErrorCode(), "translation to LLVM IR failed");
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  for (Function &fn : *llvmModule) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", machine.getTargetCPU());
    if (!tuneCpu.empty())
      fn.addFnAttr("tune-cpu", tuneCpu);
    if (!machine.getTargetFeatureString().empty())
      fn.addFnAttr("target-features", machine.getTargetFeatureString());
  }
  // MLIR's generic allocation functions are the runtime's caching allocator.
  for (auto [from, to] : {std::pair{"_mlir_memref_to_llvm_alloc", "mhac_alloc"},
                          std::pair{"_mlir_memref_to_llvm_free", "mhac_free"}})
    if (Function *fn = llvmModule->getFunction(from))
      fn->setName(to);
  if (Error error = addEntryPoints(*llvmModule, layers, machine.getTargetFeatureString()))
    return std::move(error);

  std::string problems;
  raw_string_ostream problemStream(problems);
  if (verifyModule(*llvmModule, &problemStream))
    return createStringError(inconvertibleErrorCode(), "invalid LLVM IR: %s", problems.c_str());

  optimizeModule(*llvmModule, machine);
  return llvmModule;
}

void optimizeModule(Module &module, TargetMachine &machine) {
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(OptimizationLevel::O3).run(module, mam);
}

Error emitMachineCode(Module &module, TargetMachine &machine, raw_pwrite_stream &out,
                      CodeGenFileType kind) {
  scalarizeSingleLaneMaskedStores(module);
  legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, out, nullptr, kind))
    return createStringError(inconvertibleErrorCode(), "the target cannot emit this file type");
  passes.run(module);
  return Error::success();
}

} // namespace mhac
