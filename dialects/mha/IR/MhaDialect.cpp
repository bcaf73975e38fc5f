//===- MhaDialect.cpp - the mha dialect -----------------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "dialects/mha/IR/MhaDialect.h"
#include "dialects/mha/IR/MhaOps.h"

using namespace mlir;
using namespace mhac::mha;

#include "dialects/mha/IR/MhaOpsDialect.cpp.inc"

void MhaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/mha/IR/MhaOps.cpp.inc"
      >();
}
