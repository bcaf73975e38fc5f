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
/// C compiler driver (`cc`, or $CC), against libm and mhac's shared runtime when it is in
/// `runtimeDir` (found there again at load time through the library's run path), so that a
/// plain dlopen (Python's ctypes.CDLL) resolves the runtime's functions; every module of a
/// process then shares the one runtime and its thread pool. With no runtime there, the
/// library expects its loader to provide the runtime (as mha-run does).
llvm::Error linkSharedLibrary(const std::string &objectPath, const std::string &libraryPath,
                              const std::string &runtimeDir);

/// Where mhac's shared runtime is beside the running compiler: PREFIX/lib for PREFIX/bin/mhac,
/// in the build tree and once installed alike.
std::string runtimeLibraryDir();

} // namespace mhac

#endif // MHAC_COMPILER_TARGET_SHAREDLIBRARY_H
