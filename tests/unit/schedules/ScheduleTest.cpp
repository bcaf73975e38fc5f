//===- ScheduleTest.cpp - the knob table, defaults, files and resolution --===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/ProjectionPanels.h"
#include "compiler/schedules/ScheduleFile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>

namespace mhac {
namespace {

CpuTarget makeTarget(unsigned vectorBits) { return genericCpuTarget(vectorBits); }

LayerSpec makeLayer(int64_t modelDim, int64_t heads, int64_t headDim, int64_t kvHeads,
                    int64_t seq) {
  LayerSpec layer;
  layer.name = "layer";
  layer.modelDim = modelDim;
  layer.heads = heads;
  layer.headDim = headDim;
  layer.kvHeads = kvHeads;
  layer.seq = seq;
  layer.kvSeq = seq;
  layer.kvDim = modelDim;
  layer.scale = 0.125;
  return layer;
}

/// Reads `text` as a schedule file for `target`; errors go to `errors`.
std::optional<ScheduleFile> read(const std::string &text, const CpuTarget &target,
                                 std::string &errors) {
  SourceFile file("test.sched", text);
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  std::optional<ScheduleFile> result = readScheduleFile(file, diags, target);
  errors = out.str();
  return result;
}

TEST(KnobTable, NamesAreUniqueAndIdsMatchPositions) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < knobs().size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(knobs()[i].id), i);
    EXPECT_TRUE(names.insert(knobs()[i].name).second) << knobs()[i].name;
    EXPECT_EQ(findKnob(knobs()[i].name), &knobs()[i]);
  }
  EXPECT_EQ(findKnob("no_such_knob"), nullptr);
}

TEST(KnobTable, SuggestsCloseNamesOnly) {
  EXPECT_EQ(closestKnobName("attention_key_blocks"), "attention_key_block");
  EXPECT_EQ(closestKnobName("projection_cache_row"), "projection_cache_rows");
  EXPECT_EQ(closestKnobName("dropout"), std::nullopt);
}

TEST(KnobTable, DescribesLongListsByTheirEnds) {
  const Knob &rows = knob(KnobId::ProjectionCacheRows);
  EXPECT_EQ(describeValues(rows, {1, 3}), "1, 3");
  std::vector<int64_t> many;
  for (int64_t v = 1; v <= 20; ++v)
    many.push_back(v);
  EXPECT_EQ(describeValues(rows, many), "1, 2, 3, 4, ..., 17, 18, 19, 20");
  EXPECT_EQ(formatKnobValue(knob(KnobId::AttentionPrefetchValues), 0), "false");
  EXPECT_EQ(formatKnobValue(knob(KnobId::AttentionQueryTranspose), 1), "elements");
}

TEST(KnobTable, LaneStepsFollowTheTarget) {
  const Knob &block = knob(KnobId::AttentionQueryBlock);
  EXPECT_TRUE(inDomain(block, 40, makeTarget(256)));
  EXPECT_FALSE(inDomain(block, 40, makeTarget(512)));
  EXPECT_EQ(domainValues(block, makeTarget(512)).front(), 16);
  EXPECT_EQ(domainValues(block, makeTarget(512)).back(), 512);
}

class Defaults : public ::testing::TestWithParam<unsigned> {};

TEST_P(Defaults, SetEveryKnobWithinItsDomain) {
  CpuTarget target = makeTarget(GetParam());
  const Schedule &defaults = targetDefaults(target);
  for (const Knob &k : knobs())
    if (k.backend != Backend::Cuda)
      EXPECT_TRUE(inDomain(k, k.get(defaults), target)) << k.name;
}

/// The defaults, fitted, are legal for every layer: over a grid of head widths, group sizes,
/// sequence lengths (static and dynamic) and widths.
TEST_P(Defaults, FitEveryLayer) {
  CpuTarget target = makeTarget(GetParam());
  for (int64_t headDim : {1, 8, 16, 24, 40, 64, 80, 96, 112, 128, 160, 256, 1000, 20000})
    for (int64_t group : {1, 2, 3, 4, 8, 16})
      for (int64_t seq : {int64_t(1), int64_t(7), int64_t(100), int64_t(8191), kDynamicSize}) {
        LayerSpec layer = makeLayer(headDim * 2 * group, 2 * group, headDim, 2, seq);
        ScheduleResolution resolution = resolveSchedule(layer, target, nullptr, nullptr);
        ASSERT_TRUE(resolution.schedule)
            << "Dh " << headDim << " group " << group << " seq " << seq << ": " << resolution.error;
        EXPECT_EQ(firstViolation(*resolution.schedule, KnobContext{target, &layer}), nullptr);
      }
}

