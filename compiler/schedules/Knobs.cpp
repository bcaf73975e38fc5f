//===- Knobs.cpp - the table of schedule knobs and their constraints ------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/Knobs.h"

#include "compiler/schedules/AttentionBlock.h"
#include "compiler/schedules/CudaBlocks.h"

#include "llvm/Support/MathExtras.h"
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>

namespace mhac {
namespace {

/// Accessors of the field `Field` of the group `Group` of a schedule, as int64_t.
template <auto Group, auto Field> int64_t getField(const Schedule &schedule) {
  return static_cast<int64_t>(schedule.*Group.*Field);
}
template <auto Group, auto Field> void setField(Schedule &schedule, int64_t value) {
  using T = std::remove_reference_t<decltype(schedule.*Group.*Field)>;
  schedule.*Group.*Field = static_cast<T>(value);
}

/// The knob that is the field `Field` of the group `Group` (&Schedule::projection or
/// &Schedule::attention).
template <auto Group, auto Field>
Knob makeKnob(KnobId id, std::string_view name, std::string_view summary, KnobType type,
              int64_t min, int64_t max, int64_t step = 1) {
  return Knob{id,
              name,
              summary,
              type,
              {},
              min,
              max,
              step,
              &getField<Group, Field>,
              &setField<Group, Field>};
}

constexpr auto kProjection = &Schedule::projection;
constexpr auto kAttention = &Schedule::attention;
constexpr auto kHalide = &Schedule::halide;
constexpr auto kCuda = &Schedule::cuda;

Knob forHalide(Knob knob) {
  knob.backend = Backend::Halide;
  return knob;
}

Knob forCuda(Knob knob) {
  knob.backend = Backend::Cuda;
  return knob;
}

Knob withChoices(Knob knob, std::vector<std::string_view> choices) {
  knob.choices = std::move(choices);
  knob.min = 0;
  knob.max = static_cast<int64_t>(knob.choices.size()) - 1;
  return knob;
}

constexpr int64_t kLanes = 0; ///< a step of the target's f32 lanes
constexpr KnobType kInteger = KnobType::Integer, kBoolean = KnobType::Boolean,
                   kChoice = KnobType::Choice;

std::vector<Knob> makeKnobs() {
  using P = ProjectionSchedule;
  using A = AttentionSchedule;
  using H = HalideSchedule;
  using C = CudaSchedule;
  return {
      makeKnob<kProjection, &P::cacheRows>(KnobId::ProjectionCacheRows, "projection_cache_rows",
                                           "rows of a parallel task (cache tile)", kInteger, 1,
                                           65536),
      makeKnob<kProjection, &P::cacheCols>(KnobId::ProjectionCacheCols, "projection_cache_cols",
                                           "output columns of a parallel task", kInteger, 1, 65536),
      makeKnob<kProjection, &P::registerRows>(KnobId::ProjectionRegisterRows,
                                              "projection_register_rows",
                                              "rows of the register tile", kInteger, 1, 32),
      makeKnob<kProjection, &P::registerCols>(
          KnobId::ProjectionRegisterCols, "projection_register_cols",
          "columns of the register tile and weight panels", kInteger, kLanes, 512, kLanes),
      makeKnob<kProjection, &P::reductionBlock>(
          KnobId::ProjectionReductionBlock, "projection_reduction_block",
          "inputs per reduction block (unpacked weights)", kInteger, 1, 65536),
      makeKnob<kProjection, &P::panelReductionBlock>(
          KnobId::ProjectionPanelReductionBlock, "projection_panel_reduction_block",
          "inputs per reduction block of weight panels (0: all)", kInteger, 0, 65536),
      makeKnob<kProjection, &P::reductionUnroll>(
          KnobId::ProjectionReductionUnroll, "projection_reduction_unroll",
          "reduction steps per loop iteration", kInteger, 1, 16),
      makeKnob<kProjection, &P::splitLastCacheTile>(
          KnobId::ProjectionSplitLastCacheTile, "projection_split_last_cache_tile",
          "last cache tile split off, its edge rows static", kBoolean, 0, 1),
      makeKnob<kProjection, &P::prefetchNextBlock>(
          KnobId::ProjectionPrefetchNextBlock, "projection_prefetch_next_block",
          "tiles prefetch the next weight block into L2", kBoolean, 0, 1),
      makeKnob<kProjection, &P::rowPadding>(KnobId::ProjectionRowPadding, "projection_row_padding",
                                            "padding of rows 1 KiB apart, in 4-byte words",
                                            kInteger, 0, 256),
      makeKnob<kProjection, &P::transposeTile>(
          KnobId::ProjectionTransposeTile, "projection_transpose_tile",
          "tile side of unpacked weights' transposes", kInteger, 1, 1024),
      makeKnob<kAttention, &A::queryBlock>(KnobId::AttentionQueryBlock, "attention_query_block",
                                           "query rows per block (at most the sequence)", kInteger,
                                           kLanes, 512, kLanes),
      makeKnob<kAttention, &A::groupedQueryBlock>(
          KnobId::AttentionGroupedQueryBlock, "attention_grouped_query_block",
          "rows per block of grouped-query layers", kInteger, kLanes, 512, kLanes),
      makeKnob<kAttention, &A::longKeys>(KnobId::AttentionLongKeys, "attention_long_keys",
                                         "keys from which calls run taller blocks (0: never)",
                                         kInteger, 0, 65536),
      makeKnob<kAttention, &A::longBlockGrowth>(
          KnobId::AttentionLongBlockGrowth, "attention_long_block_growth",
          "times taller the blocks of those calls are", kInteger, 1, 8),
      makeKnob<kAttention, &A::keyBlock>(KnobId::AttentionKeyBlock, "attention_key_block",
                                         "keys per block of scores", kInteger, 1, 1024),
      makeKnob<kAttention, &A::scoreTileKeys>(KnobId::AttentionScoreTileKeys,
                                              "attention_score_tile_keys",
                                              "keys (rows) of the score tile", kInteger, 1, 32),
      makeKnob<kAttention, &A::scoreTileVectors>(
          KnobId::AttentionScoreTileVectors, "attention_score_tile_vectors",
          "query vectors (columns) of the score tile", kInteger, 1, 32),
      makeKnob<kAttention, &A::valueTileRows>(KnobId::AttentionValueTileRows,
                                              "attention_value_tile_rows",
                                              "query rows of the p.v tile", kInteger, 1, 32),
      makeKnob<kAttention, &A::valueTileVectors>(
          KnobId::AttentionValueTileVectors, "attention_value_tile_vectors",
          "head vectors (columns) of the p.v tile", kInteger, 1, 32),
      withChoices(makeKnob<kAttention, &A::queryTranspose>(
                      KnobId::AttentionQueryTranspose, "attention_query_transpose",
                      "how a block's queries are transposed", kChoice, 0, 1),
                  {"tiles", "elements"}),
      withChoices(makeKnob<kAttention, &A::transposeLowering>(
                      KnobId::AttentionTransposeLowering, "attention_transpose_lowering",
                      "instructions of a tile's transpose", kChoice, 0, 2),
                  {"shuffle_16x16", "shuffle_1d", "elements"}),
      makeKnob<kAttention, &A::keyPrefetchDistance>(
          KnobId::AttentionKeyPrefetchDistance, "attention_key_prefetch_distance",
          "key tiles ahead to prefetch (0: none)", kInteger, 0, 8),
      makeKnob<kAttention, &A::prefetchValues>(
          KnobId::AttentionPrefetchValues, "attention_prefetch_values",
          "prefetch each key tile's value rows", kBoolean, 0, 1),
      makeKnob<kAttention, &A::prefetchNextBlock>(
          KnobId::AttentionPrefetchNextBlock, "attention_prefetch_next_block",
          "prefetch the next task's queries, this output", kBoolean, 0, 1),
      makeKnob<kAttention, &A::decodePositions>(
          KnobId::AttentionDecodePositions, "attention_decode_positions",
          "calls of at most this many positions against a cache: the decode nest", kInteger, 0,
          64),
      makeKnob<kAttention, &A::decodeChunk>(KnobId::AttentionDecodeChunk,
                                            "attention_decode_chunk",
                                            "keys of one row per decode task", kInteger, 1,
                                            1 << 20),
      makeKnob<kAttention, &A::decodeKeyBlock>(
          KnobId::AttentionDecodeKeyBlock, "attention_decode_key_block",
          "keys per softmax block of a decode task", kInteger, 16, 1024, /*step=*/0),
      withChoices(makeKnob<kAttention, &A::compute>(
                      KnobId::AttentionCompute, "attention_compute",
                      "bf16 layers: attention's products in f32, or bf16 on vdpbf16ps or AMX",
                      kChoice, 0, 2),
                  {"f32", "dot", "amx"}),
      Knob{KnobId::Bf16Compute,
           "bf16_compute",
           "bf16 layers: widened at the edges, bf16 inside, or projections on vdpbf16ps or AMX",
           kChoice,
           {"f32", "bf16", "dot", "amx"},
           0,
           3,
           1,
           [](const Schedule &s) { return static_cast<int64_t>(s.bf16Compute); },
           [](Schedule &s, int64_t value) { s.bf16Compute = static_cast<Bf16Compute>(value); }},
      forHalide(makeKnob<kHalide, &H::projectionVectors>(
          KnobId::HalideProjectionVectors, "halide_projection_vectors",
          "vectors of features per projection register tile", kInteger, 1, 8)),
      forHalide(makeKnob<kHalide, &H::projectionRows>(
          KnobId::HalideProjectionRows, "halide_projection_rows",
          "rows per projection register tile", kInteger, 1, 16)),
      forHalide(makeKnob<kHalide, &H::projectionTaskRows>(
          KnobId::HalideProjectionTaskRows, "halide_projection_task_rows",
          "rows per projection task", kInteger, 1, 4096)),
      forHalide(makeKnob<kHalide, &H::projectionReductionBlock>(
          KnobId::HalideProjectionReductionBlock, "halide_projection_reduction_block",
          "input features per reduction block", kInteger, 1, 65536)),
      forHalide(makeKnob<kHalide, &H::queryBlock>(KnobId::HalideQueryBlock, "halide_query_block",
                                                  "query rows per attention task", kInteger, 1,
                                                  1024)),
      forHalide(
          makeKnob<kHalide, &H::scoreVectors>(KnobId::HalideScoreVectors, "halide_score_vectors",
                                              "vectors of keys per score tile", kInteger, 1, 8)),
      forHalide(makeKnob<kHalide, &H::scoreRows>(KnobId::HalideScoreRows, "halide_score_rows",
                                                 "query rows per score tile", kInteger, 1, 16)),
      forHalide(makeKnob<kHalide, &H::valueVectors>(
          KnobId::HalideValueVectors, "halide_value_vectors",
          "vectors of head features per p.v tile", kInteger, 1, 8)),
      forHalide(makeKnob<kHalide, &H::valueRows>(KnobId::HalideValueRows, "halide_value_rows",
                                                 "query rows per p.v tile", kInteger, 1, 16)),
      forHalide(makeKnob<kHalide, &H::keyBlock>(KnobId::HalideKeyBlock, "halide_key_block",
                                                "keys per block of p.v", kInteger, 1, 65536)),
      forHalide(withChoices(makeKnob<kHalide, &H::autoscheduler>(
                                KnobId::HalideAutoscheduler, "halide_autoscheduler",
                                "Halide's autoscheduler instead of the knobs", kChoice, 0, 4),
                            {"none", "Mullapudi2016", "Adams2019", "Li2018", "Anderson2021"})),
      forCuda(makeKnob<kCuda, &C::projectionBlockRows>(
          KnobId::CudaProjectionBlockRows, "cuda_projection_block_rows",
          "output rows of a projection block", kInteger, 1, 256)),
      forCuda(makeKnob<kCuda, &C::projectionBlockCols>(
          KnobId::CudaProjectionBlockCols, "cuda_projection_block_cols",
          "output columns of a projection block", kInteger, 1, 256)),
      forCuda(makeKnob<kCuda, &C::projectionKBlock>(
          KnobId::CudaProjectionKBlock, "cuda_projection_k_block",
          "input features staged in shared memory at a time", kInteger, 1, 128)),
      forCuda(makeKnob<kCuda, &C::projectionThreadRows>(
          KnobId::CudaProjectionThreadRows, "cuda_projection_thread_rows",
          "rows of a thread's tile", kInteger, 1, 16)),
      forCuda(makeKnob<kCuda, &C::projectionThreadCols>(
          KnobId::CudaProjectionThreadCols, "cuda_projection_thread_cols",
          "columns of a thread's tile", kInteger, 1, 16)),
      forCuda(makeKnob<kCuda, &C::attentionQueryBlock>(
          KnobId::CudaAttentionQueryBlock, "cuda_attention_query_block",
          "query rows of an attention block", kInteger, 1, 1024)),
      forCuda(makeKnob<kCuda, &C::attentionKeyBlock>(
          KnobId::CudaAttentionKeyBlock, "cuda_attention_key_block", "keys per shared-memory tile",
          kInteger, 1, 128)),
      forCuda(makeKnob<kCuda, &C::attentionRowThreads>(
          KnobId::CudaAttentionRowThreads, "cuda_attention_row_threads",
          "threads per query row (a power of two)", kInteger, 1, 32)),
      forCuda(makeKnob<kCuda, &C::mmaBlockRows>(KnobId::CudaMmaBlockRows, "cuda_mma_block_rows",
                                                "output rows of a tensor-core projection block",
                                                kInteger, 16, 256, 16)),
      forCuda(makeKnob<kCuda, &C::mmaBlockCols>(KnobId::CudaMmaBlockCols, "cuda_mma_block_cols",
                                                "output columns of a tensor-core projection block",
                                                kInteger, 16, 256, 16)),
      forCuda(makeKnob<kCuda, &C::mmaWarpRows>(KnobId::CudaMmaWarpRows, "cuda_mma_warp_rows",
                                               "warps along a block's rows", kInteger, 1, 16)),
      forCuda(makeKnob<kCuda, &C::mmaWarpCols>(KnobId::CudaMmaWarpCols, "cuda_mma_warp_cols",
                                               "warps along a block's columns", kInteger, 1, 16)),
      forCuda(makeKnob<kCuda, &C::mmaStages>(
          KnobId::CudaMmaStages, "cuda_mma_stages",
          "shared-memory buffers of the reduction (cp.async pipeline)", kInteger, 2, 4)),
      forCuda(makeKnob<kCuda, &C::mmaAttentionWarps>(
          KnobId::CudaMmaAttentionWarps, "cuda_mma_attention_warps",
          "warps of a tensor-core attention block (16 query rows each)", kInteger, 1, 16)),
      forCuda(makeKnob<kCuda, &C::mmaAttentionGroupHeads>(
          KnobId::CudaMmaAttentionGroupHeads, "cuda_mma_attention_group_heads",
          "heads of a kv group per tensor-core attention block (share its tiles)", kInteger, 1,
          16)),
      forCuda(makeKnob<kCuda, &C::mmaAttentionKeyBlock>(
          KnobId::CudaMmaAttentionKeyBlock, "cuda_mma_attention_key_block",
          "keys per tile of tensor-core attention", kInteger, 16, 256, 16)),
  };
}

//===-- The rules ---------------------------------------------------------===//

int64_t lanesOf(const KnobContext &c) { return c.target.lanes(); }

/// Registers a register tile of rows x vectors needs: its accumulators, one row of loaded
/// vectors and one broadcast.
int64_t tileRegisters(int64_t rows, int64_t vectors) { return rows * vectors + vectors + 1; }

/// A block of the layer's calls, and how much its rows grew (attention_long_block_growth).
struct GrownBlock {
  int64_t growth;
  AttentionBlock block;
};

/// The blocks the layer's calls run, plain first (blockGrowths): a rule of the blocks holds for
/// each of them.
std::vector<GrownBlock> blocksOf(const Schedule &s, const KnobContext &c) {
  const LayerSpec &layer = *c.layer;
  const AttentionSchedule &a = s.attention;
  std::vector<GrownBlock> blocks;
  for (int64_t growth : blockGrowths(layer.kvSeq, a.longKeys, a.longBlockGrowth))
    blocks.push_back({growth, attentionBlock(layer.heads / layer.kvHeads, layer.seq,
                                             growth * a.queryBlock, growth * a.groupedQueryBlock,
                                             lanesOf(c))});
  return blocks;
}

using BlockRule = std::function<bool(const AttentionBlock &)>;

/// The first of the layer's blocks that breaks `holds`, else its last.
GrownBlock blockBreaking(const Schedule &s, const KnobContext &c, const BlockRule &holds) {
  std::vector<GrownBlock> blocks = blocksOf(s, c);
  auto it = std::find_if(blocks.begin(), blocks.end(),
                         [&](const GrownBlock &grown) { return !holds(grown.block); });
  return it == blocks.end() ? blocks.back() : *it;
}

/// Whether every block of the layer's calls keeps `holds`.
bool everyBlock(const Schedule &s, const KnobContext &c, const BlockRule &holds) {
  std::vector<GrownBlock> blocks = blocksOf(s, c);
  return std::all_of(blocks.begin(), blocks.end(),
                     [&](const GrownBlock &grown) { return holds(grown.block); });
}

/// Which calls run `grown`, for a rule's message: nothing for the plain blocks.
std::string callsOf(const GrownBlock &grown, const Schedule &s) {
  if (grown.growth == 1)
    return "";
  return fmt::format(" for calls of at least {} keys (attention_long_keys; "
                     "attention_long_block_growth = {})",
                     s.attention.longKeys, grown.growth);
}

/// Bytes of one attention task's scratch on its thread's stack, for a block of `rows`: the
/// transposed queries, the scores, the accumulators and the rescale factors.
int64_t scratchBytes(const Schedule &s, const KnobContext &c, int64_t rows) {
  int64_t head = c.layer->headDim, keys = s.attention.keyBlock;
  int64_t shared = 4 * (head * rows + keys * rows + rows);
  if (s.attention.compute == AttentionCompute::F32)
    return shared + 4 * head * rows;
  // bf16 products: the queries as bf16 pairs, their rows padded to whole steps of 32; the
  // probabilities as bf16 pairs; the transposed accumulators.
  return shared + 2 * amxPaddedHead(head) * rows + 2 * keys * rows + 4 * head * rows;
}

/// The scratch of the tallest of the layer's plain blocks, or (`grown`) of those grown for
/// long calls; 0 where it has none.
int64_t scratchBytes(const Schedule &s, const KnobContext &c, bool grown) {
  int64_t rows = 0;
  for (const GrownBlock &block : blocksOf(s, c))
    if ((block.growth > 1) == grown)
      rows = std::max(rows, block.block.rows);
  return scratchBytes(s, c, rows);
}

/// The most scratch a task may take: 2 MiB, which leaves most of a thread's stack (8 MiB by
/// default on Linux) to the caller, or twice what the layer's smallest blocks need where its
/// heads are so wide (thousands of elements) that those alone come near it.
int64_t scratchLimit(const Schedule &s, const KnobContext &c) {
  constexpr int64_t kMaxScratchBytes = 2 * 1024 * 1024;
  Schedule smallest = s;
  smallest.attention.keyBlock = 1;
  const LayerSpec &layer = *c.layer;
  int64_t lanes = lanesOf(c);
  int64_t rows = attentionBlock(layer.heads / layer.kvHeads, layer.seq, lanes, lanes, lanes).rows;
  return std::max(kMaxScratchBytes, 2 * scratchBytes(smallest, c, rows));
}

/// The scratch of a decode task (convert-mha-attention-to-loops's split-cache nest): its rows'
/// scaled queries and accumulators (heads padded to whole vectors), a block of scores, the
/// products of a vector of keys, and three scalars a row; 0 where the layer has no cache.
int64_t decodeScratchBytes(const Schedule &s, const KnobContext &c) {
  const LayerSpec &layer = *c.layer;
  if (!layer.kvCache)
    return 0;
  int64_t rows = layer.heads / layer.kvHeads * s.attention.decodePositions;
  int64_t width = vectorsFor(layer.headDim, lanesOf(c)) * lanesOf(c);
  return 4 * rows * (2 * width + s.attention.decodeKeyBlock + lanesOf(c) * lanesOf(c) + 3);
}

/// The knob that sets the rows of the layer's blocks.
std::string_view blockKnob(const KnobContext &c) {
  return c.layer->heads > c.layer->kvHeads ? "attention_grouped_query_block"
                                           : "attention_query_block";
}

/// `multiple`'s value is a multiple of `factor`'s, "so that `purpose`"; `knobs` lists both,
/// most specific first.
Constraint multipleRule(KnobId multiple, KnobId factor, std::vector<KnobId> knobs,
                        std::string purpose) {
  return {std::move(knobs), false,
          [=](const Schedule &s, const KnobContext &) {
            return knob(multiple).get(s) % knob(factor).get(s) == 0;
          },
          [=](const Schedule &s, const KnobContext &) {
            return fmt::format("{} ({}) must be a multiple of {} ({}), so that {}",
                               knob(multiple).name, knob(multiple).get(s), knob(factor).name,
                               knob(factor).get(s), purpose);
          }};
}

/// The register tile `tile` of `rows` x `vectors` fits in the target's registers; with
/// `inLanes`, `vectors` counts f32 lanes (columns) rather than vectors.
Constraint budgetRule(std::string tile, KnobId rows, KnobId vectors, bool inLanes = false) {
  auto vectorCount = [=](const Schedule &s, const KnobContext &c) {
    return knob(vectors).get(s) / (inLanes ? lanesOf(c) : 1);
  };
  return {{rows, vectors},
          false,
          [=](const Schedule &s, const KnobContext &c) {
            return tileRegisters(knob(rows).get(s), vectorCount(s, c)) <= c.target.vectorRegisters;
          },
          [=](const Schedule &s, const KnobContext &c) {
            int64_t r = knob(rows).get(s), v = vectorCount(s, c);
            return fmt::format("{} of {} x {} vectors needs {} vector registers ({} "
                               "accumulators, {} loaded, 1 broadcast); {} has {} (lower {} or {})",
                               tile, r, v, tileRegisters(r, v), r * v, v, c.target.name,
                               c.target.vectorRegisters, knob(rows).name, knob(vectors).name);
          }};
}

/// The spelling of `s`'s attention_compute.
std::string_view attentionComputeName(const Schedule &s) {
  return knob(KnobId::AttentionCompute).choices[static_cast<size_t>(s.attention.compute)];
}

/// A block of whole AMX tiles' rows.
bool wholeAmxTiles(const AttentionBlock &block) { return block.rows % kAmxTileRows == 0; }

/// A block whose vectors are whole chunks of the score tile's.
BlockRule wholeScoreChunks(const Schedule &s, const KnobContext &c) {
  int64_t lanes = lanesOf(c), vectors = s.attention.scoreTileVectors;
  return [=](const AttentionBlock &block) { return block.vectors(lanes) % vectors == 0; };
}

/// A block of whole p.v tiles' rows.
BlockRule wholeValueTiles(const Schedule &s) {
  int64_t rows = s.attention.valueTileRows;
  return [=](const AttentionBlock &block) { return block.rows % rows == 0; };
}

/// `rule`, which holds where the projections' register tiles are AMX tiles (which hold their
/// results in tile registers, not vector registers).
Constraint unlessAmx(Constraint rule) {
  rule.knobs.push_back(KnobId::Bf16Compute);
  rule.holds = [holds = std::move(rule.holds)](const Schedule &s, const KnobContext &c) {
    return s.bf16Compute == Bf16Compute::Amx || holds(s, c);
  };
  return rule;
}

/// A rule of the CUDA target's knobs, which holds on CPU targets (their schedules never read
/// those knobs).
Constraint cudaRule(std::vector<KnobId> knobs, bool needsLayer,
                    std::function<bool(const CudaSchedule &, const KnobContext &)> holds,
                    std::function<std::string(const CudaSchedule &, const KnobContext &)> explain) {
  return {std::move(knobs), needsLayer,
          [holds](const Schedule &s, const KnobContext &c) {
            return !c.target.cuda || holds(s.cuda, c);
          },
          [explain](const Schedule &s, const KnobContext &c) { return explain(s.cuda, c); }};
}

/// multipleRule for knobs of the CUDA target, zero (and unread) on CPU targets.
Constraint cudaMultipleRule(KnobId multiple, KnobId factor, std::string purpose) {
  Constraint rule = multipleRule(multiple, factor, {factor, multiple}, std::move(purpose));
  rule.holds = [holds = rule.holds](const Schedule &s, const KnobContext &c) {
    return !c.target.cuda || holds(s, c);
  };
  return rule;
}

/// Whole warps, at most 1024 threads: what a block of CUDA threads may be here (the warp
/// shuffles of attention need whole warps).
bool wholeWarps(int64_t threads) { return threads >= 32 && threads <= 1024 && threads % 32 == 0; }

/// Shared memory the lowering of gpu.dynamic_shared_memory reserves statically before the
/// dynamic part (one aligned byte), which a block's total must leave room for.
constexpr int64_t kStaticSharedBytes = 16;

/// A block's whole shared memory, given its dynamic part (CudaBlocks.h).
int64_t withStaticShared(int64_t dynamicBytes) { return kStaticSharedBytes + dynamicBytes; }

/// Registers a thread's tiles take, estimated: a projection thread's accumulators and loaded
/// weights; an attention thread's scores and its slices of the query and output. Past
/// kCudaTileRegisters, ptxas would spill what the kernels mean to keep in registers.
constexpr int64_t kCudaTileRegisters = 160;
int64_t projectionTileRegisters(const CudaSchedule &s) {
  return s.projectionThreadRows * s.projectionThreadCols + s.projectionThreadCols;
}
/// Head features an attention thread holds, and the fewest it may.
int64_t attentionSlice(const CudaSchedule &s, const LayerSpec &layer) {
  return (layer.headDim + s.attentionRowThreads - 1) / s.attentionRowThreads;
}
constexpr int64_t kMinAttentionSlice = 16;
int64_t attentionTileRegisters(const CudaSchedule &s, const LayerSpec &layer) {
  return s.attentionKeyBlock + 2 * attentionSlice(s, layer);
}
/// Registers an attention thread needs besides its tile: addresses, loop counters, the
/// softmax state (ptxas used 96 for a tile of 64 at head 64).
constexpr int64_t kCudaThreadOverhead = 32;
/// The registers of one streaming multiprocessor, which a block's threads share.
constexpr int64_t kCudaBlockRegisters = 65536;

/// The accumulators of a tensor-core projection warp's tile (four per 16 x 8 product, per
/// thread), with its fragments.
int64_t mmaTileRegisters(const CudaSchedule &s) {
  int64_t mTiles = s.mmaBlockRows / s.mmaWarpRows / 16, nTiles = s.mmaBlockCols / s.mmaWarpCols / 8;
  return 4 * mTiles * nTiles + 4 * mTiles + 2 * nTiles;
}
/// A tensor-core attention thread's fragments: the queries' (head / 4 registers), the scores'
/// (keys / 2) and the output's (head / 2).
int64_t mmaAttentionRegisters(const CudaSchedule &s, const LayerSpec &layer) {
  return layer.headDim / 4 + s.mmaAttentionKeyBlock / 2 + layer.headDim / 2;
}
std::vector<Constraint> cudaConstraints() {
  using K = KnobId;
  return {
      cudaMultipleRule(K::CudaMmaAttentionWarps, K::CudaMmaAttentionGroupHeads,
                       "each head of a block gets whole slabs of 16 query rows"),
      cudaRule(
          {K::CudaMmaAttentionGroupHeads}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return !cudaAttentionOnTensorCores(*c.layer) ||
                   (c.layer->heads / c.layer->kvHeads) % s.mmaAttentionGroupHeads == 0;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("cuda_mma_attention_group_heads ({}) must divide layer "
                               "'{}''s groups of {} heads per kv head, so that a block's "
                               "heads share one kv head",
                               s.mmaAttentionGroupHeads, c.layer->name,
                               c.layer->heads / c.layer->kvHeads);
          }),
      cudaRule(
          {K::CudaMmaAttentionKeyBlock}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return !cudaAttentionOnTensorCores(*c.layer) ||
                   mmaAttentionRegisters(s, *c.layer) <= kCudaTileRegisters;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("tensor-core attention of layer '{}' with {} keys per tile "
                               "needs about {} registers for its fragments, more than the {} "
                               "it may keep without spilling (lower "
                               "cuda_mma_attention_key_block)",
                               c.layer->name, s.mmaAttentionKeyBlock,
                               mmaAttentionRegisters(s, *c.layer), kCudaTileRegisters);
          }),
      cudaRule(
          {K::CudaMmaAttentionWarps, K::CudaMmaAttentionKeyBlock}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return !cudaAttentionOnTensorCores(*c.layer) ||
                   withStaticShared(mmaAttentionSharedBytes(s, c.layer->headDim)) <=
                       c.target.cuda->sharedBytes;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("tensor-core attention of layer '{}' would stage {} bytes of "
                               "queries, keys and values in shared memory; {} allows {} per "
                               "block (lower cuda_mma_attention_warps or "
                               "cuda_mma_attention_key_block)",
                               c.layer->name,
                               withStaticShared(mmaAttentionSharedBytes(s, c.layer->headDim)),
                               c.target.cuda->chip, c.target.cuda->sharedBytes);
          }),
      cudaRule(
          {K::CudaMmaWarpRows, K::CudaMmaBlockRows}, false,
          [](const CudaSchedule &s, const KnobContext &) {
            return s.mmaBlockRows % (16 * s.mmaWarpRows) == 0;
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("cuda_mma_block_rows ({}) must be a multiple of 16 x "
                               "cuda_mma_warp_rows ({}), so that each warp's rows are whole "
                               "16-row products",
                               s.mmaBlockRows, s.mmaWarpRows);
          }),
      cudaRule(
          {K::CudaMmaWarpCols, K::CudaMmaBlockCols}, false,
          [](const CudaSchedule &s, const KnobContext &) {
            return s.mmaBlockCols % (16 * s.mmaWarpCols) == 0;
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("cuda_mma_block_cols ({}) must be a multiple of 16 x "
                               "cuda_mma_warp_cols ({}), so that each warp's columns are "
                               "pairs of 8-column products",
                               s.mmaBlockCols, s.mmaWarpCols);
          }),
      cudaRule(
          {K::CudaMmaWarpRows, K::CudaMmaWarpCols}, false,
          [](const CudaSchedule &s, const KnobContext &) { return mmaThreads(s) <= 1024; },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("{} x {} warps make {} threads; a block has at most 1024",
                               s.mmaWarpRows, s.mmaWarpCols, mmaThreads(s));
          }),
      cudaRule(
          {K::CudaMmaBlockRows, K::CudaMmaBlockCols, K::CudaMmaWarpRows, K::CudaMmaWarpCols}, false,
          [](const CudaSchedule &s, const KnobContext &) {
            return s.mmaBlockRows % (16 * s.mmaWarpRows) != 0 ||
                   s.mmaBlockCols % (16 * s.mmaWarpCols) != 0 ||
                   mmaTileRegisters(s) <= kCudaTileRegisters;
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("a warp's tile of {} x {} needs about {} registers for its "
                               "accumulators and fragments, more than the {} it may keep "
                               "without spilling (use more warps or a smaller block)",
                               s.mmaBlockRows / s.mmaWarpRows, s.mmaBlockCols / s.mmaWarpCols,
                               mmaTileRegisters(s), kCudaTileRegisters);
          }),
      cudaRule(
          {K::CudaMmaStages, K::CudaMmaBlockRows, K::CudaMmaBlockCols}, false,
          [](const CudaSchedule &s, const KnobContext &c) {
            return withStaticShared(mmaSharedBytes(s)) <= c.target.cuda->sharedBytes;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("{} stages of a {} x {} tensor-core block take {} bytes of "
                               "shared memory; {} allows {} per block (lower "
                               "cuda_mma_stages)",
                               s.mmaStages, s.mmaBlockRows, s.mmaBlockCols,
                               withStaticShared(mmaSharedBytes(s)), c.target.cuda->chip,
                               c.target.cuda->sharedBytes);
          }),
      cudaMultipleRule(K::CudaProjectionBlockRows, K::CudaProjectionThreadRows,
                       "a block is whole thread tiles"),
      cudaMultipleRule(K::CudaProjectionBlockCols, K::CudaProjectionThreadCols,
                       "a block is whole thread tiles"),
      cudaRule(
          {K::CudaProjectionThreadRows, K::CudaProjectionThreadCols}, false,
          [](const CudaSchedule &s, const KnobContext &) {
            return projectionTileRegisters(s) <= kCudaTileRegisters;
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("a projection thread's tile of {} x {} needs about {} "
                               "registers, more than the {} it may keep without spilling "
                               "(lower cuda_projection_thread_rows or "
                               "cuda_projection_thread_cols)",
                               s.projectionThreadRows, s.projectionThreadCols,
                               projectionTileRegisters(s), kCudaTileRegisters);
          }),
      cudaRule(
          {K::CudaProjectionBlockRows, K::CudaProjectionBlockCols, K::CudaProjectionThreadRows,
           K::CudaProjectionThreadCols},
          false,
          [](const CudaSchedule &s, const KnobContext &) {
            return s.projectionBlockRows % s.projectionThreadRows != 0 ||
                   s.projectionBlockCols % s.projectionThreadCols != 0 ||
                   wholeWarps(projectionThreads(s));
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("a projection block of {} x {} in thread tiles of {} x {} "
                               "has {} threads; a block must be whole warps of 32, at most "
                               "1024 threads",
                               s.projectionBlockRows, s.projectionBlockCols, s.projectionThreadRows,
                               s.projectionThreadCols, projectionThreads(s));
          }),
      cudaRule(
          {K::CudaProjectionKBlock, K::CudaProjectionBlockRows, K::CudaProjectionBlockCols}, false,
          [](const CudaSchedule &s, const KnobContext &c) {
            return withStaticShared(projectionSharedBytes(s)) <= c.target.cuda->sharedBytes;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("a projection block would stage {} bytes in shared memory; "
                               "{} allows {} per block (lower cuda_projection_k_block)",
                               withStaticShared(projectionSharedBytes(s)), c.target.cuda->chip,
                               c.target.cuda->sharedBytes);
          }),
      cudaRule(
          {K::CudaAttentionRowThreads}, false,
          [](const CudaSchedule &s, const KnobContext &) {
            return (s.attentionRowThreads & (s.attentionRowThreads - 1)) == 0;
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("cuda_attention_row_threads ({}) must be a power of two, "
                               "so that a row's threads reduce its scores by warp shuffles",
                               s.attentionRowThreads);
          }),
      cudaRule(
          {K::CudaAttentionRowThreads}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return attentionSlice(s, *c.layer) >= std::min(c.layer->headDim, kMinAttentionSlice);
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("cuda_attention_row_threads ({}) would give each thread {} "
                               "of layer '{}''s {} head features; a thread takes at least "
                               "{} (or the whole head), so that its share of a score "
                               "outweighs the shuffles that add the shares up",
                               s.attentionRowThreads, attentionSlice(s, *c.layer), c.layer->name,
                               c.layer->headDim, kMinAttentionSlice);
          }),
      cudaRule(
          {K::CudaAttentionQueryBlock, K::CudaAttentionRowThreads}, false,
          [](const CudaSchedule &s, const KnobContext &) {
            return wholeWarps(attentionThreads(s));
          },
          [](const CudaSchedule &s, const KnobContext &) {
            return fmt::format("an attention block of {} query rows x {} threads per row "
                               "has {} threads; a block must be whole warps of 32, at most "
                               "1024 threads",
                               s.attentionQueryBlock, s.attentionRowThreads, attentionThreads(s));
          }),
      cudaRule(
          {K::CudaAttentionQueryBlock, K::CudaAttentionKeyBlock, K::CudaAttentionRowThreads}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return (attentionTileRegisters(s, *c.layer) + kCudaThreadOverhead) *
                       attentionThreads(s) <=
                   kCudaBlockRegisters;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("an attention block of layer '{}' has {} threads of about {} "
                               "registers, more than the {} a block may have (lower "
                               "cuda_attention_query_block or cuda_attention_key_block)",
                               c.layer->name, attentionThreads(s),
                               attentionTileRegisters(s, *c.layer) + kCudaThreadOverhead,
                               kCudaBlockRegisters);
          }),
      cudaRule(
          {K::CudaAttentionKeyBlock, K::CudaAttentionRowThreads}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return attentionTileRegisters(s, *c.layer) <= kCudaTileRegisters;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("an attention thread of layer '{}' would hold {} scores and "
                               "2 x {} head features, about {} registers, more than the {} "
                               "it may keep without spilling (lower "
                               "cuda_attention_key_block or raise "
                               "cuda_attention_row_threads)",
                               c.layer->name, s.attentionKeyBlock, attentionSlice(s, *c.layer),
                               attentionTileRegisters(s, *c.layer), kCudaTileRegisters);
          }),
      cudaRule(
          {K::CudaAttentionKeyBlock}, true,
          [](const CudaSchedule &s, const KnobContext &c) {
            return withStaticShared(attentionSharedBytes(s, c.layer->headDim)) <=
                   c.target.cuda->sharedBytes;
          },
          [](const CudaSchedule &s, const KnobContext &c) {
            return fmt::format("an attention block of layer '{}' would stage {} bytes of "
                               "keys and values in shared memory; {} allows {} per block "
                               "(lower cuda_attention_key_block)",
                               c.layer->name,
                               withStaticShared(attentionSharedBytes(s, c.layer->headDim)),
                               c.target.cuda->chip, c.target.cuda->sharedBytes);
          }),
  };
}

} // namespace

