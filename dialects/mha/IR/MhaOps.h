//===- MhaOps.h - mha dialect operations ------------------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_DIALECTS_MHA_IR_MHAOPS_H
#define MHAC_DIALECTS_MHA_IR_MHAOPS_H

#include "dialects/mha/IR/MhaDialect.h"
#include "runtime/reference/Rope.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/mha/IR/MhaEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/mha/IR/MhaOps.h.inc"

namespace mhac::mha {

/// Whether `use` is a parameter of the layer: a projection's weight or bias, a q/k norm's weight,
/// attention's sinks. Parameters are prepared once (NAME_prepare) rather than read per call.
bool isParameterOperand(mlir::OpOperand &use);

} // namespace mhac::mha

#endif // MHAC_DIALECTS_MHA_IR_MHAOPS_H