INSTANTIATE_TEST_SUITE_P(Schedules, Defaults, ::testing::Values(256u, 512u));

/// A CUDA GPU with `sharedBytes` of shared memory per block.
CpuTarget makeCudaTarget(int64_t sharedBytes) {
  CpuTarget target = makeTarget(256);
  target.name = "cuda:test";
  target.cuda = CudaDevice{"sm_test", sharedBytes, 255};
  return target;
}

/// The CUDA defaults, fitted, are legal for every layer up to heads of 1000, on GPUs with
/// sm_86's shared memory and sm_90's; heads so wide that a row's slices fill a thread's
/// registers have no schedule, and say so.
TEST(CudaDefaults, FitEveryLayer) {
  for (int64_t sharedBytes : {99 * 1024, 227 * 1024}) {
    CpuTarget target = makeCudaTarget(sharedBytes);
    const Schedule &defaults = targetDefaults(target);
    for (const Knob &k : knobs())
      if (k.backend == Backend::Cuda)
        EXPECT_TRUE(inDomain(k, k.get(defaults), target)) << k.name;
    for (int64_t headDim : {1, 8, 16, 24, 40, 64, 80, 96, 112, 128, 160, 256, 1000})
      for (int64_t group : {1, 3, 8})
        for (int64_t seq : {int64_t(1), int64_t(100), kDynamicSize}) {
          LayerSpec layer = makeLayer(headDim * 2 * group, 2 * group, headDim, 2, seq);
          ScheduleResolution resolution = resolveSchedule(layer, target, nullptr, nullptr);
          ASSERT_TRUE(resolution.schedule) << "Dh " << headDim << ": " << resolution.error;
          EXPECT_EQ(firstViolation(*resolution.schedule, KnobContext{target, &layer}), nullptr);
        }
    LayerSpec wide = makeLayer(40000, 2, 20000, 2, 100);
    ScheduleResolution resolution = resolveSchedule(wide, target, nullptr, nullptr);
    EXPECT_FALSE(resolution.schedule);
    EXPECT_NE(resolution.error.find("registers"), std::string::npos) << resolution.error;
  }
}

TEST(Resolution, FitsBertBaseAsDocumented) {
  CpuTarget target = makeTarget(512);
  LayerSpec bert = makeLayer(768, 12, 64, 12, 128);
  Schedule schedule = *resolveSchedule(bert, target, nullptr, nullptr).schedule;
  // A 48-row block is 3 vectors; a head of 64 in 4 vectors leaves registers for 6 rows.
  EXPECT_EQ(schedule.attention.scoreTileVectors, 3);
  EXPECT_EQ(schedule.attention.scoreTileKeys, 8);
  EXPECT_EQ(schedule.attention.valueTileVectors, 4);
  EXPECT_EQ(schedule.attention.valueTileRows, 6);
  EXPECT_EQ(schedule.projection.cacheRows, 258);
}

/// A head's keys and values (S x 64 x 4 bytes, twice) fit in half of the nominal 1 MiB L2 up
/// to S = 1024; beyond that the query blocks grow by the times they exceed it, up to 3x.
TEST(Resolution, GrowsQueryBlocksWhereKeysOutgrowL2) {
  CpuTarget target = makeTarget(512);
  ASSERT_EQ(target.l2Bytes, 1024 * 1024);
  using Blocks = std::pair<int64_t, int64_t>;
  auto blocks = [&](int64_t kvHeads, int64_t seq) {
    LayerSpec layer = makeLayer(768, 12, 64, kvHeads, seq);
    Schedule schedule = *resolveSchedule(layer, target, nullptr, nullptr).schedule;
    return Blocks{schedule.attention.queryBlock, schedule.attention.groupedQueryBlock};
  };
  EXPECT_EQ(blocks(12, 1024), (Blocks{48, 64}));
  EXPECT_EQ(blocks(12, 2048), (Blocks{96, 128}));
  EXPECT_EQ(blocks(4, 8192), (Blocks{144, 192}));
  EXPECT_EQ(blocks(4, kDynamicSize), (Blocks{48, 64}));
}

