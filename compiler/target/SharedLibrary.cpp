//===- SharedLibrary.cpp - linking objects with the system linker ---------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/target/SharedLibrary.h"

#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace llvm;

namespace mhac {

Error linkSharedLibrary(const std::string &objectPath, const std::string &libraryPath) {
  const char *fromEnvironment = std::getenv("CC");
  std::string driverName = fromEnvironment && *fromEnvironment ? fromEnvironment : "cc";
  ErrorOr<std::string> driver = sys::findProgramByName(driverName);
  if (!driver)
    return createStringError(inconvertibleErrorCode(),
                             "cannot find the C compiler driver '%s' to link a shared library",
                             driverName.c_str());
  std::string error;
  SmallVector<StringRef> args = {*driver, "-shared", "-o", libraryPath, objectPath, "-lm"};
  int status = sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0, &error);
  if (status != 0)
    return createStringError(inconvertibleErrorCode(), "linking '%s' failed%s%s",
                             libraryPath.c_str(), error.empty() ? "" : ": ", error.c_str());
  return Error::success();
}

} // namespace mhac
