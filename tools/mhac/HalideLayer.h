//===- HalideLayer.h - a layer through the Halide backend -------*- C++ -*-===//
//
// Part of mhac. `--backend halide`: the layer's pipelines come from mhac-halide (a process of
// its own, built against libHalide) as LLVM bitcode with Halide's runtime; here that bitcode
// gets the same C entry points, metadata and header as the MLIR backend's kernels, Halide's
// runtime hooks are routed to mhac's runtime, and everything but the entry points becomes
// internal, so that any number of Halide layers link into one program.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_HALIDELAYER_H
#define MHAC_TOOLS_MHAC_HALIDELAYER_H

#include "compiler/frontend/LayerSpec.h"
#include "compiler/schedules/Schedule.h"
#include "compiler/target/CpuTarget.h"
#include "compiler/target/LayerABI.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace mhac {

/// Halide's name for `target` ("x86-64-linux-avx2-fma-f16c-sse41-large_buffers", ...).
std::string halideTarget(const CpuTarget &target);

/// Compiles `layer` with `schedule`'s Halide knobs into LLVM IR for `machine`, in `context`,
/// with the C entry points of `abi`, whose prepared layout (the generator's) it fills in.
llvm::Expected<std::unique_ptr<llvm::Module>>
compileHalideLayer(const LayerSpec &layer, const Schedule &schedule, const CpuTarget &target,
                   llvm::TargetMachine &machine, LayerABI &abi, llvm::LLVMContext &context);

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_HALIDELAYER_H
