//===- DiagnosticsTest.cpp - located error reports -------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Diagnostics.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace mhac;

TEST(SourceFileTest, SplitsLinesAndDropsCarriageReturns) {
  SourceFile file("f.mha", "one\r\ntwo\n\nfour");
  EXPECT_EQ(file.lineText(1), "one");
  EXPECT_EQ(file.lineText(2), "two");
  EXPECT_EQ(file.lineText(3), "");
  EXPECT_EQ(file.lineText(4), "four");
  EXPECT_EQ(file.lineText(5), "");
  EXPECT_EQ(file.lineText(0), "");
}

TEST(DiagnosticEngineTest, PrintsLocationLineAndCaret) {
  SourceFile file("f.mha", "layer x {\n  hedas = 2\n}\n");
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  diags.error({2, 3}, "unknown key 'hedas'", 5);
  EXPECT_EQ(out.str(), "f.mha:2:3: error: unknown key 'hedas'\n"
                       "  hedas = 2\n"
                       "  ^~~~~\n");
  EXPECT_TRUE(diags.hasErrors());
}

TEST(DiagnosticEngineTest, KeepsTabsAlignedAndHidesControlBytes) {
  SourceFile file("f.mha", "\tx\x01 = 1\n");
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  diags.error({1, 3}, "bad");
  EXPECT_EQ(out.str(), "f.mha:1:3: error: bad\n\tx? = 1\n\t ^\n");
}

TEST(DiagnosticEngineTest, WindowsVeryLongLines) {
  std::string line(100000, 'a');
  SourceFile file("f.mha", line);
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  diags.error({1, 50000}, "here");
  std::string text = out.str();
  EXPECT_LT(text.size(), 400u);
  // The caret sits under the reported column of the shown window.
  size_t shownStart = text.find('\n') + 1;
  size_t caretLine = text.find('\n', shownStart) + 1;
  size_t caret = text.find('^', caretLine);
  EXPECT_EQ(text.substr(shownStart, 3), "...");
  EXPECT_EQ(text[shownStart + (caret - caretLine)], 'a');
}

TEST(DiagnosticEngineTest, StopsPrintingAfterTheLimit) {
  SourceFile file("f.mha", "x\n");
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  for (unsigned i = 0; i < 3 * DiagnosticEngine::kMaxErrors; ++i)
    diags.error({1, 1}, "boom");
  std::string text = out.str();
  size_t printed = 0;
  for (size_t pos = 0; (pos = text.find("error: boom", pos)) != std::string::npos; ++pos)
    ++printed;
  EXPECT_EQ(printed, DiagnosticEngine::kMaxErrors);
  EXPECT_NE(text.find("too many errors"), std::string::npos);
  EXPECT_TRUE(diags.reachedErrorLimit());
}

TEST(EditDistanceTest, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(editDistance("heads", "heads"), 0u);
  EXPECT_EQ(editDistance("head", "heads"), 1u);
  EXPECT_EQ(editDistance("hedas", "heads"), 2u);
  EXPECT_EQ(editDistance("", "seq"), 3u);
  EXPECT_EQ(editDistance("modeldim", "model_dim"), 1u);
}

TEST(QuoteSourceTest, EscapesAndShortens) {
  EXPECT_EQ(quoteSource("abc"), "abc");
  EXPECT_EQ(quoteSource(std::string_view("\x00\xff", 2)), "\\x00\\xff");
  EXPECT_EQ(quoteSource(std::string(50, 'z'), 4), "zzzz...");
}
