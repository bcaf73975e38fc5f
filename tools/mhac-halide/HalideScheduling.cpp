//===- HalideScheduling.cpp - the knobs of the Halide backend -------------===//
//
// Part of mhac. The projections and both products of attention are register-tiled matrix
// products, Halide's classic idiom: inside a loop over a block of the reduction, the register
// tile's dimensions are vectorized and unrolled, so that LLVM keeps its accumulators in
// registers over the block; between blocks they wait in a buffer of the task. Intermediates round
// their tiles up (TailStrategy::RoundUp): the extra rows and features they compute stay inside the
// inputs (AttentionPipeline.cpp clamps rows and pads the prepared weights), and nothing reads them.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac-halide/HalideScheduling.h"

using namespace Halide;

namespace mhac::halide {
namespace {

/// A projection: parallel tasks of `taskRows` rows by one register tile's width of features.
/// A task accumulates in a buffer of its own, a reduction block at a time, so that the block of
/// the weight panel stays in L1 while register tiles of `rows` rows pass over it.
void scheduleProjection(ProjectionFuncs &p, const HalideSchedule &s, int lanes) {
  Var c = p.result.args()[0], r = p.result.args()[1], b = p.result.args()[2];
  Var co("co"), ci("ci"), ro("ro"), ri("ri"), tile("tile"), task("task");
  int width = static_cast<int>(s.projectionVectors) * lanes;
  int rows = static_cast<int>(s.projectionRows);
  int taskRows = static_cast<int>(s.projectionTaskRows); // whole register tiles (Knobs.cpp)
  p.result.compute_root()
      .split(r, ro, ri, taskRows, TailStrategy::GuardWithIf)
      .split(c, co, ci, width, TailStrategy::RoundUp)
      .reorder(ci, ri, co, ro, b)
      .fuse(co, ro, tile)
      .fuse(tile, b, task)
      .parallel(task)
      .vectorize(ci, lanes)
      .unroll(ci);
  p.accumulator.compute_at(p.result, task).vectorize(c, lanes).unroll(c);
  RVar ko("ko"), ki("ki");
  Var rto("rto"), rti("rti");
  p.accumulator.update()
      .split(r, rto, rti, rows, TailStrategy::RoundUp)
      .split(p.reduction, ko, ki, static_cast<int>(s.projectionReductionBlock),
             TailStrategy::GuardWithIf)
      .reorder(c, rti, ki, rto, ko)
      .vectorize(c, lanes)
      .unroll(c)
      .unroll(rti);
}

} // namespace

void applySchedule(RunFuncs &f, const HalideSchedule &s, int lanes) {
  for (ProjectionFuncs *p : {&f.query, &f.key, &f.value, &f.output})
    scheduleProjection(*p, s, lanes);

  // Keys into panels: transposed in square tiles of lanes x lanes.
  Var t = f.keyPanels.args()[0], c = f.keyPanels.args()[1], tile = f.keyPanels.args()[2],
      b = f.keyPanels.args()[3];
  Var ti("ti"), to("to"), co("co"), ci("ci");
  f.keyPanels.compute_root()
      .split(t, to, ti, lanes, TailStrategy::RoundUp)
      .split(c, co, ci, lanes, TailStrategy::RoundUp)
      .reorder(ti, ci, to, co, tile, b)
      .vectorize(ti)
      .unroll(ci)
      .parallel(tile);

  // Attention: one task per batch, head and block of query rows (the algorithm's n).
  Var e = f.attention.args()[0], i = f.attention.args()[1], n = f.attention.args()[2],
      h = f.attention.args()[3];
  Var iio("iio"), iii("iii"), eo("eo"), ei("ei"), task("task");
  int valueWidth = static_cast<int>(s.valueVectors) * lanes;
  f.attention.compute_root()
      .reorder(e, i, n, h, b)
      .fuse(n, h, task)
      .fuse(task, b, task)
      .parallel(task)
      .vectorize(e, lanes, TailStrategy::RoundUp);
  // p.v: the task's accumulators in memory, a block of keys at a time, so that the block's
  // values stay in L1 while every register tile passes over them.
  Var ve = f.valueAccumulator.args()[0], vi = f.valueAccumulator.args()[1];
  RVar ko("ko"), ki("ki");
  f.valueAccumulator.compute_at(f.attention, task).vectorize(ve, lanes, TailStrategy::RoundUp);
  f.valueAccumulator.update()
      .split(vi, iio, iii, static_cast<int>(s.valueRows), TailStrategy::RoundUp)
      .split(ve, eo, ei, valueWidth, TailStrategy::RoundUp)
      .split(f.keyIndex, ko, ki, static_cast<int>(s.keyBlock), TailStrategy::GuardWithIf)
      .reorder(ei, iii, ki, eo, iio, ko)
      .vectorize(ei, lanes)
      .unroll(ei)
      .unroll(iii);

  Var st = f.scores.args()[0], si = f.scores.args()[1];
  Var sto("sto"), sti("sti"), sio("sio"), sii("sii");
  int scoreWidth = static_cast<int>(s.scoreVectors) * lanes;
  f.scores.compute_at(f.attention, task)
      .split(si, sio, sii, static_cast<int>(s.scoreRows), TailStrategy::RoundUp)
      .split(st, sto, sti, scoreWidth, TailStrategy::RoundUp)
      .reorder(sti, sii, sio, sto)
      .vectorize(sti, lanes)
      .unroll(sti)
      .unroll(sii);
  f.scoreAccumulator.compute_at(f.scores, sio).vectorize(st, lanes).unroll(st).unroll(si);
  f.scoreAccumulator.update()
      .reorder(st, si, f.headFeature)
      .vectorize(st, lanes)
      .unroll(st)
      .unroll(si);

  Var j = f.laneMax.args()[0];
  f.laneMax.compute_at(f.attention, task).vectorize(j);
  f.laneMax.update().reorder(j, f.keyChunk).vectorize(j);
  f.rowMax.compute_at(f.attention, task);
  Var pt = f.probabilities.args()[0];
  f.probabilities.compute_at(f.attention, task).vectorize(pt, lanes);
  f.laneSum.compute_at(f.attention, task).vectorize(j);
  f.laneSum.update().reorder(j, f.keyChunk).vectorize(j);
  f.rowSum.compute_at(f.attention, task);

  Var oc = f.out.args()[0], orow = f.out.args()[1], ob = f.out.args()[2];
  Var ro("ro"), ri("ri"), rows("rows");
  f.out.split(orow, ro, ri, 16, TailStrategy::GuardWithIf)
      .fuse(ro, ob, rows)
      .parallel(rows)
      .vectorize(oc, lanes, TailStrategy::GuardWithIf);
}

} // namespace mhac::halide
