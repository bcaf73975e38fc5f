//===- AST.h - the syntax tree of a .mha file -------------------*- C++ -*-===//
//
// Part of mhac. The tree records what was written, with locations; defaults and consistency
// are Sema's business.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_AST_H
#define MHAC_COMPILER_FRONTEND_AST_H

#include "compiler/frontend/Diagnostics.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mhac {

/// The right-hand side of `key = value`.
struct ValueAST {
  enum class Kind { Integer, Decimal, Boolean, Identifier, String, Dynamic };

  Kind kind = Kind::Integer;
  std::string spelling; ///< the text as written, for messages and dumps
  int64_t integer = 0;  ///< for `Integer`
  double decimal = 0;   ///< for `Decimal`
  bool boolean = false; ///< for `Boolean`
  std::string string;   ///< for `String`: the text between the quotes, escapes resolved
  SourceLocation loc;
};

/// Names a value's kind for messages: "integer 12", "'?'", "identifier 'f16'".
std::string describeValue(const ValueAST &value);

struct EntryAST {
  std::string key;
  SourceLocation keyLoc;
  ValueAST value;
};

/// `layer NAME { entries }` (schedule files also have `target NAME { entries }`).
struct LayerAST {
  std::string keyword = "layer";
  SourceLocation keywordLoc;
  std::string name;
  SourceLocation nameLoc;
  std::vector<EntryAST> entries;
};

struct ModuleAST {
  /// `key = value` lines before the first block (schedule files: `format = 1`).
  std::vector<EntryAST> settings;
  std::vector<LayerAST> layers;
};

/// Prints the tree in the indented form of `mhac compile --emit=ast`.
void dumpAST(const ModuleAST &module, const std::string &fileName, std::ostream &out);

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_AST_H
