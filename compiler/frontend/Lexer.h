//===- Lexer.h - tokens of the layer language -------------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_LEXER_H
#define MHAC_COMPILER_FRONTEND_LEXER_H

#include "compiler/frontend/Diagnostics.h"

#include <string>
#include <string_view>

namespace mhac {

enum class TokenKind {
  Identifier, ///< `[A-Za-z_][A-Za-z0-9_]*`, keywords included (`layer`, `true`, `f32`, ...)
  Integer,    ///< `-?[0-9]+`
  Decimal,    ///< `-?[0-9]+.[0-9]+([eE][+-]?[0-9]+)?` or an integer with an exponent
  String,     ///< `"..."` on one line, with `\"` and `\\` escapes (schedule files' paths)
  Question,   ///< `?`, a size given at run time
  Equal,      ///< `=`
  Colon,      ///< `:`, never valid: lexed to suggest `=` in its place
  Separator,  ///< `,` or `;`, never valid: lexed to say that entries are one per line
  LBrace,     ///< `{`
  RBrace,     ///< `}`
  Newline,    ///< end of a line: the language has one `key = value` per line
  EndOfFile,
  Error, ///< malformed text, already reported by the lexer
};

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  std::string_view text;
  SourceLocation loc;

  bool is(TokenKind k) const { return kind == k; }
  bool isKeyword(std::string_view keyword) const {
    return kind == TokenKind::Identifier && text == keyword;
  }
};

/// Describes a token for a message: "identifier 'foo'", "'{'", "end of line", ...
std::string describeToken(const Token &token);

/// Splits a source file into tokens, reporting malformed text (stray characters, bad numbers,
/// over-long identifiers) as it goes and handing the parser an `Error` token in its place.
class Lexer {
public:
  /// Identifiers name C functions and keys; longer ones are rejected rather than truncated.
  static constexpr size_t kMaxIdentifierLength = 255;

  Lexer(const SourceFile &file, DiagnosticEngine &diags);

  /// Returns the next token; `EndOfFile` forever once the input is exhausted.
  Token next();

private:
  char peek(size_t ahead = 0) const;
  void advance(size_t count = 1);
  void skipSpaceAndComments();
  Token make(TokenKind kind, size_t begin, SourceLocation loc) const;
  Token lexIdentifier(size_t begin, SourceLocation loc);
  Token lexNumber(size_t begin, SourceLocation loc);
  Token lexString(size_t begin, SourceLocation loc);
  Token lexInvalid(size_t begin, SourceLocation loc);

  std::string_view text_;
  DiagnosticEngine &diags_;
  size_t pos_ = 0;
  SourceLocation loc_;
};

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_LEXER_H
