//===- AttentionPipeline.cpp - a layer as two Halide pipelines ------------===//
//
// Part of mhac. Dimensions are innermost first, as in Halide: x(d, s, b) is x[b, s, d].
//
//===----------------------------------------------------------------------===//

#include "tools/mhac-halide/AttentionPipeline.h"

#include <limits>
#include <optional>

using namespace Halide;

namespace mhac::halide {
namespace {

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

Var c("c"), r("r"), b("b"), t("t"), i("i"), n("n"), h("h"), e("e"), j("j");

/// Declares a dense activation [batch, rows, width] with the layer's static sizes.
void constrainActivation(OutputImageParam buffer, int64_t width, int64_t rows, int64_t batch) {
  buffer.dim(0).set_bounds(0, static_cast<int>(width)).set_stride(1);
  buffer.dim(1).set_min(0).set_stride(static_cast<int>(width));
  if (rows != kDynamic)
    buffer.dim(1).set_extent(static_cast<int>(rows));
  buffer.dim(2).set_min(0).set_stride(buffer.dim(1).extent() * static_cast<int>(width));
  if (batch != kDynamic)
    buffer.dim(2).set_extent(static_cast<int>(batch));
  buffer.set_estimates({{0, static_cast<int>(width)},
                        {0, rows == kDynamic ? 512 : static_cast<int>(rows)},
                        {0, batch == kDynamic ? 1 : static_cast<int>(batch)}});
}

/// The layer's parameters: as the user passes them to NAME_prepare, and as the run pipeline
/// reads them from the prepared block: a weight [features, inputs] as panels
/// [paddedFeatures / panelWidth][inputs][panelWidth], so that a register tile's reduction reads
/// its weights contiguously; a bias [paddedFeatures].
struct Parameter {
  std::string name;
  int64_t features = 0, inputs = 0; ///< a bias has inputs = 0
  int64_t paddedFeatures = 0, panelWidth = 0;
  std::optional<ImageParam> given, prepared;
};

class PipelineBuilder {
public:
  PipelineBuilder(const LayerShape &layer, const HalideSchedule &schedule, int lanes)
      : layer_(layer), lanes_(lanes), io_(layer.bf16 ? BFloat(16) : Float(32)),
        schedule_(schedule) {}

  AttentionPipeline build();

private:
  /// Adds the weight (and bias) of projection `p`, `features` x `inputs`.
  void addParameters(const std::string &p, int64_t features, int64_t inputs);
  Parameter &parameter(const std::string &name);
  ProjectionFuncs project(const std::string &name, const RDom &k, Expr input, Expr weightColumn);
  void buildPreparation(AttentionPipeline &pipeline);

