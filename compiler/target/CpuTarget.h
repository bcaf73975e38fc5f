//===- CpuTarget.h - the facts of a CPU that code is generated for -*- C++ -*-===//
//
// Part of mhac. Plain data: what the machine is, never a choice of how to use it (those are
// the schedule's knobs). The schedule library reads it without linking LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_CPUTARGET_H
#define MHAC_COMPILER_TARGET_CPUTARGET_H

#include <cstdint>
#include <optional>
#include <string>

namespace mhac {

/// AMX's tiles: at most 16 rows of 64 bytes (16 f32 results a row, or 16 pairs of bf16), in 8
/// tile registers.
constexpr int64_t kAmxTileRows = 16;
constexpr int64_t kAmxTileRowBytes = 64;

/// f32 lanes of one vdpbf16ps on 512-bit registers: the columns of a projection of bf16 pairs
/// (`bf16_compute = dot`) come in blocks of whole vectors of them.
constexpr int64_t kBf16PairLanes = 16;
constexpr int64_t kAmxTileRegisters = 8;

/// A CUDA GPU, for `--target cuda:sm_NN`.
struct CudaDevice {
  std::string chip; ///< "sm_80", "sm_90": the cubin's architecture
  /// Shared memory one block may use, in bytes (with the kernel's opt-in past 48 KiB).
  int64_t sharedBytes = 48 * 1024;
  /// Registers one thread may use.
  int64_t registersPerThread = 255;
  /// Streaming multiprocessors of the architecture's data-center part (the A100's 108, the
  /// H100's and H200's 132): what a grid needs to fill the chip.
  int64_t multiprocessors = 108;
};

/// A CPU to generate code for, as `--target` names it; for a CUDA target, the host that
/// launches the kernels, and the GPU.
struct CpuTarget {
  std::string name;     ///< as given: "host", "x86-64-v3", "znver4", ...
  std::string triple;   ///< LLVM target triple
  std::string cpu;      ///< LLVM CPU name
  std::string features; ///< LLVM feature string
  /// The CPU whose scheduling model and tuning LLVM uses (its "tune-cpu"); empty: `cpu`'s.
  std::string tuneCpu;
  /// Width of the widest vector registers the code may use, in bits (256 or 512).
  unsigned vectorBits = 256;
  /// Architectural vector registers of that width (16 ymm on AVX2, 32 zmm on AVX-512).
  unsigned vectorRegisters = 16;
  /// Data cache sizes per core, in bytes: the host's as the OS reports them, nominal values
  /// (32 KiB, 1 MiB) for a named CPU.
  int64_t l1Bytes = 32 * 1024;
  int64_t l2Bytes = 1024 * 1024;
  /// AVX512-BF16's pair dot products (vdpbf16ps), and whether they outrun the f32 FMAs: twice
  /// their FLOPs on AMD's Zen 4 and Zen 5, half on Intel's cores (which have AMX for bf16).
  bool avx512bf16 = false;
  bool bf16DotOutrunsFma = false;
  /// AMX's bf16 tile products (tdpbf16ps on tiles of 16 rows of 64 bytes).
  bool amxBf16 = false;
  /// A testing aid (mhac --emulate-amx): AMX's tile kernels are chosen and tiled as on an AMX
  /// CPU, but each tile operation is written in vector operations, so that a machine without
  /// AMX runs (slowly) the same tiling, packing and indexing.
  bool emulateAmx = false;
  /// Set for `--target cuda:*`: the GPU that runs the layers' kernels.
  std::optional<CudaDevice> cuda;

  /// Sets the vector unit: `bits` wide (256: AVX2's 16 ymm; 512: AVX-512's 32 zmm).
  void setVectorBits(unsigned bits) {
    vectorBits = bits;
    vectorRegisters = bits == 512 ? 32 : 16;
  }
  /// f32 lanes of one vector register.
  int64_t lanes() const { return vectorBits / 32; }
  /// The kind of machine, which selects the default schedule: "avx2", "avx512" or "cuda".
  const char *vectorKind() const { return cuda ? "cuda" : vectorBits == 512 ? "avx512" : "avx2"; }
};

/// The CPU as a tuned schedule records it: the LLVM CPU, the vector unit and the caches, the
/// facts a schedule's speed depends on.
inline std::string describeCpu(const CpuTarget &target) {
  return target.cpu + ", " + std::to_string(target.vectorBits) + "-bit vectors, L1 " +
         std::to_string(target.l1Bytes / 1024) + " KiB, L2 " +
         std::to_string(target.l2Bytes / 1024) + " KiB";
}

/// The facts of x86-64-v3 (`vectorBits` 256) or x86-64-v4 (512) that schedules read, for tools
/// and tests that need no LLVM (resolveCpuTarget gives the whole target).
inline CpuTarget genericCpuTarget(unsigned vectorBits) {
  CpuTarget target;
  target.name = vectorBits == 512 ? "x86-64-v4" : "x86-64-v3";
  target.setVectorBits(vectorBits);
  return target;
}

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_CPUTARGET_H
