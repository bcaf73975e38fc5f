//===- HalideScheduling.cpp - the knobs of the Halide backend -------------===//
//
// Part of mhac. Both products are scheduled as register-tiled matrix products, Halide's
// classic idiom: the accumulator is computed at the loop over register tiles, with its pure
// dimensions vectorized and unrolled and the reduction outermost, so that LLVM keeps it in
// registers. Intermediates round their tiles up (TailStrategy::RoundUp): the extra rows and
// features they compute stay inside the inputs (AttentionPipeline.cpp clamps rows and pads
// the prepared weights), and nothing reads them.
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
  int taskRows = static_cast<int>((s.projectionTaskRows + rows - 1) / rows * rows);
  p.result.compute_root()
      .split(r, ro, ri, taskRows, TailStrategy::RoundUp)
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

  Var t = f.keysTransposed.args()[0], c = f.keysTransposed.args()[1],
      b = f.keysTransposed.args()[2];
  Var to("to"), ti("ti"), co("co"), ci("ci");
  f.keysTransposed.compute_root()
      .split(t, to, ti, lanes, TailStrategy::RoundUp)
      .split(c, co, ci, lanes, TailStrategy::RoundUp)
      .reorder(ti, ci, to, co, b)
      .vectorize(ti)
      .unroll(ci)
      .parallel(co);

  // Attention: one task per batch, head and block of query rows.
  Var e = f.attention.args()[0], i = f.attention.args()[1], h = f.attention.args()[2];
  Var io("io"), ii("ii"), iio("iio"), iii("iii"), eo("eo"), ei("ei"), task("task");
  int valueWidth = static_cast<int>(s.valueVectors) * lanes;
  f.attention.compute_root()
      .split(i, io, ii, static_cast<int>(s.queryBlock), TailStrategy::RoundUp)
      .split(ii, iio, iii, static_cast<int>(s.valueRows), TailStrategy::RoundUp)
      .split(e, eo, ei, valueWidth, TailStrategy::RoundUp)
      .reorder(ei, iii, eo, iio, io, h, b)
      .fuse(io, h, task)
      .fuse(task, b, task)
      .parallel(task)
      .vectorize(ei, lanes)
      .unroll(ei)
      .unroll(iii);
  f.valueAccumulator.compute_at(f.attention, eo).vectorize(e, lanes).unroll(e).unroll(i);
  Var ve = f.valueAccumulator.args()[0], vi = f.valueAccumulator.args()[1];
  f.valueAccumulator.update()
      .reorder(ve, vi, f.keyIndex)
      .vectorize(ve, lanes)
      .unroll(ve)
      .unroll(vi);

  Var st = f.scores.args()[0], si = f.scores.args()[1];
  Var sto("sto"), sti("sti"), sio("sio"), sii("sii");
  int scoreWidth = static_cast<int>(s.scoreVectors) * lanes;
  f.scores.compute_at(f.attention, task)
      .split(si, sio, sii, static_cast<int>(s.scoreRows), TailStrategy::RoundUp)
      .split(st, sto, sti, scoreWidth, TailStrategy::RoundUp)
      .reorder(sti, sii, sto, sio)
      .vectorize(sti, lanes)
      .unroll(sti)
      .unroll(sii);
  f.scoreAccumulator.compute_at(f.scores, sto).vectorize(st, lanes).unroll(st).unroll(si);
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
