//===- Knobs.h - the table of schedule knobs and their constraints -*- C++ -*-===//
//
// Part of mhac. The one description of what a schedule may say: every knob with its name,
// type and values, and every rule that couples knobs to each other, to the target or to the
// layer. The schedule file reader, the validator, the printer, the documentation and the
// tuner all read these tables; nothing else decides whether a schedule is legal.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_KNOBS_H
#define MHAC_COMPILER_SCHEDULES_KNOBS_H

#include "compiler/frontend/LayerSpec.h"
#include "compiler/schedules/Schedule.h"
#include "compiler/target/CpuTarget.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mhac {

/// Every knob, in the order schedule files print them.
enum class KnobId {
  ProjectionCacheRows,
  ProjectionCacheCols,
  ProjectionRegisterRows,
  ProjectionRegisterCols,
  ProjectionReductionBlock,
  ProjectionPanelReductionBlock,
  ProjectionReductionUnroll,
  ProjectionSplitLastCacheTile,
  ProjectionPrefetchNextBlock,
  ProjectionRowPadding,
  ProjectionTransposeTile,
  AttentionQueryBlock,
  AttentionGroupedQueryBlock,
  AttentionLongKeys,
  AttentionLongBlockGrowth,
  AttentionKeyBlock,
  AttentionScoreTileKeys,
  AttentionScoreTileVectors,
  AttentionValueTileRows,
  AttentionValueTileVectors,
  AttentionQueryTranspose,
  AttentionTransposeLowering,
  AttentionKeyPrefetchDistance,
  AttentionPrefetchValues,
  AttentionPrefetchNextBlock,
  AttentionDecodePositions,
  AttentionDecodeChunk,
  AttentionDecodeKeyBlock,
  AttentionCompute,
  Bf16Compute,
  HalideProjectionVectors,
  HalideProjectionRows,
  HalideProjectionTaskRows,
  HalideProjectionReductionBlock,
  HalideQueryBlock,
  HalideScoreVectors,
  HalideScoreRows,
  HalideValueVectors,
  HalideValueRows,
  HalideKeyBlock,
  HalideAutoscheduler,
  CudaProjectionBlockRows,
  CudaProjectionBlockCols,
  CudaProjectionKBlock,
  CudaProjectionThreadRows,
  CudaProjectionThreadCols,
  CudaAttentionQueryBlock,
  CudaAttentionKeyBlock,
  CudaAttentionRowThreads,
  CudaMmaBlockRows,
  CudaMmaBlockCols,
  CudaMmaWarpRows,
  CudaMmaWarpCols,
  CudaMmaStages,
  CudaMmaAttentionWarps,
  CudaMmaAttentionGroupHeads,
  CudaMmaAttentionKeyBlock,
};

enum class KnobType { Integer, Boolean, Choice };

/// What the rules read besides the schedule: the target, and the layer when one is known.
struct KnobContext {
  const CpuTarget &target;
  const LayerSpec *layer = nullptr; ///< null: only the rules that hold for any layer apply
};

struct Knob {
  KnobId id;
  std::string_view name;
  /// What the knob decides, in one line (printed beside it in schedule files).
  std::string_view summary;
  KnobType type;
  /// Choice knobs: the spellings of their values, indexed by the value.
  std::vector<std::string_view> choices;
  /// Integer knobs: the values allowed on any layer are min, min + step, ... up to max, where
  /// a step of 0 stands for the target's f32 lanes per vector (and min is then a multiple).
  int64_t min = 0, max = 1, step = 1;
  int64_t (*get)(const Schedule &);
  void (*set)(Schedule &, int64_t);
  /// The backend whose code it shapes: a schedule file for one backend names its knobs only.
  Backend backend = Backend::Mlir;
};

/// The name of `backend` as `--backend` spells it, and as messages name it.
std::string_view backendName(Backend backend);

/// The spelling of `autoscheduler` in schedule files, `--schedule auto:NAME` and Halide.
std::string_view autoschedulerName(HalideAutoscheduler autoscheduler);

/// A rule that a legal schedule satisfies, over one or more knobs.
struct Constraint {
  /// The knobs it couples, most specific first: a violation is reported at the first of them
  /// that the user wrote.
  std::vector<KnobId> knobs;
  /// Reads the layer: checked only when one is known.
  bool needsLayer = false;
  std::function<bool(const Schedule &, const KnobContext &)> holds;
  /// Why a schedule breaks the rule, naming the knobs and their values.
  std::function<std::string(const Schedule &, const KnobContext &)> explain;

  bool involves(KnobId id) const;
};

/// Which CUDA kernels a bf16 layer's projections and attention run (tensor cores, where their
/// operands' rows are whole 16-byte chunks and a thread's fragments fit its registers; the f32
/// kernels otherwise): the kernels and the rules that check their knobs read it here.
bool cudaProjectionOnTensorCores(const LayerSpec &layer, int64_t inFeatures);

/// Whether every projection of `layer` has output widths of whole panels of `schedule`'s
/// register columns, as AMX's register tiles need. (vdpbf16ps's pairs take any widths: their
/// panels narrow to a width's vectors or pad it, paddedProjectionWidth, and an odd input
/// width's last feature pairs with a zero.)
bool amxPanelsFit(const LayerSpec &layer, const Schedule &schedule);

/// Whether the projections' register tiles are whole AMX tiles that fit its registers, and
/// every reduction whole steps of 16 pairs (bf16_compute = amx).
bool amxTilesFit(const LayerSpec &layer, const Schedule &schedule);
bool cudaAttentionOnTensorCores(const LayerSpec &layer);

/// The knobs, in KnobId order.
const std::vector<Knob> &knobs();
/// The knobs of `backend`, in KnobId order.
std::vector<const Knob *> backendKnobs(Backend backend);
const Knob &knob(KnobId id);
/// The knob called `name`, or null.
const Knob *findKnob(std::string_view name);
/// The knob name closest to a misspelled `name` (for "did you mean"), if one is close.
std::optional<std::string_view> closestKnobName(std::string_view name);

/// Every rule.
const std::vector<Constraint> &constraints();

/// The values `knob` may take on `target` before any other knob or a layer is considered.
std::vector<int64_t> domainValues(const Knob &knob, const CpuTarget &target);
bool inDomain(const Knob &knob, int64_t value, const CpuTarget &target);
/// Why `value` is outside the knob's domain on `target` ("... is not a multiple of 16 ...").
std::string explainDomain(const Knob &knob, int64_t value, const CpuTarget &target);

/// The first rule `schedule` breaks in `context` (among those involving `only`, if given).
const Constraint *firstViolation(const Schedule &schedule, const KnobContext &context,
                                 std::optional<KnobId> only = std::nullopt);
/// Every rule `schedule` breaks in `context`, in the table's order.
std::vector<const Constraint *> violations(const Schedule &schedule, const KnobContext &context);
/// The values of `id` that would satisfy every rule, the other knobs as they are in `schedule`.
std::vector<int64_t> legalValues(KnobId id, const Schedule &schedule, const KnobContext &context);

/// A knob's value as a schedule file spells it.
std::string formatKnobValue(const Knob &knob, int64_t value);
/// A list of values for a message: all of them when few, else the first and last few.
std::string describeValues(const Knob &knob, const std::vector<int64_t> &values);

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_KNOBS_H