bool amxPanelsFit(const LayerSpec &layer, const Schedule &s) {
  int64_t panel = s.projection.registerCols;
  auto fits = [&](int64_t width) { return panel > 0 && width % panel == 0; };
  return fits(layer.heads * layer.headDim) && fits(layer.kvHeads * layer.headDim) &&
         fits(layer.modelDim);
}

bool amxTilesFit(const LayerSpec &layer, const Schedule &s) {
  // A tile row holds 16 f32 results, or 16 input pairs: 32 inputs a step.
  int64_t tileColumns = kAmxTileRowBytes / 4, step = kAmxTileRowBytes / 2;
  int64_t rows = s.projection.registerRows, cols = s.projection.registerCols;
  if (rows % kAmxTileRows != 0 || cols % tileColumns != 0)
    return false;
  int64_t rowTiles = rows / kAmxTileRows, colTiles = cols / tileColumns;
  return rowTiles * colTiles + rowTiles + colTiles <= kAmxTileRegisters &&
         layer.modelDim % step == 0 && layer.kvDim % step == 0 &&
         (layer.heads * layer.headDim) % step == 0 && s.projection.panelReductionBlock % step == 0;
}

namespace {

std::vector<Constraint> cpuConstraints() {
  return {
      {{KnobId::Bf16Compute},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return c.layer->dtype == DType::BF16 || s.bf16Compute == Bf16Compute::F32;
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("bf16_compute ({}) applies to bf16 layers; layer '{}' is f32",
                            knob(KnobId::Bf16Compute).choices[static_cast<size_t>(s.bf16Compute)],
                            c.layer->name);
       }},
      {{KnobId::Bf16Compute},
       false,
       [](const Schedule &s, const KnobContext &c) {
         return s.bf16Compute != Bf16Compute::Dot || c.target.avx512bf16;
       },
       [](const Schedule &, const KnobContext &c) {
         return fmt::format("bf16_compute = dot runs on AVX512-BF16 (vdpbf16ps); target {} "
                            "has none",
                            c.target.name);
       }},
      {{KnobId::Bf16Compute},
       false,
       [](const Schedule &s, const KnobContext &c) {
         return s.bf16Compute != Bf16Compute::Amx || (c.target.amxBf16 && c.target.avx512bf16);
       },
       [](const Schedule &, const KnobContext &c) {
         return fmt::format("bf16_compute = amx runs on AMX-BF16 tiles (and AVX512-BF16 at the "
                            "edges); target {} has no AMX",
                            c.target.name);
       }},
      {{KnobId::Bf16Compute, KnobId::ProjectionRegisterRows, KnobId::ProjectionRegisterCols,
        KnobId::ProjectionPanelReductionBlock},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return s.bf16Compute != Bf16Compute::Amx || amxTilesFit(*c.layer, s);
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format(
             "bf16_compute = amx computes register tiles of whole 16 x 16 AMX tiles, 32 "
             "inputs a step, in AMX's 8 tile registers: projection_register_rows ({}) and "
             "projection_register_cols ({}) must be multiples of 16 whose tiles (rows / 16 x "
             "cols / 16 results, rows / 16 + cols / 16 operands) number at most 8, and layer "
             "'{}''s input widths and projection_panel_reduction_block ({}) multiples of 32",
             s.projection.registerRows, s.projection.registerCols, c.layer->name,
             s.projection.panelReductionBlock);
       }},
      {{KnobId::Bf16Compute, KnobId::ProjectionRegisterCols},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return s.bf16Compute != Bf16Compute::Amx || amxPanelsFit(*c.layer, s);
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("bf16_compute = amx packs the weights in panels of "
                            "projection_register_cols ({}), whole AMX tiles: layer '{}' needs "
                            "output widths that are whole panels",
                            s.projection.registerCols, c.layer->name);
       }},
      {{KnobId::AttentionCompute},
       false,
       [](const Schedule &s, const KnobContext &c) {
         return s.attention.compute == AttentionCompute::F32 ||
                (c.target.avx512bf16 &&
                 (s.attention.compute != AttentionCompute::Amx || c.target.amxBf16));
       },
       [](const Schedule &s, const KnobContext &c) {
         if (s.attention.compute == AttentionCompute::Amx)
           return fmt::format("attention_compute = amx runs on AMX-BF16 tiles (and rounds "
                              "with AVX512-BF16); target {} has no AMX",
                              c.target.name);
         return fmt::format("attention_compute = dot runs on AVX512-BF16 (vdpbf16ps); target "
                            "{} has none",
                            c.target.name);
       }},
      {{KnobId::AttentionCompute, KnobId::Bf16Compute},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return s.attention.compute == AttentionCompute::F32 ||
                (c.layer->dtype == DType::BF16 && s.pairProducts());
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("attention_compute = {} rounds attention's operands to bf16: it "
                            "applies to bf16 layers whose products are bf16 (bf16_compute = "
                            "dot or amx); layer '{}' is {} with bf16_compute = {}",
                            attentionComputeName(s), c.layer->name,
                            c.layer->dtype == DType::BF16 ? "bf16" : "f32",
                            knob(KnobId::Bf16Compute).choices[static_cast<size_t>(s.bf16Compute)]);
       }},
      {{KnobId::AttentionCompute},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return s.attention.compute == AttentionCompute::F32 || !c.layer->kvCache;
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("attention_compute = {} lays out a call's keys and values for its "
                            "bf16 products; layer '{}' reads them from its KV cache, which "
                            "attention's f32 products do (attention_compute = f32)",
                            attentionComputeName(s), c.layer->name);
       }},
      {{KnobId::AttentionCompute, KnobId::AttentionKeyBlock, KnobId::AttentionQueryBlock,
        KnobId::AttentionGroupedQueryBlock, KnobId::AttentionLongKeys,
        KnobId::AttentionLongBlockGrowth},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return s.attention.compute == AttentionCompute::F32 ||
                (everyBlock(s, c, wholeAmxTiles) &&
                 s.attention.keyBlock % (2 * kAmxTileRows) == 0 &&
                 c.layer->headDim %
                         bf16ProductsHeadStep(s.attention.compute == AttentionCompute::Amx) ==
                     0);
       },
       [](const Schedule &s, const KnobContext &c) {
         GrownBlock grown = blockBreaking(s, c, wholeAmxTiles);
         if (s.attention.compute == AttentionCompute::Amx)
           return fmt::format("attention_compute = amx computes whole 16 x 16 tiles, 32 keys a "
                              "step: layer '{}''s query blocks ({} rows{}) and head ({}) must "
                              "be multiples of 16, attention_key_block ({}) a multiple of 32",
                              c.layer->name, grown.block.rows, callsOf(grown, s), c.layer->headDim,
                              s.attention.keyBlock);
         return fmt::format("attention_compute = dot computes 16 queries a vector, 32 keys a "
                            "step: layer '{}''s query blocks ({} rows{}) must be multiples of "
                            "16, attention_key_block ({}) a multiple of 32",
                            c.layer->name, grown.block.rows, callsOf(grown, s),
                            s.attention.keyBlock);
       }},
      multipleRule(KnobId::ProjectionCacheRows, KnobId::ProjectionRegisterRows,
                   {KnobId::ProjectionCacheRows, KnobId::ProjectionRegisterRows},
                   "only a projection's last cache tile has edge rows"),
      multipleRule(KnobId::ProjectionCacheCols, KnobId::ProjectionRegisterCols,
                   {KnobId::ProjectionCacheCols, KnobId::ProjectionRegisterCols},
                   "a cache tile holds whole weight panels"),
      unlessAmx(budgetRule("a projection register tile", KnobId::ProjectionRegisterRows,
                           KnobId::ProjectionRegisterCols, /*inLanes=*/true)),
      unlessAmx(
          {{KnobId::ProjectionRegisterCols},
           false,
           [](const Schedule &s, const KnobContext &c) {
             return llvm::isPowerOf2_64(s.projection.registerCols / lanesOf(c));
           },
           [](const Schedule &s, const KnobContext &c) {
             return fmt::format(
                 "projection_register_cols ({}) must be a power of two times the {} lanes of "
                 "{}'s vectors: LLVM moves a row of {} vectors, carried through the reduction "
                 "loop, one element at a time (10x slower)",
                 s.projection.registerCols, lanesOf(c), c.target.name,
                 s.projection.registerCols / lanesOf(c));
           }}),
      multipleRule(KnobId::AttentionKeyBlock, KnobId::AttentionScoreTileKeys,
                   {KnobId::AttentionScoreTileKeys, KnobId::AttentionKeyBlock},
                   "every whole key block is whole score tiles"),
      budgetRule("the score tile", KnobId::AttentionScoreTileKeys,
                 KnobId::AttentionScoreTileVectors),
      budgetRule("the p.v tile", KnobId::AttentionValueTileRows, KnobId::AttentionValueTileVectors),
      budgetRule("a Halide projection register tile", KnobId::HalideProjectionRows,
                 KnobId::HalideProjectionVectors),
      {{KnobId::HalideAutoscheduler},
       false,
       [](const Schedule &s, const KnobContext &) {
         return s.halide.autoscheduler != HalideAutoscheduler::Anderson2021;
       },
       [](const Schedule &, const KnobContext &c) {
         return fmt::format("halide_autoscheduler = Anderson2021 schedules GPU pipelines; "
                            "target {} is a CPU (Mullapudi2016, Adams2019 and Li2018 schedule "
                            "CPU pipelines)",
                            c.target.name);
       }},
      budgetRule("the Halide score tile", KnobId::HalideScoreRows, KnobId::HalideScoreVectors),
      budgetRule("the Halide p.v tile", KnobId::HalideValueRows, KnobId::HalideValueVectors),
      multipleRule(KnobId::HalideProjectionTaskRows, KnobId::HalideProjectionRows,
                   {KnobId::HalideProjectionTaskRows, KnobId::HalideProjectionRows},
                   "a projection task is whole register tiles"),
      multipleRule(KnobId::HalideQueryBlock, KnobId::HalideValueRows,
                   {KnobId::HalideQueryBlock, KnobId::HalideValueRows},
                   "an attention task is whole p.v tiles"),
      multipleRule(KnobId::HalideQueryBlock, KnobId::HalideScoreRows,
                   {KnobId::HalideQueryBlock, KnobId::HalideScoreRows},
                   "an attention task is whole score tiles"),
      {{KnobId::AttentionScoreTileVectors, KnobId::AttentionQueryBlock,
        KnobId::AttentionGroupedQueryBlock, KnobId::AttentionLongKeys,
        KnobId::AttentionLongBlockGrowth},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return everyBlock(s, c, wholeScoreChunks(s, c));
       },
       [](const Schedule &s, const KnobContext &c) {
         GrownBlock grown = blockBreaking(s, c, wholeScoreChunks(s, c));
         return fmt::format("attention_score_tile_vectors ({}) must divide the {} vectors of "
                            "layer '{}''s query block of {} rows{}, so that every chunk of "
                            "queries is whole",
                            s.attention.scoreTileVectors, grown.block.vectors(lanesOf(c)),
                            c.layer->name, grown.block.rows, callsOf(grown, s));
       }},
      {{KnobId::AttentionValueTileRows, KnobId::AttentionQueryBlock,
        KnobId::AttentionGroupedQueryBlock, KnobId::AttentionLongKeys,
        KnobId::AttentionLongBlockGrowth},
       true,
       [](const Schedule &s, const KnobContext &c) { return everyBlock(s, c, wholeValueTiles(s)); },
       [](const Schedule &s, const KnobContext &c) {
         GrownBlock grown = blockBreaking(s, c, wholeValueTiles(s));
         return fmt::format("attention_value_tile_rows ({}) must divide the {} rows of layer "
                            "'{}''s query block{}, so that every p.v tile is whole",
                            s.attention.valueTileRows, grown.block.rows, c.layer->name,
                            callsOf(grown, s));
       }},
      {{KnobId::AttentionValueTileVectors},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return s.attention.valueTileVectors <= vectorsFor(c.layer->headDim, lanesOf(c));
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("attention_value_tile_vectors ({}) is wider than layer '{}''s head "
                            "of {} elements (vectors: {})",
                            s.attention.valueTileVectors, c.layer->name, c.layer->headDim,
                            vectorsFor(c.layer->headDim, lanesOf(c)));
       }},
      {{KnobId::AttentionQueryBlock, KnobId::AttentionGroupedQueryBlock, KnobId::AttentionKeyBlock,
        KnobId::AttentionCompute},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return scratchBytes(s, c, /*grown=*/false) <= scratchLimit(s, c);
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("an attention task of layer '{}' would need {} KiB of scratch on "
                            "its thread's stack, more than {} KiB (lower {} or "
                            "attention_key_block)",
                            c.layer->name, scratchBytes(s, c, /*grown=*/false) / 1024,
                            scratchLimit(s, c) / 1024, blockKnob(c));
       }},
      {{KnobId::AttentionDecodePositions, KnobId::AttentionDecodeKeyBlock},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return decodeScratchBytes(s, c) <= scratchLimit(s, c);
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("a decode task of layer '{}' ({} query heads a key/value head, "
                            "attention_decode_positions = {}) would need {} KiB of scratch on "
                            "its thread's stack, more than {} KiB (lower "
                            "attention_decode_positions or attention_decode_key_block)",
                            c.layer->name, c.layer->heads / c.layer->kvHeads,
                            s.attention.decodePositions, decodeScratchBytes(s, c) / 1024,
                            scratchLimit(s, c) / 1024);
       }},
      // The grown blocks' own rule, which holds where there are none: a growth of 1 keeps it
      // whatever the plain blocks break.
      {{KnobId::AttentionLongBlockGrowth, KnobId::AttentionLongKeys, KnobId::AttentionQueryBlock,
        KnobId::AttentionGroupedQueryBlock, KnobId::AttentionKeyBlock, KnobId::AttentionCompute},
       true,
       [](const Schedule &s, const KnobContext &c) {
         return scratchBytes(s, c, /*grown=*/true) <= scratchLimit(s, c);
       },
       [](const Schedule &s, const KnobContext &c) {
         return fmt::format("an attention task of layer '{}'{} would need {} KiB of scratch on "
                            "its thread's stack, more than {} KiB (lower "
                            "attention_long_block_growth, {} or attention_key_block)",
                            c.layer->name, callsOf(blocksOf(s, c).back(), s),
                            scratchBytes(s, c, /*grown=*/true) / 1024, scratchLimit(s, c) / 1024,
                            blockKnob(c));
       }},
  };
}