/// The schedule `layer` resolves to on `target` from a file whose block sets `knobs` (lines).
Schedule resolveWithKnobs(const CpuTarget &target, const LayerSpec &layer,
                          const std::string &knobs) {
  std::string errors;
  std::optional<ScheduleFile> file =
      read("format = 1\nlayer " + layer.name + " {\n" + knobs + "}\n", target, errors);
  EXPECT_TRUE(file) << errors;
  return *resolveSchedule(layer, target, file->find(layer.name), nullptr).schedule;
}

/// Where attention multiplies bf16 (a Zen 4: vdpbf16ps outruns the FMAs), a query block takes
/// the 3 to 5 vectors that pad the sequence to the fewest rows (four on a tie, then three), a
/// sequence of one or two vectors one block (a decoding step against 512 keys that asks for
/// bf16 products: one vector); f32 attention, dynamic sequences and a block the file sets keep
/// theirs.
TEST(Resolution, TakesWholeBf16TilesWherePaddingAllows) {
  CpuTarget target = makeTarget(512);
  target.avx512bf16 = target.bf16DotOutrunsFma = true;
  auto block = [&](int64_t seq, DType dtype, const std::string &knobs = "") {
    LayerSpec layer = makeLayer(768, 12, 64, 12, seq);
    layer.dtype = dtype;
    if (seq == 1)
      layer.kvSeq = 512;
    Schedule schedule = resolveWithKnobs(target, layer, knobs);
    EXPECT_EQ(schedule.attention.compute == AttentionCompute::Dot, dtype == DType::BF16);
    return schedule.attention.queryBlock;
  };
  EXPECT_EQ(block(128, DType::BF16), 64); // 128 rows, not 144
  EXPECT_EQ(block(512, DType::BF16), 64); // 512, not 528
  EXPECT_EQ(block(192, DType::BF16), 64); // 192 either way: the wider
  EXPECT_EQ(block(197, DType::BF16), 48); // 240, not 256 (80: 240 too)
  EXPECT_EQ(block(150, DType::BF16), 80); // 160, not 192
  EXPECT_EQ(block(77, DType::BF16), 80);  // 80, not 96 or 128
  EXPECT_EQ(block(100, DType::BF16), 64); // 128, not 144 or 160
  EXPECT_EQ(block(20, DType::BF16), 32);  // one block of two vectors
  EXPECT_EQ(block(1, DType::BF16, "  attention_compute = dot\n"), 16); // one vector
  EXPECT_EQ(block(kDynamicSize, DType::BF16), 48);
  EXPECT_EQ(block(128, DType::F32), 48);
  EXPECT_EQ(block(128, DType::BF16, "  attention_query_block = 32\n"), 32);
}

/// A layer whose every call has at most one tile of 16 keys, or at most 16 query rows per
/// key/value head, keeps attention's products in f32 by default: bf16 products' fixed cost per
/// head (the values and queries laid out in pairs, the accumulators transposed back) outweighs
/// what they save on so few products. More keys and rows, dynamic sizes and a file that asks
/// for `dot` take bf16 products.
TEST(Resolution, KeepsF32ProductsForOneTileOfKeysOrRows) {
  CpuTarget target = makeTarget(512);
  target.avx512bf16 = target.bf16DotOutrunsFma = true;
  auto compute = [&](int64_t seq, int64_t kvSeq, int64_t kvHeads = 12,
                     const std::string &knobs = "") {
    LayerSpec layer = makeLayer(768, 12, 64, kvHeads, seq);
    layer.dtype = DType::BF16;
    layer.kvSeq = kvSeq;
    return resolveWithKnobs(target, layer, knobs).attention.compute;
  };
  EXPECT_EQ(compute(1, 1), AttentionCompute::F32);
  EXPECT_EQ(compute(16, 16), AttentionCompute::F32);
  EXPECT_EQ(compute(40, 16), AttentionCompute::F32);
  EXPECT_EQ(compute(17, 17), AttentionCompute::Dot);
  EXPECT_EQ(compute(1, 512), AttentionCompute::F32);
  EXPECT_EQ(compute(16, 1500), AttentionCompute::F32);
  EXPECT_EQ(compute(17, 1500), AttentionCompute::Dot);
  EXPECT_EQ(compute(4, 1500, /*kvHeads=*/3), AttentionCompute::F32); // 4 rows of 4 heads
  EXPECT_EQ(compute(5, 1500, /*kvHeads=*/3), AttentionCompute::Dot);
  EXPECT_EQ(compute(1, kDynamicSize), AttentionCompute::F32);
  EXPECT_EQ(compute(kDynamicSize, 512), AttentionCompute::Dot);
  EXPECT_EQ(compute(kDynamicSize, kDynamicSize), AttentionCompute::Dot);
  EXPECT_EQ(compute(1, 512, 12, "  attention_compute = dot\n"), AttentionCompute::Dot);
}

