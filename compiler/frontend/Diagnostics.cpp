//===- Diagnostics.cpp - source files and located error reports ----------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>

namespace mhac {

/// Source lines longer than this are shown as a window around the reported column.
static constexpr size_t kMaxShownLine = 120;

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n')
      lineStarts_.push_back(i + 1);
}

std::string_view SourceFile::lineText(uint32_t line) const {
  if (line == 0 || line > lineStarts_.size())
    return {};
  size_t begin = lineStarts_[line - 1];
  size_t end = line < lineStarts_.size() ? lineStarts_[line] - 1 : text_.size();
  std::string_view text(text_.data() + begin, end - begin);
  if (!text.empty() && text.back() == '\r')
    text.remove_suffix(1);
  return text;
}

static bool isPrintable(unsigned char c) { return c >= 0x20 && c < 0x7f; }

void DiagnosticEngine::error(SourceLocation loc, std::string_view message, size_t length) {
  ++errorCount_;
  if (errorCount_ > kMaxErrors) {
    suppressed_ = true;
    return;
  }
  suppressed_ = false;
  emit("error", loc, message, length);
  if (errorCount_ == kMaxErrors)
    out_ << fmt::format("{}: note: too many errors, stopping after {}\n", file_.name(), kMaxErrors);
}

void DiagnosticEngine::warning(SourceLocation loc, std::string_view message, size_t length) {
  suppressed_ = false;
  emit("warning", loc, message, length);
}

void DiagnosticEngine::note(SourceLocation loc, std::string_view message, size_t length) {
  if (!suppressed_)
    emit("note", loc, message, length);
}

void DiagnosticEngine::emit(std::string_view severity, SourceLocation loc, std::string_view message,
                            size_t length) {
  out_ << fmt::format("{}:{}:{}: {}: {}\n", file_.name(), loc.line, loc.column, severity, message);

  // Show the line, sanitized so that control bytes cannot garble the terminal, and windowed so
  // that a 100 kB line stays readable; the caret line copies tabs to stay aligned.
  std::string_view line = file_.lineText(loc.line);
  size_t column = std::min<size_t>(loc.column - 1, line.size());
  size_t begin = 0;
  if (line.size() > kMaxShownLine && column > kMaxShownLine / 2)
    begin = std::min(column - kMaxShownLine / 2, line.size() - kMaxShownLine);
  size_t end = std::min(line.size(), begin + kMaxShownLine);

  std::string shown = begin > 0 ? "..." : "";
  std::string caret(shown.size(), ' ');
  for (size_t i = begin; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    char printed = c == '\t' ? '\t' : isPrintable(c) ? static_cast<char>(c) : '?';
    shown += printed;
    if (i < column)
      caret += printed == '\t' ? '\t' : ' ';
  }
  if (end < line.size())
    shown += "...";
  size_t underline = std::max<size_t>(1, std::min(length, end > column ? end - column : 1));
  caret += '^';
  caret.append(underline - 1, '~');
  out_ << shown << '\n' << caret << '\n';
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string_view> closestName(std::string_view name,
                                            const std::vector<std::string_view> &candidates) {
  std::optional<std::string_view> best;
  size_t bestDistance = std::max<size_t>(1, (name.size() + 2) / 3) + 1;
  for (std::string_view candidate : candidates) {
    size_t distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string quoteSource(std::string_view text, size_t maxLength) {
  std::string quoted;
  for (size_t i = 0; i < text.size() && i < maxLength; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (isPrintable(c))
      quoted += static_cast<char>(c);
    else
      quoted += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > maxLength)
    quoted += "...";
  return quoted;
}

} // namespace mhac