std::vector<Constraint> makeConstraints() {
  std::vector<Constraint> rules = cpuConstraints();
  for (Constraint &rule : cudaConstraints())
    rules.push_back(std::move(rule));
  return rules;
}
} // namespace

bool cudaProjectionOnTensorCores(const LayerSpec &layer, int64_t inFeatures) {
  return layer.dtype == DType::BF16 && inFeatures % 8 == 0;
}

/// Up to heads of 128: wider ones' output fragments alone would fill a thread's registers.
bool cudaAttentionOnTensorCores(const LayerSpec &layer) {
  return layer.dtype == DType::BF16 && layer.headDim % 16 == 0 && layer.headDim <= 128 &&
         (layer.heads * layer.headDim) % 8 == 0 && (layer.kvHeads * layer.headDim) % 8 == 0;
}

std::string_view autoschedulerName(HalideAutoscheduler autoscheduler) {
  return knob(KnobId::HalideAutoscheduler).choices[static_cast<size_t>(autoscheduler)];
}

std::string_view backendName(Backend backend) {
  switch (backend) {
  case Backend::Halide:
    return "halide";
  case Backend::Cuda:
    return "cuda";
  case Backend::Mlir:
    break;
  }
  return "mlir";
}

const std::vector<Knob> &knobs() {
  static const std::vector<Knob> table = makeKnobs();
  return table;
}

