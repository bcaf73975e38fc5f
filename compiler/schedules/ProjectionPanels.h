//===- ProjectionPanels.h - the weight panels of one projection -*- C++ -*-===//
//
// Part of mhac. How wide the packed weight panels of one projection are, given the schedule's
// register columns: shared by the schedule's fitting (which counts a projection's panels to
// share them out as tasks) and convert-mha-to-linalg (which packs them), so the two can never
// disagree.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_PROJECTIONPANELS_H
#define MHAC_COMPILER_SCHEDULES_PROJECTIONPANELS_H

#include <cstdint>

namespace mhac {

/// The panel width of a projection of `out` output features: `registerCols`, halved while it
/// does not divide `out` and the half is still whole vectors of `lanes`. Keys and values of
/// one head of 80 features take panels of 16 while the layer's other projections keep 64:
/// one parallel loop of 5 panels, where whole panels of 64 and then a block of 16 would be two
/// loops of one task each (bench/RESULTS.md). A width no vector divides keeps
/// `registerCols` (convert-mha-to-linalg then takes the rest after its whole panels in
/// narrower blocks); so does a `lanes` of 0.
inline int64_t projectionPanelWidth(int64_t out, int64_t registerCols, int64_t lanes) {
  if (lanes <= 0)
    return registerCols;
  for (int64_t panel = registerCols; panel >= lanes && panel % lanes == 0; panel /= 2)
    if (out % panel == 0)
      return panel;
  return registerCols;
}

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_PROJECTIONPANELS_H
