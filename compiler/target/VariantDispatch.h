//===- VariantDispatch.h - one object, code for several CPUs ----*- C++ -*-===//
//
// Part of mhac. `mhac compile --target x86-64-v3,x86-64-v4` compiles the layers once per target
// and links the variants into one module, as Halide's multi-target outputs and clang's
// target_clones do: each variant's symbols become internal (NAME.TAG), and every public function
// becomes a dispatcher that calls the variant chosen for the running CPU, chosen once per
// process and cached.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_VARIANTDISPATCH_H
#define MHAC_COMPILER_TARGET_VARIANTDISPATCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/GlobalValue.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace mhac {

/// One variant of a module's code.
struct CodeVariant {
  /// Suffix of the variant's symbols: the target's name as an identifier ("x86_64_v4").
  std::string tag;
  /// The CPU features its code may use, comma-separated as in mhac_layer.cpu_features: the
  /// runtime's mhac_missing_cpu_feature decides whether the running CPU can run it.
  std::string cpuFeatures;
};

/// A function a module offers other objects, by name and linkage (external, or weak).
struct PublicFunction {
  std::string name;
  llvm::GlobalValue::LinkageTypes linkage;
};

/// The identifier-safe tag of a target name: "x86-64-v4" -> "x86_64_v4".
std::string variantTag(llvm::StringRef targetName);

/// Renames every function `module` defines for other objects to NAME.`tag` (hidden, until
/// addVariantDispatch makes it internal), so that several variants of one module link
/// together. Returns the functions as they were. Fails on a public data symbol, which cannot
/// be dispatched.
llvm::Expected<std::vector<PublicFunction>> hideAsVariant(llvm::Module &module,
                                                          llvm::StringRef tag);

/// Adds to `module`, which holds the hidden `variants` (best first), a dispatcher for each of
/// `functions`, and makes the variants' functions internal. A dispatcher runs the first variant
/// whose features the running CPU has. When none fits, a function returning a status returns
/// MHAC_ERROR_UNSUPPORTED_CPU, and one returning a pointer (a layer's metadata, the module's layer
/// list) calls the last variant, so that the runtime's check of the metadata names the missing
/// feature.
llvm::Error addVariantDispatch(llvm::Module &module, llvm::ArrayRef<CodeVariant> variants,
                               llvm::ArrayRef<PublicFunction> functions);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_VARIANTDISPATCH_H
