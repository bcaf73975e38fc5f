//===- ProgressLine.cpp - one line of progress for a long command ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/common/ProgressLine.h"

#include <fmt/format.h>

#include <algorithm>

#include <unistd.h>

namespace mhac {

/// How often a line is printed when stderr is not a terminal.
constexpr std::chrono::seconds kLogInterval(5);

ProgressLine::ProgressLine() : terminal_(isatty(STDERR_FILENO)) {}

void ProgressLine::update(const std::string &line) {
  auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    // Pad over the tail of a longer previous line.
    fmt::print(stderr, "\r{:<{}}", line, std::max(width_, line.size()));
    width_ = std::max(width_, line.size());
    shown_ = true;
    return;
  }
  if (shown_ && now - last_ < kLogInterval)
    return;
  fmt::print(stderr, "{}\n", line);
  last_ = now;
  shown_ = true;
}

void ProgressLine::finish() {
  if (terminal_ && shown_)
    fmt::print(stderr, "\n");
  shown_ = false;
  width_ = 0;
}

void ProgressLine::clear() {
  if (terminal_ && shown_)
    fmt::print(stderr, "\r{:<{}}\r", "", width_);
  shown_ = false;
  width_ = 0;
}

} // namespace mhac
