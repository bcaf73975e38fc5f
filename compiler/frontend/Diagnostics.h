//===- Diagnostics.h - source files and located error reports ---*- C++ -*-===//
//
// Part of mhac. Every error in a `.mha` file is reported as `FILE:LINE:COL: error: message`
// followed by the source line and a caret, the format compilers have taught users to read.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_DIAGNOSTICS_H
#define MHAC_COMPILER_FRONTEND_DIAGNOSTICS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace mhac {

/// A position in a source file; both fields count from 1. Columns count bytes, as clang's do.
struct SourceLocation {
  uint32_t line = 1;
  uint32_t column = 1;
};

/// The text of one input file and the index of its lines.
class SourceFile {
public:
  SourceFile(std::string name, std::string text);

  const std::string &name() const { return name_; }
  std::string_view text() const { return text_; }

  /// The text of line `line` (1-based) without its line terminator; empty past the end.
  std::string_view lineText(uint32_t line) const;

private:
  std::string name_;
  std::string text_;
  std::vector<size_t> lineStarts_;
};

/// Formats and counts diagnostics for one source file.
///
/// Output stops after `kMaxErrors` errors so that a binary file produces a screenful, not
/// megabytes; callers check `hasErrors()` to decide the exit status.
class DiagnosticEngine {
public:
  static constexpr unsigned kMaxErrors = 20;

  DiagnosticEngine(const SourceFile &file, std::ostream &out) : file_(file), out_(out) {}

  /// Reports an error at `loc`, underlining `length` bytes (at least one caret).
  void error(SourceLocation loc, std::string_view message, size_t length = 1);
  /// Reports a warning at `loc`: something legal that is likely not what the user meant.
  void warning(SourceLocation loc, std::string_view message, size_t length = 1);
  /// Attaches a note (for example "previous definition is here") to the last error.
  void note(SourceLocation loc, std::string_view message, size_t length = 1);

  bool hasErrors() const { return errorCount_ != 0; }
  unsigned errorCount() const { return errorCount_; }
  /// True once the error limit is reached: parsing further would only add noise.
  bool reachedErrorLimit() const { return errorCount_ >= kMaxErrors; }

private:
  void emit(std::string_view severity, SourceLocation loc, std::string_view message, size_t length);

  const SourceFile &file_;
  std::ostream &out_;
  unsigned errorCount_ = 0;
  bool suppressed_ = false;
};

/// The Levenshtein distance between two strings, for "did you mean" suggestions.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to a misspelled `name`, if it is close enough to be a likely typo
/// (within about a third of the name's length): every "did you mean" of mhac uses this rule.
std::optional<std::string_view> closestName(std::string_view name,
                                            const std::vector<std::string_view> &candidates);

/// Quotes a piece of source text for a message: printable ASCII as is, other bytes as `\xNN`,
/// and long texts shortened with "...".
std::string quoteSource(std::string_view text, size_t maxLength = 40);

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_DIAGNOSTICS_H
