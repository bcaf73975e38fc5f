//===- TestHelpers.h - shared fixtures of the front-end unit tests -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TESTS_UNIT_FRONTEND_TESTHELPERS_H
#define MHAC_TESTS_UNIT_FRONTEND_TESTHELPERS_H

#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"

#include <sstream>
#include <string>

namespace mhac::testing {

/// Runs the front end on `text` (the parser alone unless `analyze`) and keeps what it printed.
struct FrontendRun {
  explicit FrontendRun(std::string text, bool analyze = true)
      : file("test.mha", std::move(text)), diags(file, messages) {
    ast = Parser(file, diags).parseModule();
    if (analyze && !diags.hasErrors())
      layers = analyzeModule(ast, diags);
  }

  SourceFile file;
  std::ostringstream messages;
  DiagnosticEngine diags;
  ModuleAST ast;
  std::optional<std::vector<LayerSpec>> layers;
};

} // namespace mhac::testing

#endif // MHAC_TESTS_UNIT_FRONTEND_TESTHELPERS_H
