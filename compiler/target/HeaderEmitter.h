//===- HeaderEmitter.h - the C header of compiled layers --------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_HEADEREMITTER_H
#define MHAC_COMPILER_TARGET_HEADEREMITTER_H

#include "compiler/target/LayerABI.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace mhac {

/// The text of NAME.h for `layers`: plain C, one documented block per layer (docs/running.md
/// shows its use). `guardName` names the include guard; `source` is quoted in the banner.
std::string emitHeader(llvm::ArrayRef<LayerABI> layers, const std::string &guardName,
                       const std::string &source);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_HEADEREMITTER_H
