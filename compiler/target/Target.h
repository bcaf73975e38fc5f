//===- Target.h - the machines mhac generates code for ----------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_TARGET_H
#define MHAC_COMPILER_TARGET_TARGET_H

#include "compiler/target/CpuTarget.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace mhac {

/// Resolves a `--target` value: `host` (the default), an x86-64 CPU as LLVM names it
/// (`x86-64-v3` for AVX2, `x86-64-v4` for AVX-512, `znver4`, `sapphirerapids`, ...), which
/// must have AVX2 and FMA, or `cuda:sm_NN`, a CUDA GPU launched from plain x86-64 code.
llvm::Expected<CpuTarget> resolveCpuTarget(const std::string &name);

/// The target `name` for a CPU that LLVM calls `cpu`, with `features` (as LLVM detects them on
/// the host, or as the CPU defines them). AVX-512 CPUs get the 512-bit schedule and
/// `-prefer-256-bit`, so that LLVM's own vectorizers widen to zmm like the schedule (its
/// models of Intel's AVX-512 CPUs prefer ymm). On AMD CPUs with AVX-512 (Zen 4, Zen 5), code
/// is tuned as for `x86-64-v4`: LLVM's Zen scheduling model hoists the register tiles' loads
/// so far ahead of their FMAs that a tile of 24 accumulators spills, where the Skylake-server
/// model keeps all 32 zmm live (bench/RESULTS.md has the measurements).
CpuTarget cpuTarget(llvm::StringRef name, llvm::StringRef cpu,
                    const llvm::StringMap<bool> &features);

/// `--emulate-amx` (a testing aid): `target`, which must have AVX512-BF16, taken as a CPU with
/// AMX whose tile operations are written as vector operations (CpuTarget::emulateAmx).
llvm::Error emulateAmx(CpuTarget &target);

/// Plain x86-64, without AVX: the machine of code that every x86-64 CPU runs, such as the
/// dispatchers of an object with variants for several targets.
CpuTarget baselineCpuTarget();

/// Creates an LLVM TargetMachine for `target`, tuned for speed (O3).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_TARGET_H
