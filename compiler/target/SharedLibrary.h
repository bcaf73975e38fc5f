//===- SharedLibrary.h - linking objects with the system linker -*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_TARGET_SHAREDLIBRARY_H
#define MHAC_COMPILER_TARGET_SHAREDLIBRARY_H

#include "llvm/Support/Error.h"

#include <string>

namespace mhac {

/// Links the object file `objectPath` into the shared library `libraryPath` with the system's
/// C compiler driver (`cc`, or $CC), against libm only.
llvm::Error linkSharedLibrary(const std::string &objectPath, const std::string &libraryPath);

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_SHAREDLIBRARY_H
