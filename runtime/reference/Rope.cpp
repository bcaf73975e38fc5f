//===- Rope.cpp - rotary position embeddings, as Hugging Face computes them -===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/Rope.h"

#include <algorithm>
#include <cmath>

namespace mhac::reference {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// Llama 3.1's rescaling: wavelengths longer than original_max / low_freq_factor are divided by
/// the factor, shorter than original_max / high_freq_factor kept, and those between blended.
void applyLlama3(const RopeParameters &rope, std::vector<double> &inverse) {
  double lowWavelength = rope.originalMax / rope.lowFreqFactor;
  double highWavelength = rope.originalMax / rope.highFreqFactor;
  for (double &frequency : inverse) {
    double wavelength = 2 * kPi / frequency;
    if (wavelength > lowWavelength) {
      frequency /= rope.factor;
    } else if (!(wavelength < highWavelength)) {
      double smooth = (rope.originalMax / wavelength - rope.lowFreqFactor) /
                      (rope.highFreqFactor - rope.lowFreqFactor);
      frequency = (1 - smooth) * frequency / rope.factor + smooth * frequency;
    }
  }
}

/// YaRN: the frequencies of dimensions below the correction range extrapolated (kept), those
/// above interpolated (divided by the factor), a linear ramp between.
void applyYarn(const RopeParameters &rope, std::vector<double> &inverse) {
  double dim = static_cast<double>(rope.dim);
  // The dimension at which a frequency makes `rotations` turns over the original context.
  auto correctionDim = [&](double rotations) {
    return dim * std::log(rope.originalMax / (rotations * 2 * kPi)) / (2 * std::log(rope.base));
  };
  double low = correctionDim(rope.betaFast), high = correctionDim(rope.betaSlow);
  if (rope.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high)
    high += 0.001; // Hugging Face's guard against a zero-width ramp
  for (size_t i = 0; i < inverse.size(); ++i) {
    double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    double extrapolation = 1 - ramp;
    inverse[i] = inverse[i] / rope.factor * (1 - extrapolation) + inverse[i] * extrapolation;
  }
}

} // namespace

RopeFrequencies ropeFrequencies(const RopeParameters &rope) {
  RopeFrequencies result;
  for (int64_t i = 0; 2 * i < rope.dim; ++i)
    result.inverse.push_back(1.0 / std::pow(rope.base, static_cast<double>(2 * i) / rope.dim));
  switch (rope.scaling) {
  case RopeScaling::None:
    break;
  case RopeScaling::Linear:
    for (double &frequency : result.inverse)
      frequency /= rope.factor;
    break;
  case RopeScaling::Llama3:
    applyLlama3(rope, result.inverse);
    break;
  case RopeScaling::Yarn:
    applyYarn(rope, result.inverse);
    result.attentionFactor = rope.factor > 1 ? 0.1 * std::log(rope.factor) + 1 : 1;
    break;
  }
  if (rope.attentionFactor > 0)
    result.attentionFactor = rope.attentionFactor;
  return result;
}

} // namespace mhac::reference
