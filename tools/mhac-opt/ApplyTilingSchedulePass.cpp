//===- ApplyTilingSchedulePass.cpp - the tiling script as a pass, for tests ===//
//
// Part of mhac. `mhac-opt --mhac-apply-tiling-schedule=vector-bits=512` applies the default
// schedule's tiling script of a target with vectors that wide to a module in linalg form (what
// `mhac compile --emit=linalg` prints): the lit tests check the tiles, the fusion and the
// vectorization on tensors, which no --emit stage shows.
//
//===----------------------------------------------------------------------===//

#include "ApplyTilingSchedulePass.h"

#include "compiler/pipeline/CpuPipeline.h"
#include "compiler/schedules/ScheduleFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace mhac {
namespace {

struct ApplyTilingSchedulePass : PassWrapper<ApplyTilingSchedulePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApplyTilingSchedulePass)

  ApplyTilingSchedulePass() = default;
  ApplyTilingSchedulePass(const ApplyTilingSchedulePass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "mhac-apply-tiling-schedule"; }
  StringRef getDescription() const final {
    return "Apply the default schedule's tiling script (for tests of the schedule)";
  }

  void runOnOperation() override {
    if (vectorBits != 256 && vectorBits != 512) {
      getOperation().emitError("vector-bits must be 256 (AVX2) or 512 (AVX-512)");
      return signalPassFailure();
    }
    CpuTarget target = genericCpuTarget(vectorBits);
    LayerSchedules schedules;
    for (auto func : getOperation().getOps<func::FuncOp>())
      schedules.emplace(func.getSymName().str(), targetDefaults(target));
    if (failed(applyTilingSchedules(getOperation(), schedules)))
      signalPassFailure();
  }

  Option<unsigned> vectorBits{*this, "vector-bits",
                              llvm::cl::desc("the target's vector width: 256 or 512"),
                              llvm::cl::init(512)};
};

} // namespace

void registerApplyTilingSchedulePass() { PassRegistration<ApplyTilingSchedulePass>(); }

} // namespace mhac