/// Attention's vdpbf16ps products take any head (Stable Diffusion's 40, odd ones: the last pair
/// a feature and a zero). Where vdpbf16ps does not outrun the FMAs (an AMX Xeon), a head AMX's
/// tiles do not take keeps f32 products rather than falling to vdpbf16ps.
TEST(Resolution, TakesBf16ProductsForAnyHead) {
  CpuTarget target = makeTarget(512);
  target.avx512bf16 = target.bf16DotOutrunsFma = true;
  auto compute = [&](int64_t heads, int64_t headDim) {
    LayerSpec layer = makeLayer(320, heads, headDim, heads, 77);
    layer.dtype = DType::BF16;
    return resolveWithKnobs(target, layer, "").attention.compute;
  };
  EXPECT_EQ(compute(8, 40), AttentionCompute::Dot);
  EXPECT_EQ(compute(32, 10), AttentionCompute::Dot);
  EXPECT_EQ(compute(16, 20), AttentionCompute::Dot);
  EXPECT_EQ(compute(32, 9), AttentionCompute::Dot);
  EXPECT_EQ(compute(4, 75), AttentionCompute::Dot);
  target.bf16DotOutrunsFma = false;
  target.amxBf16 = true;
  EXPECT_EQ(compute(8, 40), AttentionCompute::F32);
  EXPECT_EQ(compute(5, 64), AttentionCompute::Amx);
}

/// bf16 layers take pair products whatever their widths, the register columns kept: keys and
/// values of 2 x 80 or 80 features take narrower panels of their own, those of 40 or 75
/// features padded ones (ProjectionPanels.h), not the whole layer's panels, and an odd model
/// width pairs its last feature with a zero. AMX's register tiles need whole panels.
TEST(Resolution, PairsWidthsOfWholeVectors) {
  CpuTarget target = makeTarget(512);
  target.avx512bf16 = target.bf16DotOutrunsFma = true;
  auto resolve = [&](int64_t headDim, int64_t kvHeads, const std::string &knobs = "",
                     int64_t modelDim = 640) {
    LayerSpec layer = makeLayer(modelDim, 8, headDim, kvHeads, 100);
    layer.dtype = DType::BF16;
    Schedule schedule = resolveWithKnobs(target, layer, knobs);
    return std::pair{schedule.bf16Compute, schedule.projection.registerCols};
  };
  EXPECT_EQ(resolve(80, 8), (std::pair{Bf16Compute::Dot, int64_t{64}}));
  EXPECT_EQ(resolve(80, 2), (std::pair{Bf16Compute::Dot, int64_t{64}}));
  EXPECT_EQ(resolve(80, 1), (std::pair{Bf16Compute::Dot, int64_t{64}}));
  EXPECT_EQ(resolve(80, 2, "  projection_register_cols = 128\n"),
            (std::pair{Bf16Compute::Dot, int64_t{128}}));
  EXPECT_EQ(resolve(40, 1), (std::pair{Bf16Compute::Dot, int64_t{64}}));
  EXPECT_EQ(resolve(75, 3), (std::pair{Bf16Compute::Dot, int64_t{64}}));
  EXPECT_EQ(resolve(64, 8, "", 689), (std::pair{Bf16Compute::Dot, int64_t{64}}));
  target.amxBf16 = true;
  EXPECT_EQ(resolve(80, 2), (std::pair{Bf16Compute::Amx, int64_t{32}}));
  EXPECT_EQ(resolve(80, 1), (std::pair{Bf16Compute::Dot, int64_t{64}}));
}

/// A projection narrows its panels while they do not divide its width, down to one vector;
/// a width no vector divides keeps the register columns (and blocks after its whole panels,
/// or padding: below).
TEST(ProjectionPanels, HalveDownToOneVectorThatDividesTheWidth) {
  EXPECT_EQ(projectionPanelWidth(640, 64, 16), 64);
  EXPECT_EQ(projectionPanelWidth(160, 64, 16), 32);
  EXPECT_EQ(projectionPanelWidth(96, 64, 16), 32);
  EXPECT_EQ(projectionPanelWidth(80, 64, 16), 16);
  EXPECT_EQ(projectionPanelWidth(112, 64, 16), 16);
  EXPECT_EQ(projectionPanelWidth(40, 64, 16), 64);
  EXPECT_EQ(projectionPanelWidth(40, 64, 8), 8);
  EXPECT_EQ(projectionPanelWidth(80, 64, 0), 64);
}

