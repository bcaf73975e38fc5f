//===- MhaDialect.h - the mha dialect ---------------------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_DIALECTS_MHA_IR_MHADIALECT_H
#define MHAC_DIALECTS_MHA_IR_MHADIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/mha/IR/MhaOpsDialect.h.inc"

#endif // MHAC_DIALECTS_MHA_IR_MHADIALECT_H
