//===- SearchSpaceTest.cpp - the tuner's space and cost model -------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/tuning/SearchSpace.h"
#include "compiler/schedules/ScheduleFile.h"
#include "compiler/tuning/CostModel.h"

#include <gtest/gtest.h>

using namespace mhac;

namespace {

LayerSpec layer(int64_t modelDim, int64_t heads, int64_t kvHeads, int64_t seq, bool causal) {
  LayerSpec spec;
  spec.name = "l";
  spec.modelDim = modelDim;
  spec.heads = heads;
  spec.headDim = modelDim / heads;
  spec.kvHeads = kvHeads;
  spec.seq = seq;
  spec.kvSeq = seq;
  spec.batch = 1;
  spec.kvDim = modelDim;
  spec.causal = causal;
  spec.scale = 0.125;
  return spec;
}

Schedule defaultsFor(const LayerSpec &spec, const CpuTarget &target) {
  ScheduleResolution resolution = resolveSchedule(spec, target, nullptr, nullptr);
  EXPECT_TRUE(resolution.schedule) << resolution.error;
  return *resolution.schedule;
}

} // namespace

TEST(SearchSpaceTest, EveryCandidateIsLegalAndTheSeedFixesThePool) {
  for (unsigned bits : {256u, 512u}) {
    CpuTarget target = genericCpuTarget(bits);
    for (const LayerSpec &spec :
         {layer(640, 8, 2, 97, true), layer(768, 12, 12, 384, false), layer(96, 1, 1, 5, false)}) {
      KnobContext context{target, &spec};
      Schedule start = defaultsFor(spec, target);
      std::vector<Schedule> pool = candidatePool(start, context, 7, 60).schedules;
      ASSERT_FALSE(pool.empty());
      EXPECT_EQ(pool.front(), start);
      for (size_t i = 0; i < pool.size(); ++i) {
        const Constraint *broken = firstViolation(pool[i], context);
        EXPECT_EQ(broken, nullptr) << (broken ? broken->explain(pool[i], context) : "");
        for (size_t j = 0; j < i; ++j)
          EXPECT_NE(pool[i], pool[j]) << "duplicate at " << i << " and " << j;
      }
      EXPECT_EQ(candidatePool(start, context, 7, 60).schedules, pool);
      EXPECT_NE(candidatePool(start, context, 8, 60).schedules, pool);
    }
  }
}

TEST(SearchSpaceTest, NeighboursDifferInOneKnobByOneLegalStep) {
  CpuTarget target = genericCpuTarget(256);
  LayerSpec spec = layer(640, 8, 2, 97, true);
  KnobContext context{target, &spec};
  Schedule start = defaultsFor(spec, target);
  std::vector<Schedule> around = neighbours(start, context);
  ASSERT_FALSE(around.empty());
  for (const Schedule &s : around) {
    int changed = 0;
    for (const Knob &k : knobs())
      if (k.get(s) != k.get(start)) {
        ++changed;
        std::vector<int64_t> legal = legalValues(k.id, start, context);
        EXPECT_NE(std::find(legal.begin(), legal.end(), k.get(s)), legal.end()) << k.name;
      }
    EXPECT_EQ(changed, 1);
  }
}

TEST(CostModelTest, ChargesEdgeWasteImbalanceAndSmallTiles) {
  CpuTarget target = genericCpuTarget(256);
  LayerSpec spec = layer(768, 12, 12, 384, false);
  TuningSizes sizes{1, 384, 384};
  Schedule base = defaultsFor(spec, target);
  double cost = estimateCost(base, spec, sizes, target, 2).cycles();
  EXPECT_GT(cost, 0);

  // A register tile of one row hides neither loads nor latency.
  Schedule thin = base;
  thin.projection.registerRows = 1;
  EXPECT_GT(estimateCost(thin, spec, sizes, target, 2).projectionCycles,
            estimateCost(base, spec, sizes, target, 2).projectionCycles);

  // 384 rows in cache tiles of 380 leave a second task of 4 rows: one thread idles.
  Schedule uneven = base;
  uneven.projection.cacheRows = 380;
  Schedule even = base;
  even.projection.cacheRows = 192;
  EXPECT_GT(estimateCost(uneven, spec, sizes, target, 2).projectionCycles,
            estimateCost(even, spec, sizes, target, 2).projectionCycles);

  // Causal layers skip about half the key blocks.
  LayerSpec causal = spec;
  causal.causal = true;
  EXPECT_LT(estimateCost(base, causal, sizes, target, 2).attentionCycles,
            0.75 * estimateCost(base, spec, sizes, target, 2).attentionCycles);
}
