//===- ParserTest.cpp - from tokens to the syntax tree ---------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

using namespace mhac;
using mhac::testing::FrontendRun;

TEST(ParserTest, ParsesLayersEntriesAndValueKinds) {
  FrontendRun run("# header\n"
                  "layer a {\n"
                  "  model_dim = 8\n"
                  "  scale = 0.5\n"
                  "  causal = true\n"
                  "  dtype = bf16\n"
                  "  seq = ?\n"
                  "}\n"
                  "\n"
                  "layer b { heads = 2 }\n",
                  /*analyze=*/false);
  ASSERT_FALSE(run.diags.hasErrors()) << run.messages.str();
  ASSERT_EQ(run.ast.layers.size(), 2u);
  const LayerAST &a = run.ast.layers[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.nameLoc.line, 2u);
  EXPECT_EQ(a.nameLoc.column, 7u);
  ASSERT_EQ(a.entries.size(), 5u);
  EXPECT_EQ(a.entries[0].key, "model_dim");
  EXPECT_EQ(a.entries[0].value.kind, ValueAST::Kind::Integer);
  EXPECT_EQ(a.entries[0].value.integer, 8);
  EXPECT_EQ(a.entries[1].value.kind, ValueAST::Kind::Decimal);
  EXPECT_DOUBLE_EQ(a.entries[1].value.decimal, 0.5);
  EXPECT_EQ(a.entries[2].value.kind, ValueAST::Kind::Boolean);
  EXPECT_TRUE(a.entries[2].value.boolean);
  EXPECT_EQ(a.entries[3].value.kind, ValueAST::Kind::Identifier);
  EXPECT_EQ(a.entries[3].value.spelling, "bf16");
  EXPECT_EQ(a.entries[4].value.kind, ValueAST::Kind::Dynamic);
  EXPECT_EQ(run.ast.layers[1].entries.size(), 1u);
}

TEST(ParserTest, ResolvesTheEscapesOfAString) {
  FrontendRun run(R"(layer a { path = "x\"y\\z\w" })", /*analyze=*/false);
  ASSERT_FALSE(run.diags.hasErrors()) << run.messages.str();
  const ValueAST &value = run.ast.layers[0].entries[0].value;
  EXPECT_EQ(value.kind, ValueAST::Kind::String);
  EXPECT_EQ(value.string, R"(x"y\z\w)");
  EXPECT_EQ(value.spelling, R"("x\"y\\z\w")");
}

TEST(ParserTest, RecoversAtTheNextLineAndReportsEveryError) {
  FrontendRun run("layer a {\n"
                  "  heads 12\n"
                  "  seq = = 3\n"
                  "  model_dim = 8 heads = 2\n"
                  "  batch = 2\n"
                  "}\n");
  EXPECT_EQ(run.diags.errorCount(), 3u) << run.messages.str();
  ASSERT_EQ(run.ast.layers.size(), 1u);
  ASSERT_EQ(run.ast.layers[0].entries.size(), 1u);
  EXPECT_EQ(run.ast.layers[0].entries[0].key, "batch");
  std::string text = run.messages.str();
  EXPECT_NE(text.find("test.mha:2:9: error: expected '=' after 'heads', found integer 12"),
            std::string::npos);
  EXPECT_NE(text.find("test.mha:3:9: error: expected a value, found '='"), std::string::npos);
  EXPECT_NE(text.find("test.mha:4:17: error: expected end of line after the value"),
            std::string::npos);
}

TEST(ParserTest, ReportsAnUnterminatedLayerAtTheEndOfFile) {
  FrontendRun run("layer a {\n  heads = 2\n");
  EXPECT_EQ(run.diags.errorCount(), 1u);
  std::string text = run.messages.str();
  EXPECT_NE(text.find("test.mha:3:1: error: expected '}' to end layer 'a'"), std::string::npos);
  EXPECT_NE(text.find("test.mha:1:9: note: the layer's '{' is here"), std::string::npos);
}

TEST(ParserTest, ReportsAnEmptyFile) {
  for (const char *text : {"", "\n\n# only a comment\n"}) {
    FrontendRun run(text);
    EXPECT_EQ(run.diags.errorCount(), 1u);
    EXPECT_NE(run.messages.str().find("error: no layer in file"), std::string::npos);
  }
}

TEST(ParserTest, RejectsIntegersOutOfRange) {
  FrontendRun run("layer a {\n  seq = 123456789012345678901234567890\n}\n");
  EXPECT_EQ(run.diags.errorCount(), 1u);
  EXPECT_NE(run.messages.str().find(
                "test.mha:2:9: error: integer 123456789012345678901234567890 is out of range"),
            std::string::npos);
}

TEST(ParserTest, SkipsToTheNextLayerAfterABadHeader) {
  FrontendRun run("layer {\n  heads = 1\n}\nlayer ok {\n  heads = 2\n}\n");
  EXPECT_EQ(run.diags.errorCount(), 1u);
  ASSERT_EQ(run.ast.layers.size(), 1u);
  EXPECT_EQ(run.ast.layers[0].name, "ok");
}

TEST(ParserTest, StopsAtTheErrorLimitOnGarbage) {
  std::string garbage;
  for (int i = 0; i < 20000; ++i)
    garbage += static_cast<char>((i * 7919) & 0xff);
  FrontendRun run(garbage);
  EXPECT_TRUE(run.diags.reachedErrorLimit());
  std::string text = run.messages.str();
  size_t printed = 0;
  for (size_t pos = 0; (pos = text.find(": error: ", pos)) != std::string::npos; ++pos)
    ++printed;
  EXPECT_EQ(printed, DiagnosticEngine::kMaxErrors);
}
