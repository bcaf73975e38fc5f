//===- CostModel.cpp - a cheap analytic estimate of a schedule's time -----===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/tuning/CostModel.h"

#include "compiler/schedules/AttentionBlock.h"

#include <algorithm>
#include <cmath>

namespace mhac {
namespace {

/// x86 cores of this class issue two FMAs and two loads per cycle, with an FMA latency of
/// four cycles: eight independent accumulators keep both FMA units busy.
constexpr double kFmaPorts = 2, kLoadPorts = 2, kFmaLatency = 4;
/// A working set past the L2 streams from L3 (measured 20-40% slower on Zen 3 and Xeon).
constexpr double kL2Overflow = 1.3;
/// Attention tiles past the L1 come from the L2.
constexpr double kL1Overflow = 1.1;

double ceilDiv(int64_t a, int64_t b) { return static_cast<double>((a + b - 1) / b); }

/// How close a register tile of `rows` broadcasts by `vectors` vector loads per step gets to the
/// FMA peak: bound by the load ports, and by the accumulators in flight.
double tileEfficiency(int64_t rows, int64_t vectors) {
  double fmas = static_cast<double>(rows * vectors);
  double loads = static_cast<double>(rows + vectors);
  double byLoads = std::min(1.0, (fmas / kFmaPorts) / (loads / kLoadPorts));
  double byLatency = std::min(1.0, fmas / (kFmaPorts * kFmaLatency));
  return byLoads * byLatency;
}

/// The work `size` does when it is covered by whole tiles of `tile`, over the work it needs.
double edgeWaste(int64_t size, int64_t tile) {
  return ceilDiv(size, tile) * static_cast<double>(tile) / static_cast<double>(size);
}

/// The time `tasks` equal tasks take on `threads`, over the time with perfect balance.
double imbalance(double tasks, int threads) {
  double rounds = std::ceil(tasks / threads);
  return rounds * threads / tasks;
}

/// One projection [rows x in] x [in x out], in cycles of one core (threads included).
double projectionCycles(const ProjectionSchedule &p, int64_t rows, int64_t out, int64_t in,
                        const CpuTarget &target, int threads) {
  int64_t lanes = target.lanes();
  double fmas = static_cast<double>(rows) * out * in / lanes;
  double cycles = fmas / kFmaPorts / tileEfficiency(p.registerRows, p.registerCols / lanes);
  cycles *= edgeWaste(rows, p.registerRows) * edgeWaste(out, p.registerCols);
  int64_t cacheRows = std::min(p.cacheRows, rows);
  int64_t cacheCols = std::min(p.cacheCols, out);
  double tasks = ceilDiv(rows, cacheRows) * ceilDiv(out, cacheCols);
  cycles *= imbalance(tasks, threads);
  // A task keeps its rows and one weight panel in the L2.
  double footprint = 4.0 * in * (cacheRows + p.registerCols);
  if (footprint > static_cast<double>(target.l2Bytes))
    cycles *= kL2Overflow;
  return cycles / threads;
}

double attentionCycles(const AttentionSchedule &a, const LayerSpec &layer, const TuningSizes &sizes,
                       const CpuTarget &target, int threads) {
  int64_t lanes = target.lanes();
  int64_t group = layer.heads / layer.kvHeads;
  // The blocks of a call with these keys (attention_long_keys).
  int64_t seen = sizes.kvSeq + sizes.cacheLen;
  int64_t growth = blockGrowths(seen, a.longKeys, a.longBlockGrowth).front();
  AttentionBlock block = attentionBlock(group, sizes.seq, growth * a.queryBlock,
                                        growth * a.groupedQueryBlock, lanes);
  int64_t blocks = static_cast<int64_t>(ceilDiv(sizes.seq, block.positions));
  int64_t keyBlocks = static_cast<int64_t>(ceilDiv(seen, a.keyBlock));
  // Work per block: the scores (rows x keys x head) and p.v (rows x keys x head), on whole
  // key blocks; causal layers skip the blocks above the diagonal, so a block sees half the keys
  // on average, plus half a key block and half its own rows where the diagonal cuts through;
  // every row sees the cached keys.
  double keys = static_cast<double>(keyBlocks * a.keyBlock);
  if (layer.causal)
    keys = std::min(keys, static_cast<double>(sizes.cacheLen) +
                              (static_cast<double>(sizes.kvSeq) + a.keyBlock + block.positions) / 2);
  double rows = static_cast<double>(block.rows);
  double headVectors = ceilDiv(layer.headDim, lanes);
  double scoreFmas = rows / lanes * keys * layer.headDim;
  double valueFmas = rows * keys * headVectors;
  double cycles = scoreFmas / kFmaPorts / tileEfficiency(a.scoreTileKeys, a.scoreTileVectors) +
                  valueFmas / kFmaPorts / tileEfficiency(a.valueTileRows, a.valueTileVectors);
  // The online softmax rescales a block's accumulators once per key block.
  cycles *= 1 + 8.0 / static_cast<double>(a.keyBlock);
  // The tiles a block works on: its scores, its accumulators, and a key block's keys and values.
  double tileBytes =
      4.0 * (rows * a.keyBlock + rows * layer.headDim + 2.0 * a.keyBlock * layer.headDim);
  if (tileBytes > static_cast<double>(target.l1Bytes))
    cycles *= kL1Overflow;
  if (tileBytes > static_cast<double>(target.l2Bytes))
    cycles *= kL2Overflow;
  double tasks = static_cast<double>(sizes.batch * layer.kvHeads * blocks);
  return cycles * tasks * imbalance(tasks, threads) / threads;
}

} // namespace

CostEstimate estimateCost(const Schedule &schedule, const LayerSpec &layer,
                          const TuningSizes &sizes, const CpuTarget &target, int threads) {
  const ProjectionSchedule &p = schedule.projection;
  int64_t queryRows = sizes.batch * sizes.seq, keyRows = sizes.batch * sizes.kvSeq;
  int64_t queryWidth = layer.heads * layer.headDim, kvWidth = layer.kvHeads * layer.headDim;
  CostEstimate estimate;
  estimate.projectionCycles =
      projectionCycles(p, queryRows, queryWidth, layer.modelDim, target, threads) +
      2 * projectionCycles(p, keyRows, kvWidth, layer.kvDim, target, threads) +
      projectionCycles(p, queryRows, layer.modelDim, queryWidth, target, threads);
  estimate.attentionCycles = attentionCycles(schedule.attention, layer, sizes, target, threads);
  return estimate;
}

} // namespace mhac
