//===- Parser.h - from tokens to the syntax tree ----------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_PARSER_H
#define MHAC_COMPILER_FRONTEND_PARSER_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Lexer.h"

namespace mhac {

/// A recursive-descent parser for
///
///   file  := { layer }
///   layer := 'layer' IDENT '{' { entry } '}'
///   entry := IDENT '=' value NEWLINE
///   value := INTEGER | DECIMAL | IDENT | '?'
///
/// with blank lines and comments anywhere. After an error it skips to the next line (or the
/// next layer) and goes on, so that one run reports every independent mistake.
class Parser {
public:
  Parser(const SourceFile &file, DiagnosticEngine &diags);

  /// Parses the whole file. The tree is complete only when `diags.hasErrors()` is false.
  ModuleAST parseModule();

private:
  void consume();
  void skipNewlines();
  /// Skips the rest of the current line, so that parsing resumes at the next one.
  void skipLine();
  /// Reports "expected X, found Y" at the current token, unless the lexer already reported it.
  void errorExpected(std::string_view what);

  bool parseLayer(LayerAST &layer);
  bool parseEntry(EntryAST &entry);
  bool parseValue(ValueAST &value);

  Lexer lexer_;
  DiagnosticEngine &diags_;
  Token token_;
};

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_PARSER_H
