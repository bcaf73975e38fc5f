//===- NpyFuzzer.cpp - libFuzzer target for the .npy reader ---------------===//
//
// Part of mhac. Feeds arbitrary bytes to the .npy reader. Besides crashes and sanitizer reports,
// a finding is an error that is not one line naming the file, an accepted tensor whose storage
// does not match its shape, or one that does not survive a round trip through the writer.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mhac::io;

namespace {

[[noreturn]] void finding(const char *what, const std::string &detail) {
  std::fprintf(stderr, "npy-fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

bool sameElements(const HostTensor &a, const HostTensor &b) {
  if (a.dtype != b.dtype || a.shape != b.shape || a.size() != b.size())
    return false;
  if (a.dtype == DType::F32)
    return a.f32.empty() ||
           std::memcmp(a.f32.data(), b.f32.data(), a.f32.size() * sizeof(float)) == 0;
  return a.i32 == b.i32;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Expected<HostTensor> tensor = readNpy(data, size, "fuzz.npy");
  if (!tensor) {
    if (tensor.error().rfind("fuzz.npy: ", 0) != 0 ||
        tensor.error().find('\n') != std::string::npos)
      finding("malformed error message", tensor.error());
    return 0;
  }
  if (!tensor->isConsistent())
    finding("inconsistent tensor", formatShape(tensor->shape));

  Expected<std::vector<uint8_t>> bytes = encodeNpy(*tensor, "fuzz.npy");
  if (!bytes)
    finding("cannot write an accepted tensor", bytes.error());
  Expected<HostTensor> again = readNpy(bytes->data(), bytes->size(), "fuzz.npy");
  if (!again)
    finding("cannot read what the writer wrote", again.error());
  if (!sameElements(*tensor, *again))
    finding("round trip changed the tensor", formatShape(tensor->shape));
  return 0;
}
