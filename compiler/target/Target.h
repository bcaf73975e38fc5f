//===- Target.h - the machines mhac generates code for ----------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_TARGET_H
#define MHAC_COMPILER_TARGET_TARGET_H

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace mhac {

/// A CPU to generate code for, as `--target` names it.
struct CpuTarget {
  std::string name;     ///< as given: "host", "x86-64-v3", ...
  std::string triple;   ///< LLVM target triple
  std::string cpu;      ///< LLVM CPU name
  std::string features; ///< LLVM feature string
  /// Width of the widest vector registers the schedule may use, in bits (256 or 512).
  unsigned vectorBits = 256;
};

/// Resolves a `--target` value: `host` (the default), `x86-64-v3` (AVX2) or `x86-64-v4`
/// (AVX-512). CUDA targets are rejected with a message saying they are not built yet.
llvm::Expected<CpuTarget> resolveCpuTarget(const std::string &name);

/// Creates an LLVM TargetMachine for `target`, tuned for speed (O3).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_TARGET_H