std::vector<const Knob *> backendKnobs(Backend backend) {
  std::vector<const Knob *> result;
  for (const Knob &k : knobs())
    if (k.backend == backend)
      result.push_back(&k);
  return result;
}

const Knob &knob(KnobId id) { return knobs()[static_cast<size_t>(id)]; }

const Knob *findKnob(std::string_view name) {
  for (const Knob &k : knobs())
    if (k.name == name)
      return &k;
  return nullptr;
}

std::optional<std::string_view> closestKnobName(std::string_view name) {
  std::vector<std::string_view> names;
  for (const Knob &k : knobs())
    names.push_back(k.name);
  return closestName(name, names);
}

bool Constraint::involves(KnobId id) const {
  return std::find(knobs.begin(), knobs.end(), id) != knobs.end();
}

const std::vector<Constraint> &constraints() {
  static const std::vector<Constraint> table = makeConstraints();
  return table;
}

bool Schedule::operator==(const Schedule &other) const {
  for (const Knob &k : knobs())
    if (k.get(*this) != k.get(other))
      return false;
  return projectionTransform == other.projectionTransform;
}

static int64_t stepOf(const Knob &knob, const CpuTarget &target) {
  return knob.step == kLanes ? target.lanes() : knob.step;
}

static int64_t minOf(const Knob &knob, const CpuTarget &target) {
  return knob.step == kLanes ? target.lanes() : knob.min;
}

