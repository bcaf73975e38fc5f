//===- ScheduleResolution.cpp - one layer's schedule from file and defaults ===//
//
// Part of mhac. A knob the user writes is used as written or rejected, never changed. A knob
// taken from the target's defaults is fitted to the layer: the largest legal value up to the
// default, so that the defaults hold for any layer (a 48-row block is three vectors of 16, a
// 64-row block four, and the tiles follow).
//
//===----------------------------------------------------------------------===//

#include "compiler/schedules/ScheduleFile.h"

#include "compiler/schedules/AttentionBlock.h"
#include "compiler/schedules/ProjectionPanels.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace mhac {
namespace {

/// The order defaults are fitted in: a knob is fitted against the rules whose other knobs are
/// already settled, so what a bf16 layer computes on comes first (AMX's register tiles are
/// whole tiles of 16; bf16 products take more of a task's scratch), the block's shape before
/// the tiles inside it, and a tile's vectors before its rows (the rows take the registers the
/// vectors leave).
constexpr KnobId kFitOrder[] = {
    KnobId::Bf16Compute,
    KnobId::AttentionCompute,
    KnobId::AttentionKeyBlock,
    KnobId::AttentionGroupedQueryBlock,
    KnobId::AttentionQueryBlock,
    KnobId::AttentionLongKeys,
    KnobId::AttentionLongBlockGrowth,
    KnobId::AttentionScoreTileVectors,
    KnobId::AttentionScoreTileKeys,
    KnobId::AttentionValueTileVectors,
    KnobId::AttentionValueTileRows,
    KnobId::AttentionQueryTranspose,
    KnobId::AttentionDecodeKeyBlock,
    KnobId::AttentionDecodePositions,
    KnobId::ProjectionRegisterCols,
    KnobId::ProjectionRegisterRows,
    KnobId::ProjectionCacheRows,
    KnobId::ProjectionCacheCols,
    KnobId::ProjectionPanelReductionBlock,
    // The Halide backend's: tiles (vectors before rows), then the blocks made of them.
    KnobId::HalideProjectionVectors,
    KnobId::HalideProjectionRows,
    KnobId::HalideProjectionTaskRows,
    KnobId::HalideScoreVectors,
    KnobId::HalideScoreRows,
    KnobId::HalideValueVectors,
    KnobId::HalideValueRows,
    KnobId::HalideQueryBlock,
    // The CUDA target's: threads' tiles before the blocks made of them.
    KnobId::CudaAttentionRowThreads,
    KnobId::CudaAttentionKeyBlock,
    KnobId::CudaAttentionQueryBlock,
    KnobId::CudaProjectionThreadCols,
    KnobId::CudaProjectionThreadRows,
    KnobId::CudaProjectionBlockCols,
    KnobId::CudaProjectionBlockRows,
    KnobId::CudaProjectionKBlock,
    KnobId::CudaMmaWarpCols,
    KnobId::CudaMmaWarpRows,
    KnobId::CudaMmaBlockCols,
    KnobId::CudaMmaBlockRows,
    KnobId::CudaMmaStages,
    KnobId::CudaMmaAttentionKeyBlock,
    KnobId::CudaMmaAttentionGroupHeads,
    KnobId::CudaMmaAttentionWarps,
};

/// Tasks the narrowest projection gets when its rows are one cache tile: enough to keep up to
/// 8 threads about evenly busy.
constexpr int64_t kMinTasks = 8;

/// The rows a layer's projections cover (B x S, and B x Skv) where its sizes are all known; 0
/// otherwise.
int64_t staticRows(const LayerSpec &layer) {
  if (layer.batch == kDynamicSize || layer.seq == kDynamicSize || layer.kvSeq == kDynamicSize)
    return 0;
  return layer.batch * std::max(layer.seq, layer.kvSeq);
}

/// The rows of a layer of known sizes whose rows fit in one of the default's cache tiles, as in
/// a decoding step or a short sequence; 0 otherwise. Its tasks are then the column tiles alone,
/// and the default's 128 columns left threads idle (Whisper-tiny's 384 columns made 3 tasks for
/// 2 threads, Qwen2-0.5B's 128 key columns one).
int64_t oneTileRows(const LayerSpec &layer, const CpuTarget &target) {
  int64_t rows = staticRows(layer);
  return rows <= targetDefaults(target).projection.cacheRows ? rows : 0;
}

/// Output features of the narrowest projection.
int64_t narrowestProjection(const LayerSpec &layer) {
  return std::min({layer.heads * layer.headDim, layer.kvHeads * layer.headDim, layer.modelDim});
}

/// The cache columns of a one-tile layer: narrowed until the narrowest projection has
/// kMinTasks of them, down to one register panel (its weights stream once whatever the
/// tiles). 0: no preference.
int64_t balancedCacheCols(const LayerSpec &layer, const CpuTarget &target,
                          const Schedule &schedule) {
  const ProjectionSchedule &p = schedule.projection;
  if (oneTileRows(layer, target) == 0 || p.registerCols <= 0)
    return 0;
  return std::max(p.registerCols,
                  narrowestProjection(layer) / kMinTasks / p.registerCols * p.registerCols);
}

/// Register tiles a balanced cache tile holds at least: SmolLM-135M's 100 rows in tiles of 2
/// (12 rows) ran 4% slower on one core than in tiles of 4.
constexpr int64_t kMinTileRegisterTiles = 4;

/// Bytes of the largest projection's weights as prepared (the query's and the output's, or a
/// cross layer's keys' and values'): bf16 for pair products, else f32.
int64_t largestWeightBytes(const LayerSpec &layer, const Schedule &schedule) {
  return (schedule.pairProducts() ? 2 : 4) * std::max(layer.modelDim * layer.heads * layer.headDim,
                                                      layer.kvDim * layer.kvHeads * layer.headDim);
}

/// The cache rows of a one-tile layer whose narrowest projection has fewer than kMinTasks
/// register panels (DeiT-tiny's 192 features: 3), so that every thread gets about as many
/// tasks. Each row tile reads every panel of the weights once: where the largest projection's
/// weights (as prepared: bf16 pairs are half f32's bytes; SmolLM-135M's 576 x 576 in bf16 ran
/// 1.02-1.05x as fast in 4 tiles as in the 3 of f32's weights, which past L2 stream from L3)
/// stay in L2, the rows split into as many whole register tiles as make a multiple of
/// kMinTasks tasks with the panels (fewer where a tile would hold fewer than
/// kMinTileRegisterTiles), rounded down, so that the full tiles' tasks share out evenly and
/// the rows left over (the last cache tile, split off into a projection of its own, whose
/// panels alone are its tasks) are few: DeiT-tiny 8 x 3 tasks of 24 rows and 3 of 5, where 66
/// rows made 6 tasks and then 3 of 65 for 2 threads. Where the weights stream from L3 or
/// memory, the fewest tiles that make kMinTasks tasks (a layer 4096 wide with 3 key/value
/// heads of 64 at S = 200 ran 0.8x as fast in 9 passes over its weights as in 3). 0: no
/// preference.
int64_t balancedCacheRows(const LayerSpec &layer, const CpuTarget &target,
                          const Schedule &schedule) {
  const ProjectionSchedule &p = schedule.projection;
  int64_t rows = oneTileRows(layer, target);
  if (rows == 0 || p.registerCols <= 0 || p.registerRows <= 0)
    return 0;
  int64_t narrowest = paddedProjectionWidth(narrowestProjection(layer), p.registerCols,
                                            target.lanes(), schedule.pairProducts());
  int64_t panels = std::max<int64_t>(
      1, narrowest / projectionPanelWidth(narrowest, p.registerCols, target.lanes()));
  if (panels >= kMinTasks)
    return 0;
  auto wholeTiles = [&](int64_t tileRows) {
    return std::max(p.registerRows, tileRows / p.registerRows * p.registerRows);
  };
  if (largestWeightBytes(layer, schedule) > target.l2Bytes) {
    int64_t tiles = (kMinTasks + panels - 1) / panels;
    return wholeTiles((rows + tiles - 1) / tiles + p.registerRows - 1);
  }
  int64_t tiles = std::clamp<int64_t>(rows / (kMinTileRegisterTiles * p.registerRows), 1,
                                      kMinTasks / std::gcd(kMinTasks, panels));
  return wholeTiles(rows / tiles);
}

/// The cache rows of a layer of known rows past one cache tile of `value` rows, in whole
/// register tiles: as many tiles as `value` makes, of about equal rows, so that a short last
/// tile's tasks in the same parallel loop leave no thread idle while others finish full ones
/// (B = 3, S = 150: 258 + 192 rows against 228 + 222, bench/RESULTS.md). Rows that are no
/// whole register tiles keep `value`: their last cache tile is a projection of its own
/// (projection_split_last_cache_tile), the full tiles already share their loop evenly, and a
/// short last tile is the cheaper loop (B = 3, S = 211 with 3 key/value panels: 1.015x slower
/// in even tiles). 0: no preference.
int64_t evenCacheRows(const LayerSpec &layer, const Schedule &schedule, int64_t value) {
  int64_t rows = staticRows(layer), step = schedule.projection.registerRows;
  if (rows <= value || step <= 0 || value < step || rows % step != 0)
    return 0;
  int64_t tiles = (rows + value - 1) / value;
  int64_t tileRows = (rows + tiles - 1) / tiles;
  return (tileRows + step - 1) / step * step;
}

/// Input features per block of a weight panel (projection_panel_reduction_block = 0 in a
/// default file): the whole reduction (0) while a panel and a cache tile's input rows fit in
/// half of L2, else blocks whose panel and input rows do (a multiple of 64 features), so that
/// both stay in L2 while every register tile of the cache tile passes over them.
int64_t panelReductionBlock(const LayerSpec &layer, const CpuTarget &target,
                            const Schedule &schedule) {
  const ProjectionSchedule &p = schedule.projection;
  int64_t featureBytes = 4 * (p.registerCols + p.cacheRows);
  int64_t widest = std::max({layer.modelDim, layer.kvDim, layer.heads * layer.headDim});
  int64_t budget = target.l2Bytes / 2;
  if (featureBytes <= 0 || widest * featureBytes <= budget)
    return 0;
  return std::max<int64_t>(64, budget / featureBytes / 64 * 64);
}

/// The rows of a CPU layer's query blocks: the default's while a head's keys and values fit in
/// half of L2, where a task finds them again after the task before it on the same head read
/// them. Beyond that every block reads them from L3, and the block grows by the times they
/// exceed half of L2 (at most the default attention_long_block_growth), so that each key and
/// value row read serves that many more queries.
int64_t keyStreamingQueryBlock(int64_t value, const LayerSpec &layer, const CpuTarget &target,
                               const Schedule &schedule) {
  if (target.cuda || layer.kvSeq == kDynamicSize)
    return value;
  int64_t elementBytes = schedule.attention.compute == AttentionCompute::F32 ? 4 : 2;
  int64_t headBytes = 2 * layer.kvSeq * layer.headDim * elementBytes;
  int64_t growth = std::clamp<int64_t>(headBytes / (target.l2Bytes / 2), 1,
                                       targetDefaults(target).attention.longBlockGrowth);
  return value * growth;
}

/// The rows of the query blocks of a layer whose attention multiplies bf16 (attention_compute
/// = dot or amx), where the default is less than four vectors: the blocks of 3 to 5 whole
/// vectors that pad the layer's sequence to the fewest rows, four on a tie (the register tiles
/// take up to four vectors of queries, and AMX's bands two tiles of 16), then three; a
/// sequence of one or two vectors, one block of them. A block's padding rows cost their
/// products and their softmax too: 128 queries run as 2 blocks of 64, not 3 of 48 (144 rows);
/// 150 as 2 of 80, not 3 of 64 (192 rows, 1.02x slower); 197 stay in blocks of 48 (240 rows,
/// as many as 80 make); a decoding step's one query takes one vector, not three.
int64_t bf16ProductsQueryBlock(int64_t value, const LayerSpec &layer, const CpuTarget &target,
                               const Schedule &schedule) {
  int64_t lanes = target.lanes();
  if (schedule.attention.compute == AttentionCompute::F32 || layer.seq == kDynamicSize ||
      value >= 4 * lanes || value % lanes != 0)
    return value;
  auto paddedRows = [&](int64_t block) { return (layer.seq + block - 1) / block * block; };
  if (layer.seq <= 2 * lanes)
    return paddedRows(lanes);
  int64_t best = 4 * lanes;
  for (int64_t vectors : {3, 5})
    if (paddedRows(vectors * lanes) < paddedRows(best))
      best = vectors * lanes;
  return best;
}

/// The keys of a block of a layer whose attention multiplies bf16: the default's, or all of
/// a static key sequence of at most kWholeKeysBlock keys (rounded up to whole steps of 32
/// keys) where the default would split it. A second, short block costs a whole block's
/// softmax pass and rescaling of the accumulators for a few keys (128 keys in blocks of 96
/// and 32), and on AMX, whose tiles compute whole blocks, the padding of 64 keys; one block's
/// scores (128 keys x 64 queries x 4 bytes) still fit L1.
int64_t bf16ProductsKeyBlock(int64_t value, const LayerSpec &layer, const Schedule &schedule) {
  constexpr int64_t kWholeKeysBlock = 128, kStep = 2 * kAmxTileRows;
  if (schedule.attention.compute == AttentionCompute::F32 || layer.kvSeq == kDynamicSize ||
      layer.kvSeq <= value)
    return value;
  int64_t whole = (layer.kvSeq + kStep - 1) / kStep * kStep;
  return whole <= kWholeKeysBlock ? whole : value;
}

/// The keys from which the calls of a CPU layer whose keys are known at run time only grow
/// their query blocks (attention_long_keys = 0 in a default file): where a head's keys and
/// values fill L2, the point from which keyStreamingQueryBlock would grow a static layer's
/// blocks at least twofold. 0 (never) for layers whose keys are known, whose query blocks that
/// rule has already sized.
int64_t keyStreamingLongKeys(const LayerSpec &layer, const CpuTarget &target,
                             const Schedule &schedule) {
  if (target.cuda || layer.kvSeq != kDynamicSize)
    return 0;
  int64_t elementBytes = schedule.attention.compute == AttentionCompute::F32 ? 4 : 2;
  int64_t keyBytes = 2 * layer.headDim * elementBytes;
  return std::min(knob(KnobId::AttentionLongKeys).max,
                  (target.l2Bytes + keyBytes - 1) / keyBytes);
}

/// The side of the tensor-core projection's blocks for a layer whose rows (B x S, B x Skv) are
/// known: the default's (128) when the widest projection's grid of default blocks has a block
/// for every multiprocessor, else half of it, 64. A short call's grid of 128 x 128 blocks
/// leaves most of the chip idle (a 128-row BERT projection: 6 blocks on an H200's 132 SMs);
/// its 64 x 64 blocks of the same warps run 1.3-1.5x faster there, while on long calls the
/// larger blocks' reuse wins (bench/RESULTS.md, "Schedule variants").
int64_t gridFilledMmaBlock(int64_t value, const LayerSpec &layer, const CpuTarget &target) {
  int64_t rows = staticRows(layer);
  if (!target.cuda || rows == 0)
    return value;
  const CudaSchedule defaults = targetDefaults(target).cuda;
  int64_t cols = std::max(layer.modelDim, layer.heads * layer.headDim);
  auto blocks = [](int64_t n, int64_t block) { return (n + block - 1) / block; };
  if (blocks(rows, defaults.mmaBlockRows) * blocks(cols, defaults.mmaBlockCols) >=
      target.cuda->multiprocessors)
    return value;
  return std::min(value, std::max<int64_t>(64, value / 2));
}

/// Side of the projections' register tiles on AMX: 2 x 2 result tiles of 16 x 16, with the 2
/// input tiles and 2 weight tiles they multiply, fill AMX's 8 tile registers.
constexpr int64_t kAmxRegisterTile = 2 * kAmxTileRows;

/// Whether a bf16 layer's projections go onto AMX tiles by default: on a target with AMX,
/// where the schedule asks for pair products (dot, or amx written by hand) and the layer's
/// widths are whole tiles of the default register tile.
bool amxPreferred(const LayerSpec &layer, const CpuTarget &target, const Schedule &schedule) {
  if (!target.amxBf16 || !target.avx512bf16 || layer.dtype != DType::BF16 ||
      !schedule.pairProducts())
    return false;
  Schedule amx = schedule;
  amx.bf16Compute = Bf16Compute::Amx;
  amx.projection.registerRows = amx.projection.registerCols = kAmxRegisterTile;
  amx.projection.panelReductionBlock = 0;
  return amxTilesFit(layer, amx) && amxPanelsFit(layer, amx);
}

/// Keys in a tile of bf16 products: layers of no more keys keep f32 products by default.
constexpr int64_t kKeyTile = kAmxTileRows;

/// The first value to try for a defaulted knob. The p.v tile's vectors split the head into
/// chunks of about equal width (a head of 5 vectors in chunks of 3 and 2, not 4 and 1); cache
/// tiles start from at least one register tile, those of a few rows balance their tasks
/// (balancedCacheCols, balancedCacheRows) and those of many split them evenly (evenCacheRows);
/// query blocks of bf16 products take the whole vectors that pad the fewest rows
/// (bf16ProductsQueryBlock), their key blocks take a short key sequence whole
/// (bf16ProductsKeyBlock), and grow where keys stream from L3 (keyStreamingQueryBlock; at run time,
/// from keyStreamingLongKeys keys on); bf16 layers on AMX targets take AMX's register tiles and
/// kernels (amxPreferred), their attention bf16 products only where the layer's scale is at most 1
/// and its calls have more than a tile of keys; bf16 layers elsewhere take pair products where
/// they outrun the FMAs; a short call's tensor-core blocks fill the GPU
/// (gridFilledMmaBlock).
int64_t preferredValue(KnobId id, int64_t value, const LayerSpec &layer, const CpuTarget &target,
                       const Schedule &schedule) {
  if (id == KnobId::ProjectionCacheCols || id == KnobId::ProjectionCacheRows) {
    // A cache tile holds at least one register tile, whatever its size in the user's file.
    const ProjectionSchedule &p = schedule.projection;
    value = std::max(value, id == KnobId::ProjectionCacheCols ? p.registerCols : p.registerRows);
    int64_t balanced = id == KnobId::ProjectionCacheCols
                           ? balancedCacheCols(layer, target, schedule)
                           : balancedCacheRows(layer, target, schedule);
    if (id == KnobId::ProjectionCacheRows && balanced == 0)
      balanced = evenCacheRows(layer, schedule, value);
    return balanced > 0 ? std::min(value, balanced) : value;
  }
  if ((id == KnobId::ProjectionRegisterRows || id == KnobId::ProjectionRegisterCols) &&
      amxPreferred(layer, target, schedule))
    return kAmxRegisterTile;
  if (id == KnobId::AttentionKeyBlock)
    return bf16ProductsKeyBlock(value, layer, schedule);
  if (id == KnobId::AttentionQueryBlock)
    return keyStreamingQueryBlock(bf16ProductsQueryBlock(value, layer, target, schedule), layer,
                                  target, schedule);
  if (id == KnobId::AttentionGroupedQueryBlock)
    return keyStreamingQueryBlock(value, layer, target, schedule);
  if (id == KnobId::AttentionLongKeys && value == 0)
    return keyStreamingLongKeys(layer, target, schedule);
  if (id == KnobId::CudaMmaBlockRows || id == KnobId::CudaMmaBlockCols)
    return gridFilledMmaBlock(value, layer, target);
  if (id == KnobId::ProjectionPanelReductionBlock && value == 0)
    return panelReductionBlock(layer, target, schedule);
  // bf16 products round the queries and keys to bf16 (2^-9 relative error each), so a score
  // errs by about scale * |q| |k| * 2^-8 in the softmax's exponent: past a scale of 1 (the
  // largest in use, T5's; 1/sqrt(head_dim) elsewhere) it is magnified beyond what a bf16
  // layer's probabilities tolerate, and attention keeps its f32 products unless asked.
  if (id == KnobId::AttentionCompute && layer.scale > 1)
    return static_cast<int64_t>(AttentionCompute::F32);
  // A layer with a KV cache reads its keys and values from the cache, which only the f32
  // products do (the bf16 ones lay a call's out first).
  if (id == KnobId::AttentionCompute && layer.kvCache)
    return static_cast<int64_t>(AttentionCompute::F32);
  // bf16 products cost a head a fixed layout (its values transposed, its queries and
  // accumulators transposed in and out of pairs) that few products do not repay: where every
  // call's keys fit one tile of 16, or its query rows per key/value head do (a decoding step's
  // one query against a long memory: each value laid out for one row), attention multiplies
  // in f32.
  bool fewKeys = layer.kvSeq != kDynamicSize && layer.kvSeq <= kKeyTile;
  bool fewRows = layer.seq != kDynamicSize && layer.seq * (layer.heads / layer.kvHeads) <= kKeyTile;
  if (id == KnobId::AttentionCompute && (fewKeys || fewRows))
    return static_cast<int64_t>(AttentionCompute::F32);
  // Where vdpbf16ps does not outrun the FMAs (Intel's cores), attention's bf16 products are
  // AMX's or none: a head AMX's tiles do not take (40 features) keeps f32 products there.
  if (id == KnobId::AttentionCompute && value == static_cast<int64_t>(AttentionCompute::Amx) &&
      !target.bf16DotOutrunsFma && layer.headDim % kAmxTileRows != 0)
    return static_cast<int64_t>(AttentionCompute::F32);
  // AMX's tiles where the CPU has them and the layer's widths fit; else the pair dot products
  // where they are the faster arithmetic (on a Zen 4, grouped-query layers of 160-feature
  // keys: 2x the f32 kernels' speed; any widths, padded where need be); elsewhere the f32
  // kernels (fitting down the choices would reach bf16 storage, the slow path).
  if (id == KnobId::Bf16Compute && value == static_cast<int64_t>(Bf16Compute::Dot) &&
      amxPreferred(layer, target, schedule))
    return static_cast<int64_t>(Bf16Compute::Amx);
  if (id == KnobId::Bf16Compute)
    return value == static_cast<int64_t>(Bf16Compute::Dot) &&
                   !(layer.dtype == DType::BF16 && target.bf16DotOutrunsFma)
               ? static_cast<int64_t>(Bf16Compute::F32)
               : value;
  if (id != KnobId::AttentionValueTileVectors)
    return value;
  int64_t head = vectorsFor(layer.headDim, target.lanes());
  int64_t chunks = (head + value - 1) / value;
  return (head + chunks - 1) / chunks;
}

class Fitter {
public:
  /// `alwaysChecked`, if given, is a rule checked even before its other knobs are settled
  /// (those knobs then at their defaults).
  Fitter(Schedule &schedule, const KnobContext &context, std::set<KnobId> settled,
         const Constraint *alwaysChecked = nullptr)
      : schedule_(schedule), context_(context), settled_(std::move(settled)),
        alwaysChecked_(alwaysChecked) {}

