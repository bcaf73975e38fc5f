//===- AST.cpp - the syntax tree of a .mha file ---------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"

#include <fmt/format.h>

namespace mhac {

std::string describeValue(const ValueAST &value) {
  switch (value.kind) {
  case ValueAST::Kind::Integer:
    return fmt::format("integer {}", value.spelling);
  case ValueAST::Kind::Decimal:
    return fmt::format("decimal {}", value.spelling);
  case ValueAST::Kind::Boolean:
    return fmt::format("boolean {}", value.spelling);
  case ValueAST::Kind::Identifier:
    return fmt::format("identifier '{}'", value.spelling);
  case ValueAST::Kind::String:
    return fmt::format("string {}", value.spelling);
  case ValueAST::Kind::Dynamic:
    return "'?'";
  }
  return value.spelling;
}

static const char *kindName(ValueAST::Kind kind) {
  switch (kind) {
  case ValueAST::Kind::Integer:
    return "integer";
  case ValueAST::Kind::Decimal:
    return "decimal";
  case ValueAST::Kind::Boolean:
    return "boolean";
  case ValueAST::Kind::Identifier:
    return "identifier";
  case ValueAST::Kind::String:
    return "string";
  case ValueAST::Kind::Dynamic:
    return "dynamic";
  }
  return "value";
}

void dumpAST(const ModuleAST &module, const std::string &fileName, std::ostream &out) {
  out << fmt::format("Module \"{}\"\n", fileName);
  for (const LayerAST &layer : module.layers) {
    out << fmt::format("  Layer {} @{}:{}\n", layer.name, layer.nameLoc.line, layer.nameLoc.column);
    for (const EntryAST &entry : layer.entries)
      out << fmt::format("    {} = {} ({}) @{}:{}\n", entry.key, entry.value.spelling,
                         kindName(entry.value.kind), entry.keyLoc.line, entry.keyLoc.column);
  }
}

} // namespace mhac
