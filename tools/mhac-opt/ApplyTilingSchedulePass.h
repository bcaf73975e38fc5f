//===- ApplyTilingSchedulePass.h - the tiling script as a pass -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_OPT_APPLYTILINGSCHEDULEPASS_H
#define MHAC_TOOLS_MHAC_OPT_APPLYTILINGSCHEDULEPASS_H

namespace mhac {

/// Registers `mhac-apply-tiling-schedule` (see ApplyTilingSchedulePass.cpp).
void registerApplyTilingSchedulePass();

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_OPT_APPLYTILINGSCHEDULEPASS_H
