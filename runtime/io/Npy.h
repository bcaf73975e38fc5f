//===- Npy.h - NumPy .npy tensors: a strict reader and an atomic writer -*- C++ -*-===//
//
// Part of mhac. mha-run's activations are `.npy` files (docs/running.md): little-endian float32
// (`<f4`) inputs and outputs in C order, and the int32 (`<i4`) `--kv-lens` array. The reader
// accepts exactly that, from header versions 1.0, 2.0 and 3.0, and treats the file as hostile:
// every length is checked against the bytes actually present before it is used.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_IO_NPY_H
#define MHAC_RUNTIME_IO_NPY_H

#include "runtime/io/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mhac::io {

/// Largest accepted header (the Python dict after the preamble). NumPy writes under 200 bytes;
/// the cap keeps a forged 4 GiB length from being believed.
inline constexpr uint32_t kMaxNpyHeaderSize = 1u << 20;

/// Parses a `.npy` file held in memory; `name` (the file's path, as the user gave it) starts
/// every error message. Accepts descr `<f4` and `<i4`, `fortran_order: False`, shapes from `()`
/// (a scalar) up, and exactly as many data bytes as the shape needs.
Expected<HostTensor> readNpy(const uint8_t *data, size_t size, std::string_view name);

/// Reads the `.npy` file at `path`.
Expected<HostTensor> readNpyFile(const std::string &path);

/// Serializes an F32 or I32 tensor the way `numpy.save` does: format 1.0 (2.0 should the header
/// outgrow 64 KiB), the header padded with spaces to a 64-byte boundary. Fails for BF16 (NumPy
/// has no such type) and for a tensor whose storage does not match its shape.
Expected<std::vector<uint8_t>> encodeNpy(const HostTensor &tensor, std::string_view name);

/// Writes `tensor` to `path` atomically (see writeFileAtomically): on failure nothing is left at
/// `path` that was not there before.
Status writeNpyFile(const std::string &path, const HostTensor &tensor);

} // namespace mhac::io

#endif // MHAC_RUNTIME_IO_NPY_H