bool inDomain(const Knob &knob, int64_t value, const CpuTarget &target) {
  int64_t min = minOf(knob, target), step = stepOf(knob, target);
  return value >= min && value <= knob.max && (value - min) % step == 0;
}

std::vector<int64_t> domainValues(const Knob &knob, const CpuTarget &target) {
  std::vector<int64_t> values;
  for (int64_t v = minOf(knob, target); v <= knob.max; v += stepOf(knob, target))
    values.push_back(v);
  return values;
}

std::string explainDomain(const Knob &knob, int64_t value, const CpuTarget &target) {
  int64_t min = minOf(knob, target), step = stepOf(knob, target);
  if (value >= min && value <= knob.max)
    return fmt::format("{} = {} is not a multiple of {}, the f32 lanes of a vector on {}",
                       knob.name, value, step, target.name);
  return fmt::format("{} = {} is out of range (legal: {} to {}{})", knob.name, value, min, knob.max,
                     step > 1 ? fmt::format(" in steps of {}", step) : "");
}

const Constraint *firstViolation(const Schedule &schedule, const KnobContext &context,
                                 std::optional<KnobId> only) {
  for (const Constraint &constraint : constraints()) {
    if (constraint.needsLayer && !context.layer)
      continue;
    if (only && !constraint.involves(*only))
      continue;
    if (!constraint.holds(schedule, context))
      return &constraint;
  }
  return nullptr;
}

