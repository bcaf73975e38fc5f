//===- Parser.cpp - from tokens to the syntax tree ------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Parser.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace mhac {

Parser::Parser(const SourceFile &file, DiagnosticEngine &diags, BlockGrammar grammar)
    : lexer_(file, diags), diags_(diags), grammar_(std::move(grammar)) {
  consume();
}

void Parser::consume() { token_ = lexer_.next(); }

void Parser::skipNewlines() {
  while (token_.is(TokenKind::Newline))
    consume();
}

void Parser::skipLine() {
  while (!token_.is(TokenKind::Newline) && !token_.is(TokenKind::EndOfFile))
    consume();
}

void Parser::errorExpected(std::string_view what) {
  if (token_.is(TokenKind::Error))
    return;
  diags_.error(token_.loc, fmt::format("expected {}, found {}", what, describeToken(token_)),
               token_.text.size());
}

bool Parser::atBlockKeyword() const {
  for (std::string_view keyword : grammar_.blockKeywords)
    if (token_.isKeyword(keyword))
      return true;
  return false;
}

std::string Parser::expectedBlocks() const {
  std::string expected;
  for (std::string_view keyword : grammar_.blockKeywords)
    expected += fmt::format("{}'{}'", expected.empty() ? "" : " or ", keyword);
  return expected;
}

ModuleAST Parser::parseModule() {
  ModuleAST module;
  skipNewlines();
  while (grammar_.settings && token_.is(TokenKind::Identifier) && !atBlockKeyword() &&
         !diags_.reachedErrorLimit()) {
    EntryAST entry;
    if (parseEntry(entry))
      module.settings.push_back(std::move(entry));
    else
      skipLine();
    skipNewlines();
  }
  while (!token_.is(TokenKind::EndOfFile) && !diags_.reachedErrorLimit()) {
    LayerAST layer;
    if (parseLayer(layer)) {
      module.layers.push_back(std::move(layer));
    } else {
      // Resume at the next line that starts a layer.
      do {
        skipLine();
        skipNewlines();
      } while (!token_.is(TokenKind::EndOfFile) && !atBlockKeyword());
    }
    skipNewlines();
  }
  if (grammar_.needsBlock && module.layers.empty() && !diags_.hasErrors())
    diags_.error(token_.loc, "no layer in file; expected 'layer NAME { ... }'");
  return module;
}

bool Parser::parseLayer(LayerAST &layer) {
  if (!atBlockKeyword()) {
    errorExpected(expectedBlocks());
    return false;
  }
  layer.keyword = std::string(token_.text);
  layer.keywordLoc = token_.loc;
  consume();

  if (!token_.is(TokenKind::Identifier)) {
    errorExpected(fmt::format("a {} name", layer.keyword));
    return false;
  }
  layer.name = std::string(token_.text);
  layer.nameLoc = token_.loc;
  consume();

  skipNewlines();
  if (!token_.is(TokenKind::LBrace)) {
    errorExpected(fmt::format("'{{' after the {} name", layer.keyword));
    return false;
  }
  SourceLocation openLoc = token_.loc;
  consume();

  while (!diags_.reachedErrorLimit()) {
    skipNewlines();
    if (token_.is(TokenKind::RBrace)) {
      consume();
      if (!token_.is(TokenKind::Newline) && !token_.is(TokenKind::EndOfFile)) {
        errorExpected("end of line after '}'");
        skipLine();
      }
      return true;
    }
    if (token_.is(TokenKind::EndOfFile)) {
      diags_.error(token_.loc,
                   fmt::format("expected '}}' to end {} '{}'", layer.keyword, layer.name));
      diags_.note(openLoc, fmt::format("the {}'s '{{' is here", layer.keyword));
      return true;
    }
    EntryAST entry;
    if (parseEntry(entry))
      layer.entries.push_back(std::move(entry));
    else
      skipLine();
  }
  return true;
}

bool Parser::parseEntry(EntryAST &entry) {
  if (!token_.is(TokenKind::Identifier)) {
    errorExpected("a key or '}'");
    return false;
  }
  entry.key = std::string(token_.text);
  entry.keyLoc = token_.loc;
  consume();

  if (token_.is(TokenKind::Colon)) {
    // Recovered as if it were '=': the value after it is still checked.
    diags_.error(token_.loc,
                 fmt::format("expected '=' after '{}', found ':'; write '{} = VALUE'", entry.key,
                             entry.key));
  } else if (!token_.is(TokenKind::Equal)) {
    errorExpected(fmt::format("'=' after '{}'", entry.key));
    return false;
  }
  consume();

  if (!parseValue(entry.value))
    return false;

  if (token_.is(TokenKind::Separator)) {
    // Recovered as a line break, so that the entries after it are still checked.
    diags_.error(token_.loc,
                 fmt::format("entries are separated by line breaks, not '{}': write each 'key "
                             "= value' on a line of its own",
                             token_.text));
    consume();
    return true;
  }
  // One entry per line; a closing brace may end the last line (`{ heads = 2 }`).
  if (!token_.is(TokenKind::Newline) && !token_.is(TokenKind::RBrace) &&
      !token_.is(TokenKind::EndOfFile)) {
    errorExpected("end of line after the value (one 'key = value' per line)");
    return false;
  }
  return true;
}

bool Parser::parseValue(ValueAST &value) {
  value.loc = token_.loc;
  value.spelling = std::string(token_.text);
  std::string_view text = token_.text;
  switch (token_.kind) {
  case TokenKind::Integer: {
    value.kind = ValueAST::Kind::Integer;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value.integer);
    if (ec != std::errc() || end != text.data() + text.size()) {
      diags_.error(value.loc, fmt::format("integer {} is out of range", quoteSource(text)),
                   text.size());
      return false;
    }
    break;
  }
  case TokenKind::Decimal: {
    value.kind = ValueAST::Kind::Decimal;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value.decimal);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value.decimal)) {
      diags_.error(value.loc, fmt::format("decimal {} is out of range", quoteSource(text)),
                   text.size());
      return false;
    }
    break;
  }
  case TokenKind::Identifier:
    if (text == "true" || text == "false") {
      value.kind = ValueAST::Kind::Boolean;
      value.boolean = text == "true";
    } else {
      value.kind = ValueAST::Kind::Identifier;
    }
    break;
  case TokenKind::String:
    value.kind = ValueAST::Kind::String;
    // The lexer has checked the quotes; `\"` and `\\` are its only escapes.
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      if (text[i] == '\\' && i + 2 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\'))
        ++i;
      value.string += text[i];
    }
    break;
  case TokenKind::Question:
    value.kind = ValueAST::Kind::Dynamic;
    break;
  default:
    errorExpected("a value");
    return false;
  }
  consume();
  return true;
}

} // namespace mhac
