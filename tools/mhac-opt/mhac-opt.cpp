//===- mhac-opt.cpp - mlir-opt with the mha dialect -----------------------===//
//
// Part of mhac. Drives the lit tests of the dialect, its passes and the schedule.
//
//===----------------------------------------------------------------------===//

#include "ApplyTilingSchedulePass.h"
#include "compiler/conversion/Passes.h"
#include "dialects/mha/IR/MhaDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mhac::registerMhacConversionPasses();
  mhac::registerApplyTilingSchedulePass();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mhac::mha::MhaDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "mhac optimizer driver\n", registry));
}