/// Widths that whole vectors (or, for f32 products, whole panels and blocks of 8) make are
/// computed as they are, but for bf16 pairs that would take narrower panels; others are padded
/// to the panels wider than a vector that pad least (the wider of a tie) where that adds at
/// most an eighth of their width, else to one vector.
TEST(ProjectionPanels, PadWidthsThatNoVectorDivides) {
  EXPECT_EQ(paddedProjectionWidth(640, 64, 16, true), 640);
  EXPECT_EQ(paddedProjectionWidth(80, 64, 16, true), 80);
  EXPECT_EQ(paddedProjectionWidth(520, 64, 16, false), 520);
  EXPECT_EQ(paddedProjectionWidth(520, 64, 16, true), 544);
  EXPECT_EQ(paddedProjectionWidth(900, 64, 16, false), 928);
  EXPECT_EQ(paddedProjectionWidth(300, 64, 16, true), 320);
  EXPECT_EQ(paddedProjectionWidth(689, 64, 16, false), 704);
  EXPECT_EQ(paddedProjectionWidth(40, 64, 16, true), 48);
  EXPECT_EQ(paddedProjectionWidth(65, 64, 16, false), 80);
  EXPECT_EQ(paddedProjectionWidth(36, 16, 8, false), 40);
  EXPECT_EQ(paddedProjectionWidth(36, 64, 0, false), 64);
  EXPECT_EQ(paddedProjectionWidth(400, 64, 16, false), 400);
  EXPECT_EQ(paddedProjectionWidth(400, 64, 16, true), 416);
  EXPECT_EQ(paddedProjectionWidth(1200, 64, 16, true), 1216);
  EXPECT_EQ(paddedProjectionWidth(160, 64, 16, true), 160);
}

/// bf16 products take a static key sequence of at most 128 keys (in steps of 32) as one block
/// where the default of 96 would split it; f32 products, dynamic keys, longer sequences and a
/// block set in the file keep theirs. The f32 kernels' score tiles (which bf16 products do not
/// use) are fitted to divide the block.
TEST(Resolution, TakesShortKeySequencesWholeWithBf16Products) {
  CpuTarget target = makeTarget(512);
  target.avx512bf16 = target.bf16DotOutrunsFma = true;
  auto attention = [&](int64_t seq, DType dtype, const std::string &knobs = "") {
    LayerSpec layer = makeLayer(768, 12, 64, 4, seq);
    layer.dtype = dtype;
    return resolveWithKnobs(target, layer, knobs).attention;
  };
  EXPECT_EQ(attention(128, DType::BF16).keyBlock, 128);
  EXPECT_EQ(attention(128, DType::BF16).scoreTileKeys, 4);
  EXPECT_EQ(attention(97, DType::BF16).keyBlock, 128);
  EXPECT_EQ(attention(96, DType::BF16).keyBlock, 96);
  EXPECT_EQ(attention(40, DType::BF16).keyBlock, 96);
  EXPECT_EQ(attention(129, DType::BF16).keyBlock, 96);
  EXPECT_EQ(attention(kDynamicSize, DType::BF16).keyBlock, 96);
  EXPECT_EQ(attention(128, DType::F32).keyBlock, 96);
  EXPECT_EQ(attention(128, DType::BF16, "  attention_key_block = 64\n").keyBlock, 64);
}

/// A layer whose keys are known at run time only keeps the default blocks and grows them 3x for
/// calls from the keys whose head (S x Dh x 4 bytes, twice) fills the 1 MiB L2: 2048 keys of
/// heads of 64, 1024 of heads of 128; those of static layers were sized at compile time. The
/// grown blocks obey the blocks' rules too: grouped blocks of 512 rows and 256 keys would grow
/// to 1536 rows, whose scratch (2.3 MiB) is past the limit, so they grow 2x.
TEST(Resolution, GrowsTheBlocksOfLongCallsAtRunTime) {
  CpuTarget target = makeTarget(512);
  auto attention = [&](int64_t headDim, int64_t seq, const std::string &knobs) {
    return resolveWithKnobs(target, makeLayer(12 * headDim, 12, headDim, 4, seq), knobs).attention;
  };
  AttentionSchedule heads64 = attention(64, kDynamicSize, "");
  EXPECT_EQ(heads64.longKeys, 2048);
  EXPECT_EQ(heads64.longBlockGrowth, 3);
  EXPECT_EQ(heads64.groupedQueryBlock, 64);
  EXPECT_EQ(attention(128, kDynamicSize, "").longKeys, 1024);
  EXPECT_EQ(attention(64, 8192, "").longKeys, 0);
  AttentionSchedule tall = attention(64, kDynamicSize,
                                     "  attention_grouped_query_block = 512\n"
                                     "  attention_key_block = 256\n");
  EXPECT_EQ(tall.longKeys, 2048);
  EXPECT_EQ(tall.longBlockGrowth, 2);
}

