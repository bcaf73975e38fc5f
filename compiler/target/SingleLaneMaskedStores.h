//===- SingleLaneMaskedStores.h - masked stores of one lane, as stores -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_SINGLELANEMASKEDSTORES_H
#define MHAC_COMPILER_TARGET_SINGLELANEMASKEDSTORES_H

namespace llvm {
class Module;
} // namespace llvm

namespace mhac {

/// Rewrites every llvm.masked.store whose mask is a constant with exactly one lane on as a plain
/// store of that lane's element; returns how many it rewrote.
///
/// Why: LLVM 22's X86 back end turns such a store, when its value is a truncation (f32 rounded
/// to bf16 and stored as 16 bits, say), into a store of the *untruncated* element
/// (llvm/llvm-project#179489, fixed after 22): `vmovss` writes 4 bytes where the layer owns 2,
/// clobbering the next element, or 2 bytes past the end of the output. Halide's vectorized tails
/// write a row of bf16 whose width leaves one lane this way; with two threads the clobbered
/// element may belong to a row another thread has already written. The plain store is what
/// the fixed back end emits.
unsigned scalarizeSingleLaneMaskedStores(llvm::Module &module);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_SINGLELANEMASKEDSTORES_H