  /// Gives `id` the largest value up to its current one (for a choice: its current one, else
  /// the first) that breaks no rule whose knobs are all settled (nor the always-checked rule;
  /// where no value keeps that one, the first that breaks no other: a choice that no value
  /// makes hold must not break a rule of its own); leaves it as it is when none does
  /// (validation then reports it).
  void fit(KnobId id) {
    const Knob &k = knob(id);
    int64_t start =
        preferredValue(id, k.get(schedule_), *context_.layer, context_.target, schedule_);
    for (bool withAlwaysChecked : {true, false}) {
      for (int64_t value : candidates(k, start)) {
        k.set(schedule_, value);
        if (holdsSettledRules(id, withAlwaysChecked)) {
          settled_.insert(id);
          return;
        }
      }
      if (!alwaysChecked_)
        break;
    }
    k.set(schedule_, start);
    settled_.insert(id);
  }

private:
  /// The values to try, best first: down from `start`; then, for a choice (which has no
  /// order), the others.
  std::vector<int64_t> candidates(const Knob &k, int64_t start) const {
    std::vector<int64_t> values = domainValues(k, context_.target), tried;
    for (auto it = values.rbegin(); it != values.rend(); ++it)
      if (*it <= start)
        tried.push_back(*it);
    if (k.type == KnobType::Choice)
      for (int64_t value : values)
        if (value > start)
          tried.push_back(value);
    return tried;
  }

