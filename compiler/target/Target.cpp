//===- Target.cpp - the machines mhac generates code for ------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/Target.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace mhac {

CpuTarget hostCpuTarget(StringRef cpu, const StringMap<bool> &hostFeatures) {
  CpuTarget target;
  target.name = "host";
  target.triple = sys::getDefaultTargetTriple();
  target.cpu = cpu.str();
  SubtargetFeatures features;
  for (const auto &feature : hostFeatures)
    features.AddFeature(feature.getKey(), feature.getValue());
  bool avx512 = hostFeatures.lookup("avx512f");
  target.vectorBits = avx512 ? 512 : 256;
  if (avx512 && cpu.starts_with("znver")) {
    target.tuneCpu = "x86-64-v4";
    // x86-64-v4's tuning prefers 256-bit vectors, as for the `x86-64-v4` target.
    features.AddFeature("prefer-256-bit", false);
  }
  target.features = features.getString();
  return target;
}

Expected<CpuTarget> resolveCpuTarget(const std::string &name) {
  CpuTarget target;
  target.name = name;
  target.triple = sys::getDefaultTargetTriple();
  if (name == "host") {
    return hostCpuTarget(sys::getHostCPUName(), sys::getHostCPUFeatures());
  }
  if (name == "x86-64-v3") {
    target.cpu = "x86-64-v3";
    target.vectorBits = 256;
    return target;
  }
  if (name == "x86-64-v4") {
    target.cpu = "x86-64-v4";
    // Without this, LLVM prefers 256-bit vectors on AVX-512 machines.
    target.features = "-prefer-256-bit";
    target.vectorBits = 512;
    return target;
  }
  if (name.rfind("cuda:", 0) == 0)
    return createStringError(inconvertibleErrorCode(),
                             "target '%s' is not supported yet: this version of mhac generates "
                             "code for x86-64 CPUs only",
                             name.c_str());
  return createStringError(inconvertibleErrorCode(),
                           "unknown target '%s' (expected host, x86-64-v3 or x86-64-v4)",
                           name.c_str());
}

Expected<std::unique_ptr<TargetMachine>> createTargetMachine(const CpuTarget &target) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  Triple triple(target.triple);
  std::string error;
  const Target *llvmTarget = TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return createStringError(inconvertibleErrorCode(), "%s", error.c_str());
  TargetOptions options;
  // Fuse multiplies and adds into FMAs, as -ffp-contract=fast: one rounding instead of two, and
  // the vectorized register tiles emit them as separate multiply and add.
  options.AllowFPOpFusion = FPOpFusion::Fast;
  std::unique_ptr<TargetMachine> machine(
      llvmTarget->createTargetMachine(triple, target.cpu, target.features, options, Reloc::PIC_,
                                      std::nullopt, CodeGenOptLevel::Aggressive));
  if (!machine)
    return createStringError(inconvertibleErrorCode(), "cannot create a target machine for %s",
                             target.triple.c_str());
  return machine;
}

} // namespace mhac
