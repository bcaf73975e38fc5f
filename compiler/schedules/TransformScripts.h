//===- TransformScripts.h - a schedule's transform-dialect scripts -*- C++ -*-===//
//
// Part of mhac. The projections' tiles, fusion and vectorization, and the lowering of the
// vector code, as transform-dialect scripts built from a schedule.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_TRANSFORMSCRIPTS_H
#define MHAC_COMPILER_SCHEDULES_TRANSFORMSCRIPTS_H

#include "compiler/schedules/Schedule.h"

#include <string>

namespace mhac {

/// The transform-dialect script that tiles and vectorizes the linalg form of a layer (on
/// tensors, before bufferization): a module holding `@__transform_main`.
std::string buildTilingScript(const Schedule &schedule);

/// The transform-dialect script that finishes the vector code after bufferization: keeps the
/// register tiles' accumulators in registers across the reduction loop, lowers the vector
/// ops to the forms LLVM handles best and unrolls the panel register tiles' reductions.
std::string buildVectorLoweringScript(const Schedule &schedule);

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_TRANSFORMSCRIPTS_H
