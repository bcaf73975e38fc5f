//===- HalideScheduling.h - the knobs of the Halide backend -----*- C++ -*-===//
//
// Part of mhac. Turns a HalideSchedule (the knobs of a schedule file's block) into Halide
// scheduling directives on the run pipeline's stages; the alternative is one of Halide's
// autoschedulers (mhac-halide.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_HALIDE_HALIDESCHEDULING_H
#define MHAC_TOOLS_MHAC_HALIDE_HALIDESCHEDULING_H

#include "tools/mhac-halide/AttentionPipeline.h"

namespace mhac::halide {

/// Schedules every stage of `funcs` for vectors of `lanes` f32.
void applySchedule(RunFuncs &funcs, const HalideSchedule &schedule, int lanes);

} // namespace mhac::halide

#endif // MHAC_TOOLS_MHAC_HALIDE_HALIDESCHEDULING_H