std::vector<const Constraint *> violations(const Schedule &schedule, const KnobContext &context) {
  std::vector<const Constraint *> broken;
  for (const Constraint &constraint : constraints())
    if ((!constraint.needsLayer || context.layer) && !constraint.holds(schedule, context))
      broken.push_back(&constraint);
  return broken;
}

std::vector<int64_t> legalValues(KnobId id, const Schedule &schedule, const KnobContext &context) {
  const Knob &k = knob(id);
  std::vector<int64_t> values;
  Schedule candidate = schedule;
  for (int64_t value : domainValues(k, context.target)) {
    k.set(candidate, value);
    if (!firstViolation(candidate, context, id))
      values.push_back(value);
  }
  return values;
}

std::string formatKnobValue(const Knob &knob, int64_t value) {
  switch (knob.type) {
  case KnobType::Boolean:
    return value ? "true" : "false";
  case KnobType::Choice:
    return std::string(knob.choices.at(static_cast<size_t>(value)));
  case KnobType::Integer:
    break;
  }
  return std::to_string(value);
}

std::string describeValues(const Knob &knob, const std::vector<int64_t> &values) {
  constexpr size_t kListed = 12, kEnds = 4;
  std::vector<std::string> shown;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values.size() > kListed && i == kEnds) {
      shown.push_back("...");
      i = values.size() - kEnds - 1;
      continue;
    }
    shown.push_back(formatKnobValue(knob, values[i]));
  }
  return fmt::format("{}", fmt::join(shown, ", "));
}

} // namespace mhac