/// A layer whose rows are one cache tile and whose narrowest projection has few panels splits
/// its rows for tasks that share out evenly. Weights within L2 (1 MiB here): as many whole
/// register tiles as make a multiple of 8 tasks with the panels, of at least 4 register tiles
/// each, the few rows left over the split-off last tile. Weights past L2, which every tile
/// reads again: the fewest tiles that make 8 tasks. bf16 pair products' weights are half as
/// many bytes.
TEST(Resolution, BalancesTheTasksOfAOneTileLayer) {
  CpuTarget target = makeTarget(512);
  target.avx512bf16 = target.bf16DotOutrunsFma = true;
  ASSERT_EQ(target.l2Bytes, 1024 * 1024);
  auto cacheRows = [&](int64_t modelDim, int64_t heads, int64_t kvHeads, int64_t seq,
                       DType dtype = DType::F32) {
    LayerSpec layer = makeLayer(modelDim, heads, 64, kvHeads, seq);
    layer.batch = 1;
    layer.dtype = dtype;
    return resolveSchedule(layer, target, nullptr, nullptr).schedule->projection.cacheRows;
  };
  EXPECT_EQ(cacheRows(192, 3, 3, 197), 24);    // 3 panels: 8 x 3 tasks of 24 rows, then 5 rows
  EXPECT_EQ(cacheRows(256, 4, 2, 200), 48);    // 2 panels: 4 x 2 tasks of 48 rows, then 8
  EXPECT_EQ(cacheRows(256, 4, 2, 60), 30);     // tiles of at least 24 rows: 2 x 2 tasks of 30
  EXPECT_EQ(cacheRows(576, 9, 3, 100), 36);    // 1.3 MiB of weights: 3 tiles, 36 + 36 + 28
  EXPECT_EQ(cacheRows(576, 9, 3, 100, DType::BF16), 24); // 0.6 MiB: 4 x 3 tasks of 24, then 4
  EXPECT_EQ(cacheRows(768, 12, 12, 200), 258); // 12 panels: tasks enough
  EXPECT_EQ(cacheRows(192, 3, 3, 1), 6);       // a decoding step: one register tile
}

/// Rows of known count past one default cache tile (258 rows), in whole register tiles, split
/// into as many tiles of about equal rows: no short last tile in the loop. Rows that are no
/// whole register tiles keep the default (their last tile is split off, a loop of its own).
TEST(Resolution, SplitsManyRowsIntoEvenCacheTiles) {
  CpuTarget target = makeTarget(512);
  auto cacheRows = [&](int64_t batch, int64_t seq, const char *knobs) {
    LayerSpec layer = makeLayer(768, 12, 64, 12, seq);
    layer.batch = batch;
    return resolveWithKnobs(target, layer, knobs).projection.cacheRows;
  };
  EXPECT_EQ(cacheRows(3, 150, ""), 228);                                // 228 + 222, not 258 + 192
  EXPECT_EQ(cacheRows(2, 264, ""), 180); // 528 rows: 180 + 180 + 168, not 258 + 258 + 12
  EXPECT_EQ(cacheRows(4, 100, ""), 258); // 400 rows: 258, then 142 split off
  EXPECT_EQ(cacheRows(3, 211, ""), 258); // 633 rows: 2 x 258, then 117 split off
  EXPECT_EQ(cacheRows(8, 128, ""), 258);                                // 4 tiles: 3 x 258 + 250
  EXPECT_EQ(cacheRows(3, 150, "  projection_cache_rows = 240\n"), 240); // the file's, as it is
  LayerSpec dynamic = makeLayer(768, 12, 64, 12, kDynamicSize);
  EXPECT_EQ(resolveSchedule(dynamic, target, nullptr, nullptr).schedule->projection.cacheRows, 258);
}