  const LayerShape &layer_;
  int lanes_;
  Type io_;
  const HalideSchedule &schedule_;
  std::vector<Parameter> parameters_;
};

void PipelineBuilder::addParameters(const std::string &p, int64_t features, int64_t inputs) {
  // Tiles may compute features past the last one: a register tile's width, and the p.v tile's
  // vectors past the last head's features. The prepared weights are padded with zeros so that
  // such reads stay inside them.
  int64_t width = schedule_.projectionVectors * lanes_;
  int64_t padded = roundUp(features + schedule_.valueVectors * lanes_ + lanes_, width);
  Parameter weight{"w" + p, features, inputs, padded, width, std::nullopt, std::nullopt};
  weight.given.emplace(io_, 2, "w" + p);
  weight.given->dim(0).set_bounds(0, static_cast<int>(inputs)).set_stride(1);
  weight.given->dim(1)
      .set_bounds(0, static_cast<int>(features))
      .set_stride(static_cast<int>(inputs));
  int w = static_cast<int>(width), k = static_cast<int>(inputs);
  int panels = static_cast<int>(padded / width);
  weight.prepared.emplace(Float(32), 3, "prepared_w" + p);
  weight.prepared->dim(0).set_bounds(0, w).set_stride(1);
  weight.prepared->dim(1).set_bounds(0, k).set_stride(w);
  weight.prepared->dim(2).set_bounds(0, panels).set_stride(w * k);
  weight.prepared->set_estimates({{0, w}, {0, k}, {0, panels}});
  parameters_.push_back(std::move(weight));
  if (!layer_.bias)
    return;
  Parameter bias{"b" + p, features, 0, padded, width, std::nullopt, std::nullopt};
  bias.given.emplace(io_, 1, "b" + p);
  bias.given->dim(0).set_bounds(0, static_cast<int>(features)).set_stride(1);
  bias.prepared.emplace(Float(32), 1, "prepared_b" + p);
  bias.prepared->dim(0).set_bounds(0, static_cast<int>(padded)).set_stride(1);
  bias.prepared->set_estimates({{0, static_cast<int>(padded)}});
  parameters_.push_back(std::move(bias));
}

Parameter &PipelineBuilder::parameter(const std::string &name) {
  for (Parameter &p : parameters_)
    if (p.name == name)
      return p;
  throw std::logic_error("no parameter " + name);
}

ProjectionFuncs PipelineBuilder::project(const std::string &name, const RDom &k, Expr input,
                                         Expr weightColumn) {
  Parameter &weight = parameter("w" + name);
  ProjectionFuncs funcs;
  funcs.result = Func(name);
  funcs.accumulator = Func(name + "_accumulator");
  funcs.reduction = RVar(k.x);
  Expr init = layer_.bias ? Expr((*parameter("b" + name).prepared)(c)) : Expr(0.0f);
  int width = static_cast<int>(weight.panelWidth);
  funcs.accumulator(c, r, b) = init;
  funcs.accumulator(c, r, b) += input * (*weight.prepared)(c % width, weightColumn, c / width);
  funcs.result(c, r, b) = funcs.accumulator(c, r, b);
  return funcs;
}

void PipelineBuilder::buildPreparation(AttentionPipeline &pipeline) {
  std::vector<Func> outputs;
  for (Parameter &p : parameters_) {
    Func prepared("prepared_" + p.name);
    int features = static_cast<int>(p.features);
    if (p.inputs) {
      // w[feature, input] becomes panels [feature / width][input][feature % width], padded
      // with zero features.
      int width = static_cast<int>(p.panelWidth), inputs = static_cast<int>(p.inputs);
      Var k("k"), panel("panel");
      Expr feature = panel * width + c;
      prepared(c, k, panel) =
          select(feature < features, cast<float>((*p.given)(k, min(feature, features - 1))), 0.0f);
      prepared.vectorize(c, lanes_).parallel(panel);
      OutputImageParam out = prepared.output_buffer();
      out.dim(0).set_bounds(0, width).set_stride(1);
      out.dim(1).set_bounds(0, inputs).set_stride(width);
      out.dim(2)
          .set_bounds(0, static_cast<int>(p.paddedFeatures / width))
          .set_stride(width * inputs);
      pipeline.prepared.push_back({p.name, {p.paddedFeatures / width, p.inputs, width}});
    } else {
      prepared(c) = select(c < features, cast<float>((*p.given)(min(c, features - 1))), 0.0f);
      prepared.vectorize(c, lanes_);
      prepared.output_buffer()
          .dim(0)
          .set_bounds(0, static_cast<int>(p.paddedFeatures))
          .set_stride(1);
      pipeline.prepared.push_back({p.name, {p.paddedFeatures}});
    }
    outputs.push_back(prepared);
    pipeline.prepareArguments.push_back(*p.given);
  }
  pipeline.prepare = Pipeline(outputs);
}

AttentionPipeline PipelineBuilder::build() {
  const LayerShape &L = layer_;
  int64_t queryWidth = L.heads * L.headDim, kvWidth = L.kvHeads * L.headDim;
  addParameters("q", queryWidth, L.modelDim);
  addParameters("k", kvWidth, L.kvDim);
  addParameters("v", kvWidth, L.kvDim);
  addParameters("o", L.modelDim, queryWidth);

  AttentionPipeline pipeline;
  buildPreparation(pipeline);

  ImageParam x(io_, 3, "x");
  constrainActivation(x, L.modelDim, L.seq, L.batch);
  std::optional<ImageParam> memory;
  if (L.cross) {
    memory.emplace(io_, 3, "memory");
    constrainActivation(*memory, L.kvDim, L.kvSeq, L.batch);
    memory->dim(2).set_extent(x.dim(2).extent());
  }
  ImageParam source = memory ? *memory : x;
  Expr seq = x.dim(1).extent(), kvSeq = source.dim(1).extent();
  std::optional<ImageParam> kvLens;
  if (L.kvLens) {
    kvLens.emplace(Int(32), 1, "kv_lens");
    kvLens->dim(0).set_min(0).set_extent(x.dim(2).extent()).set_stride(1);
    kvLens->set_estimates({{0, L.batch == kDynamic ? 1 : static_cast<int>(L.batch)}});
  }

  // Rows past the last one (tiles of rows round up) read the last row: the extra rows of the
  // intermediates are never used, and their reads stay inside the inputs.
  RDom dModel(0, static_cast<int>(L.modelDim), "d");
  RDom dKv(0, static_cast<int>(L.kvDim), "d");
  RDom dQuery(0, static_cast<int>(L.headDim), 0, static_cast<int>(L.heads), "f");
  Expr xRow = clamp(r, 0, seq - 1), kvRow = clamp(r, 0, kvSeq - 1);
  RunFuncs &f = pipeline.funcs;
  f.query = project("q", dModel, cast<float>(x(dModel, xRow, b)), dModel);
  f.key = project("k", dKv, cast<float>(source(dKv, kvRow, b)), dKv);
  f.value = project("v", dKv, cast<float>(source(dKv, kvRow, b)), dKv);

  // Attention runs over blocks of `queryBlock` query rows, a dimension of the algorithm (n) so
  // that a block's key range can end where its last row stops seeing keys: row n * block + i.
  int block = static_cast<int>(schedule_.queryBlock);
  int keyTile = static_cast<int>(schedule_.scoreVectors) * lanes_;
  Var tile("tile");
  f.keyPanels = Func("key_panels");
  f.keyPanels(t, c, tile, b) = f.key.result(c, tile * keyTile + t, b);
  int64_t group = L.heads / L.kvHeads;
  Expr kvHead = h / static_cast<int>(group);
  Expr query = n * block + i;
  int dh = static_cast<int>(L.headDim);
  RDom feature(0, dh, "e");
  f.headFeature = RVar(feature.x);
  f.scoreAccumulator = Func("score_accumulator");
  f.scoreAccumulator(t, i, n, h, b) = 0.0f;
  f.scoreAccumulator(t, i, n, h, b) +=
      f.query.result(h * dh + feature, query, b) *
      f.keyPanels(t % keyTile, kvHead * dh + feature, t / keyTile, b);
  f.scores = Func("scores");
  f.scores(t, i, n, h, b) = f.scoreAccumulator(t, i, n, h, b) * L.scale;

  // Key t is visible to query row q when t < kv_lens[b] and, if causal, t <= q + (Skv - S);
  // no row of block n sees a key at or past keyEnd.
  Expr visibleKeys = kvLens ? Expr((*kvLens)(b)) : kvSeq;
  auto visible = [&](Expr key) {
    Expr seen = key < visibleKeys;
    if (L.causal)
      seen = seen && key <= query + (kvSeq - seq);
    return seen;
  };
  Expr keyEnd = visibleKeys;
  if (L.causal)
    keyEnd = min(keyEnd, max(0, (n + 1) * block + (kvSeq - seq)));
  // Row maxima and sums are reduced lane-wise over chunks of keys first, so that they vectorize.
  RDom chunk(0, (kvSeq + lanes_ - 1) / lanes_, "chunk");
  chunk.where(chunk * lanes_ < keyEnd);
  RDom lane(0, lanes_, "lane");
  f.keyChunk = RVar(chunk.x);
  Expr minusInfinity = Expr(-std::numeric_limits<float>::infinity());
  Expr chunkKey = chunk * lanes_ + j;
  f.laneMax = Func("lane_max");
  f.laneMax(j, i, n, h, b) = minusInfinity;
  f.laneMax(j, i, n, h, b) =
      max(f.laneMax(j, i, n, h, b),
          select(visible(chunkKey), f.scores(chunkKey, i, n, h, b), minusInfinity));
  f.rowMax = Func("row_max");
  f.rowMax(i, n, h, b) = maximum(f.laneMax(lane, i, n, h, b));
  // exp of the shifted scores (all <= 0) needs no range above 0; below -87 it is 0 in f32
  // anyway, and Halide's fast_exp wants its argument in range.
  f.probabilities = Func("probabilities");
  f.probabilities(t, i, n, h, b) = select(
      visible(t), fast_exp(max(f.scores(t, i, n, h, b) - f.rowMax(i, n, h, b), -87.0f)), 0.0f);
  f.laneSum = Func("lane_sum");
  f.laneSum(j, i, n, h, b) = 0.0f;
  f.laneSum(j, i, n, h, b) += f.probabilities(chunkKey, i, n, h, b);
  f.rowSum = Func("row_sum");
  f.rowSum(i, n, h, b) = sum(f.laneSum(lane, i, n, h, b));

  RDom key(0, kvSeq, "key");
  key.where(key < keyEnd);
  f.keyIndex = RVar(key.x);
  f.valueAccumulator = Func("value_accumulator");
  f.valueAccumulator(e, i, n, h, b) = 0.0f;
  f.valueAccumulator(e, i, n, h, b) +=
      f.probabilities(key, i, n, h, b) * f.value.result(kvHead * dh + e, key, b);
  f.attention = Func("attention");
  // A row that sees no key (its sum is 0) gives 0.
  Expr total = f.rowSum(i, n, h, b);
  f.attention(e, i, n, h, b) =
      select(total > 0.0f, f.valueAccumulator(e, i, n, h, b) / max(total, 1e-30f), 0.0f);
  f.output = project("o", dQuery, f.attention(dQuery.x, r % block, r / block, dQuery.y, b),
                     dQuery.y * dh + dQuery.x);

  f.out = Func("out");
  f.out(c, r, b) = cast(io_, f.output.result(c, r, b));
  constrainActivation(f.out.output_buffer(), L.modelDim, L.seq, L.batch);
  f.out.output_buffer().dim(2).set_extent(x.dim(2).extent());
  f.out.output_buffer().dim(1).set_extent(seq);

  pipeline.runArguments.push_back(x);
  if (memory)
    pipeline.runArguments.push_back(*memory);
  for (Parameter &p : parameters_)
    pipeline.runArguments.push_back(*p.prepared);
  if (kvLens)
    pipeline.runArguments.push_back(*kvLens);
  pipeline.run = Pipeline(f.out);
  return pipeline;
}

} // namespace

AttentionPipeline buildAttentionPipeline(const LayerShape &layer, const HalideSchedule &schedule,
                                         int lanes) {
  return PipelineBuilder(layer, schedule, lanes).build();
}

} // namespace mhac::halide
