//===- LexerTest.cpp - tokens of the layer language ------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Lexer.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

using namespace mhac;

namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::string messages;
  unsigned errors = 0;
};

/// Lexes `text` to the end; the tokens' text points into `file`, which outlives them.
Lexed lex(const SourceFile &file) {
  std::ostringstream out;
  DiagnosticEngine diags(file, out);
  Lexer lexer(file, diags);
  Lexed result;
  for (Token token = lexer.next();; token = lexer.next()) {
    result.tokens.push_back(token);
    if (token.is(TokenKind::EndOfFile))
      break;
  }
  result.messages = out.str();
  result.errors = diags.errorCount();
  return result;
}

std::vector<TokenKind> kinds(const Lexed &lexed) {
  std::vector<TokenKind> result;
  for (const Token &token : lexed.tokens)
    result.push_back(token.kind);
  return result;
}

} // namespace

TEST(LexerTest, LexesAnEntryLine) {
  SourceFile file("t.mha", "  heads = 12 # comment\n");
  Lexed lexed = lex(file);
  using K = TokenKind;
  EXPECT_EQ(kinds(lexed),
            (std::vector<K>{K::Identifier, K::Equal, K::Integer, K::Newline, K::EndOfFile}));
  EXPECT_EQ(lexed.tokens[0].text, "heads");
  EXPECT_EQ(lexed.tokens[0].loc.line, 1u);
  EXPECT_EQ(lexed.tokens[0].loc.column, 3u);
  EXPECT_EQ(lexed.tokens[2].text, "12");
  EXPECT_EQ(lexed.tokens[2].loc.column, 11u);
  EXPECT_EQ(lexed.errors, 0u);
}

TEST(LexerTest, LexesNumbersOfEveryForm) {
  SourceFile file("t.mha", "0.125 -3 1e-3 2.5E+2 ? { }");
  Lexed lexed = lex(file);
  using K = TokenKind;
  EXPECT_EQ(kinds(lexed), (std::vector<K>{K::Decimal, K::Integer, K::Decimal, K::Decimal,
                                          K::Question, K::LBrace, K::RBrace, K::EndOfFile}));
  EXPECT_EQ(lexed.tokens[1].text, "-3");
}

TEST(LexerTest, LexesStringsWithTheirEscapes) {
  SourceFile file("t.sched", R"(p = "a \"b\" \\ c\d" # "not a string")");
  Lexed lexed = lex(file);
  using K = TokenKind;
  EXPECT_EQ(kinds(lexed), (std::vector<K>{K::Identifier, K::Equal, K::String, K::EndOfFile}));
  EXPECT_EQ(lexed.tokens[2].text, R"("a \"b\" \\ c\d")");
  EXPECT_EQ(lexed.errors, 0u);
}

TEST(LexerTest, RejectsAStringThatRunsToTheEndOfTheLine) {
  SourceFile file("t.sched", "p = \"abc\nq = 1");
  Lexed lexed = lex(file);
  EXPECT_EQ(lexed.errors, 1u);
  EXPECT_EQ(lexed.tokens[2].kind, TokenKind::Error);
  EXPECT_EQ(lexed.tokens[3].kind, TokenKind::Newline);
  EXPECT_NE(lexed.messages.find("t.sched:1:5: error: unterminated string"), std::string::npos);
}

TEST(LexerTest, TracksLinesAcrossCommentsAndCarriageReturns) {
  SourceFile file("t.mha", "# a\r\n\r\n  seq = ?\r\n");
  Lexed lexed = lex(file);
  ASSERT_GE(lexed.tokens.size(), 3u);
  EXPECT_EQ(lexed.tokens[2].text, "seq");
  EXPECT_EQ(lexed.tokens[2].loc.line, 3u);
  EXPECT_EQ(lexed.tokens[2].loc.column, 3u);
}

TEST(LexerTest, ReportsARunOfStrayCharactersOnce) {
  SourceFile file("t.mha", "heads @@$ 1");
  Lexed lexed = lex(file);
  EXPECT_EQ(lexed.errors, 1u);
  EXPECT_EQ(lexed.tokens[1].kind, TokenKind::Error);
  EXPECT_EQ(lexed.tokens[1].text, "@@$");
  EXPECT_NE(lexed.messages.find("t.mha:1:7: error: unexpected characters '@@$'"),
            std::string::npos);
}

TEST(LexerTest, RejectsMalformedNumbers) {
  for (const char *text : {"12abc", "1.", "1.2.3", "3e", "1e+"}) {
    SourceFile file("t.mha", text);
    Lexed lexed = lex(file);
    EXPECT_EQ(lexed.errors, 1u) << text;
    EXPECT_EQ(lexed.tokens[0].kind, TokenKind::Error) << text;
    EXPECT_NE(lexed.messages.find("malformed number"), std::string::npos) << text;
  }
}

TEST(LexerTest, RejectsALoneMinus) {
  SourceFile file("t.mha", "- 3");
  Lexed lexed = lex(file);
  EXPECT_EQ(lexed.errors, 1u);
  EXPECT_EQ(lexed.tokens[0].text, "-");
  EXPECT_EQ(lexed.tokens[1].kind, TokenKind::Integer);
}

TEST(LexerTest, RejectsOverlongIdentifiers) {
  SourceFile file("t.mha", std::string(100000, 'k'));
  Lexed lexed = lex(file);
  EXPECT_EQ(lexed.errors, 1u);
  EXPECT_EQ(lexed.tokens[0].kind, TokenKind::Error);
  EXPECT_NE(lexed.messages.find("identifier is too long (100000 characters; the limit is 255)"),
            std::string::npos);
  SourceFile limit("t.mha", std::string(Lexer::kMaxIdentifierLength, 'k'));
  EXPECT_EQ(lex(limit).errors, 0u);
}

TEST(LexerTest, SurvivesEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i)
    all += static_cast<char>(i);
  SourceFile file("t.mha", all + all);
  Lexed lexed = lex(file);
  EXPECT_GT(lexed.errors, 0u);
  EXPECT_EQ(lexed.tokens.back().kind, TokenKind::EndOfFile);
}
