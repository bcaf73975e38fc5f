//===- TransformScripts.cpp - a schedule's transform-dialect scripts ------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/TransformScripts.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

#include <string_view>

using namespace mlir;

namespace mhac {
namespace {

struct TransformLibrary {
  std::string_view name, text;
};

constexpr TransformLibrary kTransformLibraries[] = {
#include "TransformLibraries.inc"
};

/// The library `name` (tiling, vector_lowering), parsed in `function`'s context.
OwningOpRef<ModuleOp> parseLibrary(std::string_view name, Operation *function) {
  for (const TransformLibrary &library : kTransformLibraries)
    if (library.name == name)
      return parseSourceString<ModuleOp>(llvm::StringRef(library.text.data(), library.text.size()),
                                         ParserConfig(function->getContext()), name);
  return nullptr;
}

/// Applies `sequence` of `library` to `function`, binding `params` to its arguments after the
/// payload root.
LogicalResult applySequence(transform::NamedSequenceOp sequence, ModuleOp library,
                            Operation *function, ArrayRef<int64_t> params) {
  Builder builder(function->getContext());
  RaggedArray<transform::MappedValue> bindings;
  bindings.push_back(ArrayRef<transform::MappedValue>{function});
  for (int64_t param : params)
    bindings.push_back(ArrayRef<transform::MappedValue>{builder.getI64IntegerAttr(param)});
  return transform::applyTransformNamedSequence(
      std::move(bindings), cast<transform::TransformOpInterface>(sequence.getOperation()), library,
      transform::TransformOptions());
}

/// Applies the named sequence `entry` of the library `name` to `function`, binding `params`
/// to its arguments after the payload root.
LogicalResult applyLibrary(std::string_view name, StringRef entry, Operation *function,
                           ArrayRef<int64_t> params) {
  OwningOpRef<ModuleOp> library = parseLibrary(name, function);
  if (!library)
    return function->emitError("internal error: the transform library ")
           << name.data() << " does not parse";
  auto sequence = library->lookupSymbol<transform::NamedSequenceOp>(entry);
  if (!sequence)
    return function->emitError("internal error: no @") << entry << " in " << name.data();
  return applySequence(sequence, *library, function, params);
}

/// The entry point of tiling.mlir, and of a user's file that replaces it.
constexpr llvm::StringLiteral kTilingEntry = "__transform_main";

/// Applies the user's transform file `path` in place of tiling.mlir: parsed and verified with
/// its errors (and those of applying it) shown in that file, its entry given the payload
/// function and, if it declares them, the same parameters as tiling.mlir's.
LogicalResult applyUserTilingScript(StringRef path, Operation *function, ArrayRef<int64_t> params) {
  MLIRContext *context = function->getContext();
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(path, &error);
  if (!buffer)
    return function->emitError("cannot read the projection transform '") << path << "': " << error;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler showSource(sourceMgr, context);
  OwningOpRef<ModuleOp> library = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(context));
  if (!library)
    return failure();
  auto sequence = library->lookupSymbol<transform::NamedSequenceOp>(kTilingEntry);
  if (!sequence)
    return library->emitError("the projection transform has no transform.named_sequence @")
           << kTilingEntry << " (its entry point, as in mhac's tiling.mlir)";
  // Scripts written before the AMX flag (the last parameter) take the ones before it.
  size_t arguments = sequence.getFunctionType().getNumInputs();
  if (arguments != 1 && arguments != 1 + params.size() && arguments != params.size())
    return sequence.emitError("@")
           << kTilingEntry << " takes the payload function, optionally followed by the "
           << params.size() << " !transform.param<i64> of mhac's tiling.mlir (or the first "
           << params.size() - 1 << " of them); it has " << arguments << " arguments";
  return applySequence(sequence, *library, function, params.take_front(arguments - 1));
}

/// The entry of vector_lowering.mlir for a transpose lowering.
StringRef transposeEntry(TransposeLowering lowering) {
  switch (lowering) {
  case TransposeLowering::Shuffle16x16:
    return "shuffle_16x16";
  case TransposeLowering::Shuffle1D:
    return "shuffle_1d";
  case TransposeLowering::Elements:
    break;
  }
  return "elements";
}

} // namespace

LogicalResult applyTilingScript(Operation *function, const Schedule &schedule) {
  const ProjectionSchedule &p = schedule.projection;
  const int64_t params[] = {p.cacheRows,     p.cacheCols,      p.cacheCols / p.registerCols,
                            p.registerRows,  p.registerCols,   p.reductionBlock,
                            p.transposeTile, p.panelReductionBlock,
                            schedule.bf16Compute == Bf16Compute::Amx};
  if (!schedule.projectionTransform.empty())
    return applyUserTilingScript(schedule.projectionTransform, function, params);
  return applyLibrary("tiling", kTilingEntry, function, params);
}

LogicalResult applyVectorLoweringScript(Operation *function, const Schedule &schedule) {
  if (failed(applyLibrary("vector_lowering", transposeEntry(schedule.attention.transposeLowering),
                          function, {})))
    return failure();
  // LLVM does not unroll a reduction loop of a dozen FMAs by itself; the schedule does, where
  // it asks to (a remainder loop is left where the factor does not divide).
  int64_t factor = schedule.projection.reductionUnroll;
  if (factor <= 1)
    return success();
  SmallVector<scf::ForOp> reductions;
  function->walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kPanelReductionAttr))
      reductions.push_back(loop);
  });
  for (scf::ForOp loop : reductions)
    if (failed(loopUnrollByFactor(loop, factor)))
      return loop.emitError("cannot unroll the reduction by ") << factor;
  return success();
}

} // namespace mhac