TEST(Resolution, KeepsWhatTheFileSaysAndFitsTheRest) {
  CpuTarget target = makeTarget(512);
  std::string errors;
  std::optional<ScheduleFile> file =
      read("format = 1\nlayer layer {\n  projection_register_rows = 4\n}\n", target, errors);
  ASSERT_TRUE(file) << errors;
  LayerSpec layer = makeLayer(768, 12, 64, 12, 128);
  Schedule schedule = *resolveSchedule(layer, target, file->find("layer"), nullptr).schedule;
  EXPECT_EQ(schedule.projection.registerRows, 4);
  EXPECT_EQ(schedule.projection.cacheRows, 256); // the largest multiple of 4 up to 258
}

/// A register tile wider than the default cache tile (64 columns on AVX-512) widens it.
TEST(Resolution, WidensCacheTilesToTheRegisterTileWritten) {
  CpuTarget target = makeTarget(512);
  std::string errors;
  std::optional<ScheduleFile> file = read(
      "format = 1\nlayer layer {\n  projection_register_rows = 2\n"
      "  projection_register_cols = 128\n}\n",
      target, errors);
  ASSERT_TRUE(file) << errors;
  LayerSpec layer = makeLayer(1024, 16, 64, 16, 512);
  ScheduleResolution resolution = resolveSchedule(layer, target, file->find("layer"), nullptr);
  ASSERT_TRUE(resolution.schedule) << resolution.error;
  EXPECT_EQ(resolution.schedule->projection.cacheCols, 128);
}

