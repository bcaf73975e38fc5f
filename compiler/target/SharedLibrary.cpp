//===- SharedLibrary.cpp - linking objects with the system linker ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/SharedLibrary.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace llvm;

namespace mhac {

std::string runtimeLibraryDir() {
  std::string self = sys::fs::getMainExecutable(nullptr, nullptr);
  SmallString<256> dir(sys::path::parent_path(sys::path::parent_path(self)));
  sys::path::append(dir, "lib");
  return std::string(dir);
}

Error linkSharedLibrary(const std::string &objectPath, const std::string &libraryPath,
                        const std::string &runtimeDir) {
  const char *fromEnvironment = std::getenv("CC");
  std::string driverName = fromEnvironment && *fromEnvironment ? fromEnvironment : "cc";
  ErrorOr<std::string> driver = sys::findProgramByName(driverName);
  if (!driver)
    return createStringError(inconvertibleErrorCode(),
                             "cannot find the C compiler driver '%s' to link a shared library",
                             driverName.c_str());
  std::string error;
  SmallVector<std::string> args = {*driver, "-shared", "-o", libraryPath, objectPath, "-lm"};
  SmallString<256> runtime(runtimeDir);
  sys::path::append(runtime, "libmhac_runtime.so");
  if (!runtimeDir.empty() && sys::fs::exists(runtime))
    args.insert(args.end(), {"-L" + runtimeDir, "-lmhac_runtime", "-Wl,-rpath," + runtimeDir});
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  int status = sys::ExecuteAndWait(*driver, argRefs, std::nullopt, {}, 0, 0, &error);
  if (status != 0)
    return createStringError(inconvertibleErrorCode(), "linking '%s' failed%s%s",
                             libraryPath.c_str(), error.empty() ? "" : ": ", error.c_str());
  return Error::success();
}

} // namespace mhac
