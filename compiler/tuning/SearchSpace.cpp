//===- SearchSpace.cpp - legal schedules around a default -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/tuning/SearchSpace.h"

#include <algorithm>

namespace mhac {

size_t drawIndex(std::mt19937_64 &random, size_t n) { return random() % n; }

Schedule randomWalk(Schedule start, const KnobContext &context, std::mt19937_64 &random, int steps,
                    WalkRange range, Backend backend) {
  std::vector<const Knob *> searched = backendKnobs(backend);
  for (int step = 0; step < steps; ++step) {
    const Knob &k = *searched[drawIndex(random, searched.size())];
    std::vector<int64_t> legal = legalValues(k.id, start, context);
    if (range == WalkRange::Near && k.type == KnobType::Integer) {
      int64_t current = k.get(start);
      legal.erase(std::remove_if(legal.begin(), legal.end(),
                                 [&](int64_t v) { return 2 * v < current || v > 2 * current; }),
                  legal.end());
    }
    if (!legal.empty())
      k.set(start, legal[drawIndex(random, legal.size())]);
  }
  return start;
}

std::vector<Schedule> neighbours(const Schedule &center, const KnobContext &context) {
  std::vector<Schedule> result;
  // The tuner searches the MLIR backend's schedules.
  for (const Knob *searched : backendKnobs(Backend::Mlir)) {
    const Knob &k = *searched;
    std::vector<int64_t> legal = legalValues(k.id, center, context);
    int64_t current = k.get(center);
    auto above = std::upper_bound(legal.begin(), legal.end(), current);
    auto below = std::lower_bound(legal.begin(), legal.end(), current);
    std::vector<int64_t> values;
    if (k.type == KnobType::Integer) {
      if (below != legal.begin())
        values.push_back(*std::prev(below));
      if (above != legal.end())
        values.push_back(*above);
    } else {
      for (int64_t value : legal)
        if (value != current)
          values.push_back(value);
    }
    for (int64_t value : values) {
      Schedule neighbour = center;
      k.set(neighbour, value);
      result.push_back(neighbour);
    }
  }
  return result;
}

CandidatePool candidatePool(const Schedule &start, const KnobContext &context, uint64_t seed,
                            size_t walks) {
  std::vector<Schedule> pool{start};
  auto add = [&](const Schedule &schedule) {
    if (std::find(pool.begin(), pool.end(), schedule) == pool.end())
      pool.push_back(schedule);
  };
  for (const Schedule &neighbour : neighbours(start, context))
    add(neighbour);
  size_t neighbourCount = pool.size() - 1;
  std::mt19937_64 random(seed);
  // Walks of a few steps stay near the default, where good schedules are; longer ones reach
  // combinations one knob at a time never would.
  for (size_t walk = 0; walk < walks; ++walk)
    add(randomWalk(start, context, random, 2 + static_cast<int>(walk % 6), WalkRange::Near));
  return {std::move(pool), neighbourCount};
}

} // namespace mhac