TEST(Resolution, ReportsABrokenRuleAtTheKnobWritten) {
  CpuTarget target = makeTarget(512);
  std::string errors;
  std::optional<ScheduleFile> file =
      read("format = 1\nlayer layer {\n  attention_query_block = 48\n"
           "  attention_score_tile_vectors = 2\n}\n",
           target, errors);
  ASSERT_TRUE(file) << errors;
  LayerSpec layer = makeLayer(768, 12, 64, 12, 128);
  SourceFile source("test.sched", "");
  std::ostringstream out;
  DiagnosticEngine diags(source, out);
  EXPECT_FALSE(resolveSchedule(layer, target, file->find("layer"), &diags).schedule);
  EXPECT_NE(out.str().find("test.sched:4:34: error: attention_score_tile_vectors (2) must "
                           "divide the 3 vectors"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("(legal values of attention_score_tile_vectors here: 1, 3)"),
            std::string::npos)
      << out.str();
}

/// Random values of a target's knobs: mostly near the current one (a power of two away, where
/// the rules' thresholds are), sometimes anywhere in the knob's domain.
class RandomKnobValues {
public:
  explicit RandomKnobValues(const CpuTarget &target) {
    for (const Knob &k : knobs())
      domains_.push_back(domainValues(k, target));
  }

  int64_t operator()(const Knob &k, int64_t current, std::mt19937_64 &random) const {
    const std::vector<int64_t> &values = domains_[static_cast<size_t>(k.id)];
    if (k.type == KnobType::Integer && random() % 4 != 0) {
      int shift = static_cast<int>(random() % 7) - 3;
      int64_t near = shift < 0 ? current >> -shift : current << shift;
      auto above = std::lower_bound(values.begin(), values.end(), near);
      return above == values.end() ? values.back() : *above;
    }
    return values[random() % values.size()];
  }

private:
  std::vector<std::vector<int64_t>> domains_;
};

/// Every rule reads only the knobs it names: legalValues (and so the tuner's moves, the
/// sampler's walks and the fitting of defaults) re-checks a rule only when one of its knobs
/// changes, so a rule reading another knob lets them step into schedules that break it (the
/// register budget read bf16_compute without naming it: a walk changed bf16_compute away from
/// amx under a 32 x 32 tile).
TEST(Constraints, ReadOnlyTheKnobsTheyName) {
  CpuTarget avx2 = makeTarget(256), avx512 = makeTarget(512), bf16 = makeTarget(512),
            amx = makeTarget(512);
  bf16.avx512bf16 = amx.avx512bf16 = amx.amxBf16 = true;
  std::vector<LayerSpec> layers = {makeLayer(768, 12, 64, 12, 128),
                                   makeLayer(640, 8, 80, 2, kDynamicSize),
                                   makeLayer(96, 2, 48, 2, 21), makeLayer(512, 8, 64, 1, 300)};
  layers[2].dtype = layers[3].dtype = DType::BF16;
  std::mt19937_64 random(7);
  CpuTarget cuda = makeCudaTarget(227 * 1024);
  for (const CpuTarget *target : {&avx2, &avx512, &bf16, &amx, &cuda}) {
    RandomKnobValues randomValue(*target);
    for (const LayerSpec &layer : layers) {
      KnobContext context{*target, &layer};
      Schedule base = *resolveSchedule(layer, *target, nullptr, nullptr).schedule;
      for (int trial = 0; trial < 40; ++trial) {
        Schedule schedule = base;
        for (const Knob &k : knobs())
          if (random() % 3 == 0)
            k.set(schedule, randomValue(k, k.get(schedule), random));
        for (const Constraint &rule : constraints()) {
          bool holds = rule.holds(schedule, context);
          for (const Knob &k : knobs()) {
            if (rule.involves(k.id))
              continue;
            for (int sample = 0; sample < 3; ++sample) {
              Schedule changed = schedule;
              k.set(changed, randomValue(k, k.get(schedule), random));
              ASSERT_EQ(rule.holds(changed, context), holds)
                  << "the rule of " << knob(rule.knobs.front()).name << " reads " << k.name
                  << " (" << k.get(schedule) << " -> " << k.get(changed) << ") on "
                  << target->name << ": " << rule.explain(holds ? changed : schedule, context);
            }
          }
        }
      }
    }
  }
}

TEST(ScheduleFiles, PrintedSchedulesReadBackTheSame) {
  for (unsigned bits : {256u, 512u}) {
    for (Backend backend : {Backend::Mlir, Backend::Halide}) {
      CpuTarget target = makeTarget(bits);
      LayerSpec layer = makeLayer(640, 8, 80, 2, kDynamicSize);
      Schedule schedule = *resolveSchedule(layer, target, nullptr, nullptr).schedule;
      schedule.attention.prefetchValues = false;
      schedule.attention.transposeLowering = TransposeLowering::Shuffle1D;
      schedule.halide.projectionTaskRows = 3 * schedule.halide.projectionRows;
      std::string text = printScheduleFile({{"layer", schedule}}, "test.mha", target, backend);
      std::string errors;
      std::optional<ScheduleFile> file = read(text, target, errors);
      ASSERT_TRUE(file) << errors;
      // A file holds the knobs of its backend only; the others keep their defaults.
      ASSERT_EQ(file->find("layer")->settings.size(), backendKnobs(backend).size());
      ScheduleResolution again = resolveSchedule(layer, target, file->find("layer"), nullptr);
      ASSERT_TRUE(again.schedule);
      for (const Knob *k : backendKnobs(backend))
        EXPECT_EQ(k->get(*again.schedule), k->get(schedule)) << k->name;
    }
  }
}

TEST(ScheduleFiles, KnobsOfTheOtherBackendAreErrors) {
  CpuTarget target = makeTarget(256);
  SourceFile file("test.sched", "format = 1\nlayer a {\n  halide_query_block = 32\n}\n");
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  EXPECT_FALSE(readScheduleFile(file, diags, target, "layer", Backend::Mlir));
  EXPECT_NE(out.str().find("test.sched:3:3: error: 'halide_query_block' is a knob of the halide "
                           "backend; this compilation uses --backend mlir"),
            std::string::npos)
      << out.str();
  SourceFile other("test.sched", "format = 1\nlayer a {\n  attention_key_block = 32\n}\n");
  std::ostringstream otherOut;
  DiagnosticEngine otherDiags(other, otherOut);
  EXPECT_FALSE(readScheduleFile(other, otherDiags, target, "layer", Backend::Halide));
  EXPECT_NE(otherOut.str().find("is a knob of the mlir backend"), std::string::npos)
      << otherOut.str();
}

TEST(ScheduleFiles, ReportEveryIndependentError) {
  std::string errors;
  EXPECT_FALSE(read("format = 1\nlayer a {\n  attention_key_blok = 1\n  attention_key_block = 0\n"
                    "  attention_prefetch_values = yes\n}\n",
                    makeTarget(256), errors));
  EXPECT_NE(errors.find("test.sched:3:3: error: unknown knob"), std::string::npos) << errors;
  EXPECT_NE(errors.find("test.sched:4:25: error: attention_key_block = 0 is out of range"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("test.sched:5:31: error: attention_prefetch_values takes true or false"),
            std::string::npos)
      << errors;
}

} // namespace
} // namespace mhac
