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

/// The narrowest column block of f32 products: whole panels leave the rest of a projection's
/// width in power-of-two blocks of at least this many features (convert-mha-to-linalg).
constexpr int64_t kMinColumnBlock = 8;

/// The panel width of a projection of `out` output features (its padded width,
/// paddedProjectionWidth): `registerCols`, halved while it does not divide `out` and the half
/// is still whole vectors of `lanes`. Keys and values of one head of 80 features take panels
/// of 16 while the layer's other projections keep 64: one parallel loop of 5 panels, where
/// whole panels of 64 and then a block of 16 would be two loops of one task each
/// (bench/RESULTS.md). A `lanes` of 0 keeps `registerCols`.
inline int64_t projectionPanelWidth(int64_t out, int64_t registerCols, int64_t lanes) {
  if (lanes <= 0)
    return registerCols;
  for (int64_t panel = registerCols; panel >= lanes && panel % lanes == 0; panel /= 2)
    if (out % panel == 0)
      return panel;
  return registerCols;
}

/// The number of output features a projection of `out` computes. Where exact columns work (a
/// vector of `lanes` divides `out`, or, for f32 products, whole panels and column blocks of
/// kMinColumnBlock or more make it), `out` itself, except that bf16 `pairs` whose panels would
/// narrow to one vector (projectionPanelWidth) take wider ones where padding adds at most an
/// eighth of `out` in zero-weight columns (as below, the panels that pad least): 4 heads of 100
/// (400) in 7 pair panels of 64 (448) ran 1.19x as fast as in 25 of 16, where f32 products ran
/// 0.91x, and in 13 of 32 (416) 1.10x faster again; pair panels of 32 padded to 64 (480, 1568)
/// ran 0.97-0.98x (bench/RESULTS.md). Where exact columns do not
/// work, `out` rounded up to whole panels of the panel width wider than one vector
/// (`registerCols`, halved) that pads least, if that adds at most an eighth, else to one
/// vector: 12 heads of 75 (900) compute 928 in 29 panels of 32, where exact columns would need
/// tails of 4, 2 or 1 features, each a loop of its own, or an unpacked product. Panels of 32
/// run about as fast as panels of 64, so the padding decides: 8 heads of 65 (520) in bf16 pairs
/// ran 1.09x as fast in 17 panels of 32 (544) as in 9 of 64 (576), 900 1.03-1.04x in f32 and
/// bf16 (bench/RESULTS.md). Keys and values of one head of 80 keep their 5 panels of 16 (128
/// would be 60% padding). The padding columns are computed into padded rows and never read.
/// With a `lanes` of 0, the vector is a whole panel.
inline int64_t paddedProjectionWidth(int64_t out, int64_t registerCols, int64_t lanes, bool pairs) {
  int64_t vector = lanes > 0 ? lanes : registerCols;
  if (vector <= 0)
    return out;
  bool exact = out % vector == 0 || (!pairs && out % kMinColumnBlock == 0);
  int64_t narrowest = !exact || (pairs && projectionPanelWidth(out, registerCols, lanes) == vector)
                          ? vector
                          : registerCols;
  auto roundedUp = [&](int64_t width) { return (out + width - 1) / width * width; };
  int64_t padded = 0;
  for (int64_t panel = registerCols; panel > narrowest && panel % vector == 0; panel /= 2)
    if (roundedUp(panel) - out <= out / 8 && (padded == 0 || roundedUp(panel) < padded))
      padded = roundedUp(panel);
  if (padded > 0)
    return padded;
  return exact ? out : roundedUp(vector);
}

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_PROJECTIONPANELS_H
