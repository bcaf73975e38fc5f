//===- ProgressLine.h - one line of progress for a long command -*- C++ -*-===//
//
// Part of mhac. On a terminal, one line that refreshes in place; elsewhere (a log, CI), a line
// every few seconds, so that a long command is never silent.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_COMMON_PROGRESSLINE_H
#define MHAC_TOOLS_COMMON_PROGRESSLINE_H

#include <chrono>
#include <string>

namespace mhac {

class ProgressLine {
public:
  /// Writes to stderr; refreshes in place when stderr is a terminal.
  ProgressLine();

  bool onTerminal() const { return terminal_; }
  /// Shows `line` now on a terminal, or when the last line is a few seconds old elsewhere.
  void update(const std::string &line);
  /// Ends the refreshing line, so that what follows starts on a line of its own.
  void finish();
  /// Erases the refreshing line, so that what follows starts where it started.
  void clear();

private:
  bool terminal_;
  bool shown_ = false;
  size_t width_ = 0;
  std::chrono::steady_clock::time_point last_;
};

} // namespace mhac

#endif // MHAC_TOOLS_COMMON_PROGRESSLINE_H
