//===- FrontendFuzzer.cpp - libFuzzer target for the front end ------------===//
//
// Part of mhac. Feeds arbitrary bytes through the lexer, parser and Sema, renders every
// diagnostic, and checks the front end's promise to MLIRGen: whatever Sema accepts becomes IR
// that verifies. A crash, a sanitizer report or a verifier failure is a finding.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/MLIRGen.h"
#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One context for the whole run: creating one per input would dominate the time.
  static mlir::MLIRContext *context = [] {
    auto *ctx = new mlir::MLIRContext();
    ctx->getDiagEngine().registerHandler(
        [](mlir::Diagnostic &diag) { std::fprintf(stderr, "verifier: %s\n", diag.str().c_str()); });
    return ctx;
  }();

  mhac::SourceFile file("fuzz.mha", std::string(reinterpret_cast<const char *>(data), size));
  std::ostringstream messages;
  mhac::DiagnosticEngine diags(file, messages);
  mhac::ModuleAST ast = mhac::Parser(file, diags).parseModule();
  if (diags.hasErrors())
    return 0;
  std::optional<std::vector<mhac::LayerSpec>> layers = mhac::analyzeModule(ast, diags);
  if (!layers)
    return 0;

  mlir::OwningOpRef<mlir::ModuleOp> module = mhac::buildModule(*context, *layers, "fuzz.mha");
  if (mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "Sema accepted a layer whose IR does not verify\n");
    std::abort();
  }
  return 0;
}
