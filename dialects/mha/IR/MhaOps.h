//===- MhaOps.h - mha dialect operations ------------------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_DIALECTS_MHA_IR_MHAOPS_H
#define MHAC_DIALECTS_MHA_IR_MHAOPS_H

#include "dialects/mha/IR/MhaDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/mha/IR/MhaOps.h.inc"

#endif // MHAC_DIALECTS_MHA_IR_MHAOPS_H
