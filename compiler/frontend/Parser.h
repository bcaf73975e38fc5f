//===- Parser.h - from tokens to the syntax tree ----------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_PARSER_H
#define MHAC_COMPILER_FRONTEND_PARSER_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Lexer.h"

#include <string_view>
#include <vector>

namespace mhac {

/// What a file of blocks may hold. `.mha` files are layer blocks only; schedule files start
/// with settings (`format = 1`) and mhac's default schedules have `target` blocks.
struct BlockGrammar {
  bool settings = false;
  std::vector<std::string_view> blockKeywords = {"layer"};
  /// A file without blocks is an error (a `.mha` file without layers compiles nothing).
  bool needsBlock = true;
};

/// A recursive-descent parser for
///
///   file  := { entry } { block }          (entries before blocks only with settings)
///   block := KEYWORD IDENT '{' { entry } '}'
///   entry := IDENT '=' value NEWLINE
///   value := INTEGER | DECIMAL | IDENT | '?'
///
/// with blank lines and comments anywhere. After an error it skips to the next line (or the
/// next block) and goes on, so that one run reports every independent mistake.
class Parser {
public:
  Parser(const SourceFile &file, DiagnosticEngine &diags, BlockGrammar grammar = {});

  /// Parses the whole file. The tree is complete only when `diags.hasErrors()` is false.
  ModuleAST parseModule();

private:
  void consume();
  void skipNewlines();
  /// Skips the rest of the current line, so that parsing resumes at the next one.
  void skipLine();
  /// Reports "expected X, found Y" at the current token, unless the lexer already reported it.
  void errorExpected(std::string_view what);

  bool atBlockKeyword() const;
  std::string expectedBlocks() const;
  bool parseLayer(LayerAST &layer);
  bool parseEntry(EntryAST &entry);
  bool parseValue(ValueAST &value);

  Lexer lexer_;
  DiagnosticEngine &diags_;
  Token token_;
  BlockGrammar grammar_;
};

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_PARSER_H
