//===- Lexer.cpp - tokens of the layer language ---------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Lexer.h"

#include <fmt/format.h>

namespace mhac {

static bool isIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isIdentifierChar(char c) { return isIdentifierStart(c) || isDigit(c); }
static bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/// Characters that can begin a token; a run of anything else is reported as one error.
static bool canStartToken(char c) {
  return isIdentifierStart(c) || isDigit(c) || isSpace(c) || c == '-' || c == '?' || c == '=' ||
         c == '{' || c == '}' || c == '\n' || c == '#' || c == '"' || c == ':' || c == ',' ||
         c == ';';
}

std::string describeToken(const Token &token) {
  switch (token.kind) {
  case TokenKind::Identifier:
    return fmt::format("identifier '{}'", quoteSource(token.text));
  case TokenKind::Integer:
    return fmt::format("integer {}", quoteSource(token.text));
  case TokenKind::Decimal:
    return fmt::format("decimal {}", quoteSource(token.text));
  case TokenKind::String:
    return fmt::format("string {}", quoteSource(token.text));
  case TokenKind::Newline:
    return "end of line";
  case TokenKind::EndOfFile:
    return "end of file";
  default:
    return fmt::format("'{}'", quoteSource(token.text));
  }
}

Lexer::Lexer(const SourceFile &file, DiagnosticEngine &diags) : text_(file.text()), diags_(diags) {}

char Lexer::peek(size_t ahead) const {
  return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
}

void Lexer::advance(size_t count) {
  for (; count > 0 && pos_ < text_.size(); --count, ++pos_) {
    if (text_[pos_] == '\n') {
      ++loc_.line;
      loc_.column = 1;
    } else {
      ++loc_.column;
    }
  }
}

void Lexer::skipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (isSpace(c)) {
      advance();
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n')
        advance();
    } else {
      return;
    }
  }
}

Token Lexer::make(TokenKind kind, size_t begin, SourceLocation loc) const {
  return Token{kind, text_.substr(begin, pos_ - begin), loc};
}

Token Lexer::next() {
  skipSpaceAndComments();
  size_t begin = pos_;
  SourceLocation loc = loc_;
  if (pos_ >= text_.size())
    return make(TokenKind::EndOfFile, begin, loc);

  char c = text_[pos_];
  if (isIdentifierStart(c))
    return lexIdentifier(begin, loc);
  if (isDigit(c) || (c == '-' && isDigit(peek(1))))
    return lexNumber(begin, loc);
  if (c == '"')
    return lexString(begin, loc);

  TokenKind kind;
  switch (c) {
  case '\n':
    kind = TokenKind::Newline;
    break;
  case '?':
    kind = TokenKind::Question;
    break;
  case '=':
    kind = TokenKind::Equal;
    break;
  case ':':
    kind = TokenKind::Colon;
    break;
  case ',':
  case ';':
    kind = TokenKind::Separator;
    break;
  case '{':
    kind = TokenKind::LBrace;
    break;
  case '}':
    kind = TokenKind::RBrace;
    break;
  default:
    return lexInvalid(begin, loc);
  }
  advance();
  return make(kind, begin, loc);
}

Token Lexer::lexIdentifier(size_t begin, SourceLocation loc) {
  while (isIdentifierChar(peek()))
    advance();
  Token token = make(TokenKind::Identifier, begin, loc);
  if (token.text.size() > kMaxIdentifierLength) {
    diags_.error(loc,
                 fmt::format("identifier is too long ({} characters; the limit is {})",
                             token.text.size(), kMaxIdentifierLength),
                 token.text.size());
    token.kind = TokenKind::Error;
  }
  return token;
}

Token Lexer::lexNumber(size_t begin, SourceLocation loc) {
  TokenKind kind = TokenKind::Integer;
  if (peek() == '-')
    advance();
  while (isDigit(peek()))
    advance();
  bool wellFormed = true;
  if (peek() == '.') {
    kind = TokenKind::Decimal;
    advance();
    wellFormed = isDigit(peek());
    while (isDigit(peek()))
      advance();
  }
  if (wellFormed && (peek() == 'e' || peek() == 'E')) {
    kind = TokenKind::Decimal;
    advance();
    if (peek() == '+' || peek() == '-')
      advance();
    wellFormed = isDigit(peek());
    while (isDigit(peek()))
      advance();
  }
  // A number glued to letters or another '.' (`12abc`, `1.2.3`) is one malformed token.
  if (isIdentifierChar(peek()) || peek() == '.') {
    wellFormed = false;
    while (isIdentifierChar(peek()) || peek() == '.')
      advance();
  }
  Token token = make(kind, begin, loc);
  if (!wellFormed) {
    diags_.error(loc, fmt::format("malformed number '{}'", quoteSource(token.text)),
                 token.text.size());
    token.kind = TokenKind::Error;
  }
  return token;
}

Token Lexer::lexString(size_t begin, SourceLocation loc) {
  advance(); // the opening quote
  while (pos_ < text_.size() && peek() != '"' && peek() != '\n') {
    if (peek() == '\\' && (peek(1) == '"' || peek(1) == '\\'))
      advance();
    advance();
  }
  if (peek() != '"') {
    Token token = make(TokenKind::Error, begin, loc);
    diags_.error(loc, "unterminated string; close it with '\"' on the same line",
                 token.text.size());
    return token;
  }
  advance();
  return make(TokenKind::String, begin, loc);
}

Token Lexer::lexInvalid(size_t begin, SourceLocation loc) {
  while (pos_ < text_.size() && !canStartToken(text_[pos_]))
    advance();
  if (pos_ == begin) // A lone '-' not followed by a digit.
    advance();
  Token token = make(TokenKind::Error, begin, loc);
  diags_.error(loc,
               fmt::format("unexpected {} '{}'",
                           token.text.size() == 1 ? "character" : "characters",
                           quoteSource(token.text)),
               token.text.size());
  return token;
}

} // namespace mhac
