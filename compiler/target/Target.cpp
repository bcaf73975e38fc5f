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
#include "llvm/TargetParser/X86TargetParser.h"

#include <cstring>
#include <optional>

#include <unistd.h>

using namespace llvm;

namespace mhac {

CpuTarget cpuTarget(StringRef name, StringRef cpu, const StringMap<bool> &cpuFeatures) {
  CpuTarget target;
  target.name = name.str();
  target.triple = sys::getDefaultTargetTriple();
  target.cpu = cpu.str();
  SubtargetFeatures features;
  for (const auto &feature : cpuFeatures)
    features.AddFeature(feature.getKey(), feature.getValue());
  bool avx512 = cpuFeatures.lookup("avx512f");
  target.setVectorBits(avx512 ? 512 : 256);
  if (avx512)
    features.AddFeature("prefer-256-bit", false);
  if (avx512 && cpu.starts_with("znver"))
    target.tuneCpu = "x86-64-v4";
  target.avx512bf16 = cpuFeatures.lookup("avx512bf16");
  target.bf16DotOutrunsFma = target.avx512bf16 && cpu.starts_with("znver");
  target.amxBf16 = cpuFeatures.lookup("amx-bf16") && cpuFeatures.lookup("amx-tile");
  target.features = features.getString();
  return target;
}

/// The features of the x86-64 CPU LLVM calls `cpu`, with the ones they imply (x86-64-v4 lists
/// avx512vl, which implies avx512f); none when LLVM knows no such 64-bit CPU.
static std::optional<StringMap<bool>> featuresOfCpu(StringRef cpu) {
  if (X86::parseArchX86(cpu, /*Only64Bit=*/true) == X86::CK_None)
    return std::nullopt;
  SmallVector<StringRef> listed;
  X86::getFeaturesForCPU(cpu, listed);
  StringMap<bool> features;
  for (StringRef feature : listed) {
    features[feature] = true;
    X86::updateImpliedFeatures(feature, /*Enabled=*/true, features);
  }
  return features;
}

/// The data cache sizes the OS reports for this machine, where it reports them.
static void readHostCaches(CpuTarget &target) {
  if (long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE); l1 > 0)
    target.l1Bytes = l1;
  if (long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0)
    target.l2Bytes = l2;
}

/// The chips mhac generates CUDA code for, with the shared memory a block may opt in to and
/// the multiprocessors of each architecture's best-known part (A100, RTX A6000, AGX Orin,
/// L40S, H100/H200).
struct CudaChip {
  const char *name;
  int64_t sharedBytes;
  int64_t multiprocessors;
};
constexpr CudaChip kCudaChips[] = {
    {"sm_80", 163 * 1024, 108}, {"sm_86", 99 * 1024, 84},   {"sm_87", 163 * 1024, 16},
    {"sm_89", 99 * 1024, 142},  {"sm_90", 227 * 1024, 132},
};

/// `cuda:CHIP`: the GPU, launched from plain x86-64 host code.
static Expected<CpuTarget> resolveCudaTarget(const std::string &name) {
  StringRef chip = StringRef(name).drop_front(strlen("cuda:"));
  for (const CudaChip &known : kCudaChips) {
    if (chip != known.name)
      continue;
    CpuTarget target = baselineCpuTarget();
    target.name = name;
    CudaDevice device;
    device.chip = known.name;
    device.sharedBytes = known.sharedBytes;
    device.multiprocessors = known.multiprocessors;
    target.cuda = device;
    return target;
  }
  std::string chips;
  for (const CudaChip &known : kCudaChips)
    chips += std::string(chips.empty() ? "" : ", ") + "cuda:" + known.name;
  return createStringError(inconvertibleErrorCode(),
                           "unknown CUDA target '%s' (expected one of %s: tensor-core GPUs from "
                           "Ampere on)",
                           name.c_str(), chips.c_str());
}

Expected<CpuTarget> resolveCpuTarget(const std::string &name) {
  if (name == "host") {
    CpuTarget host = cpuTarget("host", sys::getHostCPUName(), sys::getHostCPUFeatures());
    readHostCaches(host);
    return host;
  }
  if (name.rfind("cuda:", 0) == 0)
    return resolveCudaTarget(name);
  std::optional<StringMap<bool>> features = featuresOfCpu(name);
  if (!features)
    return createStringError(inconvertibleErrorCode(),
                             "unknown target '%s' (expected host, x86-64-v3, x86-64-v4 or an "
                             "x86-64 CPU as LLVM names it, such as znver4 or sapphirerapids)",
                             name.c_str());
  if (!features->lookup("avx2") || !features->lookup("fma"))
    return createStringError(inconvertibleErrorCode(),
                             "target '%s' has no AVX2 and FMA: mhac's CPU code needs at least "
                             "x86-64-v3",
                             name.c_str());
  return cpuTarget(name, name, *features);
}

Error emulateAmx(CpuTarget &target) {
  if (!target.avx512bf16)
    return createStringError(inconvertibleErrorCode(),
                             "--emulate-amx needs a target with AVX512-BF16; %s has none",
                             target.name.c_str());
  target.amxBf16 = target.emulateAmx = true;
  return Error::success();
}

CpuTarget baselineCpuTarget() {
  CpuTarget target;
  target.name = "x86-64";
  target.triple = sys::getDefaultTargetTriple();
  target.cpu = "x86-64";
  return target;
}

Expected<std::unique_ptr<TargetMachine>> createTargetMachine(const CpuTarget &target) {
  // Once per process: layers compile on threads of their own, and LLVM's target registry is
  // filled without a lock (a lookup beside a registration in progress found no target).
  static const bool registered = [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)registered;
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