  /// Whether `id`'s value breaks no rule whose knobs are all settled; the always-checked rule
  /// is checked in any case `withAlwaysChecked`, else not at all.
  bool holdsSettledRules(KnobId id, bool withAlwaysChecked) const {
    for (const Constraint &constraint : constraints()) {
      bool always = &constraint == alwaysChecked_;
      if (always && !withAlwaysChecked)
        continue;
      bool applies = constraint.involves(id);
      for (KnobId other : constraint.knobs)
        applies = applies && (other == id || settled_.count(other) || always);
      if (applies && !constraint.holds(schedule_, context_))
        return false;
    }
    return true;
  }

  Schedule &schedule_;
  const KnobContext &context_;
  std::set<KnobId> settled_;
  const Constraint *alwaysChecked_;
};

} // namespace

ScheduleResolution resolveSchedule(const LayerSpec &layer, const CpuTarget &target,
                                   const ScheduleBlock *block, DiagnosticEngine *diags) {
  Schedule schedule = targetDefaults(target);
  std::set<KnobId> given;
  if (block) {
    for (const KnobSetting &setting : block->settings) {
      knob(setting.id).set(schedule, setting.value);
      given.insert(setting.id);
    }
    if (block->projectionTransform)
      schedule.projectionTransform = block->projectionTransform->path;
  }

  KnobContext context{target, &layer};
  Schedule defaults = schedule;
  auto fitAll = [&](const Constraint *first) {
    schedule = defaults;
    Fitter fitter(schedule, context, given, first);
    std::vector<KnobId> order = first ? first->knobs : std::vector<KnobId>();
    order.insert(order.end(), std::begin(kFitOrder), std::end(kFitOrder));
    std::set<KnobId> fitted;
    for (KnobId id : order)
      if (!given.count(id) && fitted.insert(id).second)
        fitter.fit(id);
  };
  fitAll(nullptr);
  // A rule whose knobs are fitted one before another may still be broken (the scratch of a
  // layer with very wide heads, which the key block is fitted before the query blocks know):
  // a second round fits from the defaults again, that rule's knobs first, checking it from
  // the first on.
  if (const Constraint *broken = firstViolation(schedule, context))
    fitAll(broken);

  std::vector<const Constraint *> broken = violations(schedule, context);
  if (broken.empty())
    return {schedule, ""};
  // Every broken rule is reported at a setting of the file that takes part in it, as a .mha
  // file's problems are all reported; a rule the file has no part in breaks the defaults.
  bool reported = false;
  for (const Constraint *rule : broken) {
    for (KnobId id : rule->knobs) {
      const KnobSetting *setting = block ? block->find(id) : nullptr;
      if (!setting || !diags)
        continue;
      std::string message = rule->explain(schedule, context);
      std::vector<int64_t> legal = legalValues(id, schedule, context);
      if (!legal.empty())
        message += fmt::format(" (legal values of {} here: {})", knob(id).name,
                               describeValues(knob(id), legal));
      diags->error(setting->valueLoc, message, setting->valueLength);
      reported = true;
      break;
    }
  }
  if (reported)
    return {std::nullopt, ""};
  return {std::nullopt, fmt::format("no schedule of the target's defaults fits layer '{}': {}",
                                    layer.name, broken.front()->explain(schedule, context))};
}

} // namespace mhac
