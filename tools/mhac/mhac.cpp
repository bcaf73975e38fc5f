//===- mhac.cpp - the mhac compiler driver --------------------------------===//
//
// Part of mhac. Runs the stages text -> AST -> Sema -> mha dialect and prints the one asked for.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"
#include "compiler/frontend/MLIRGen.h"
#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"
#include "tools/mhac/CommandLine.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <iostream>

using namespace mhac;

/// Exit statuses: 1 for errors in the input, 2 for misuse of the command line.
static constexpr int kInputError = 1;
static constexpr int kUsageError = 2;

static int compile(const CompileOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(options.inputPath, /*IsText=*/false,
                                                   /*RequiresNullTerminator=*/false);
  if (std::error_code error = buffer.getError()) {
    fmt::print(stderr, "mhac: error: cannot read '{}': {}\n", options.inputPath, error.message());
    return kInputError;
  }
  std::string displayName = options.inputPath == "-" ? "<stdin>" : options.inputPath;
  SourceFile file(displayName, (*buffer)->getBuffer().str());
  DiagnosticEngine diags(file, std::cerr);

  ModuleAST ast = Parser(file, diags).parseModule();
  std::optional<std::vector<LayerSpec>> layers =
      diags.hasErrors() ? std::nullopt : analyzeModule(ast, diags);
  if (!layers)
    return kInputError;

  if (options.emit == EmitStage::AST) {
    dumpAST(ast, displayName, std::cout);
    return 0;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = buildModule(context, *layers, displayName);
  if (mlir::failed(mlir::verify(*module))) {
    fmt::print(stderr, "mhac: internal error: the generated mha IR does not verify\n");
    return kInputError;
  }
  module->print(llvm::outs(), mlir::OpPrintingFlags().printNameLocAsPrefix());
  return 0;
}

int main(int argc, char **argv) {
  std::optional<Invocation> invocation = parseCommandLine(argc, argv);
  if (!invocation)
    return kUsageError;
  switch (invocation->action) {
  case Invocation::Action::Help:
    fmt::print("{}", helpText());
    return 0;
  case Invocation::Action::Version:
    fmt::print("mhac {} (LLVM/MLIR {})\n", MHAC_VERSION, LLVM_VERSION_STRING);
    return 0;
  case Invocation::Action::Compile:
    return compile(invocation->compile);
  }
  return kUsageError;
}
