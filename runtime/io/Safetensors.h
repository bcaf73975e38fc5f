//===- Safetensors.h - a strict .safetensors reader -------------*- C++ -*-===//
//
// Part of mhac. mha-run's weights are `.safetensors` files (docs/running.md): an 8-byte
// little-endian header length, a JSON header mapping tensor names to
// `{"dtype": ..., "shape": [...], "data_offsets": [begin, end]}` (plus an optional
// `__metadata__` object), then the data, with offsets relative to its start. The reader parses
// the header with its own small JSON parser and checks every range against the file before
// copying anything.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_IO_SAFETENSORS_H
#define MHAC_RUNTIME_IO_SAFETENSORS_H

#include "runtime/io/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace mhac::io {

/// Largest accepted JSON header, the limit of the reference implementation.
inline constexpr uint64_t kMaxSafetensorsHeaderSize = 100u << 20;

/// Tensors by name.
using TensorMap = std::map<std::string, HostTensor, std::less<>>;

struct SafetensorsOptions {
  /// Return BF16 tensors widened (exactly) to F32 instead of as raw bfloat16 bits.
  bool convertBF16ToF32 = false;
};

/// Parses a `.safetensors` file held in memory; `name` (the file's path as the user gave it)
/// starts every error message. Accepts dtypes F32, BF16 and I32. Rejects: a header length past
/// the end of the file or over kMaxSafetensorsHeaderSize, JSON that is invalid (or nested deeper
/// than 64, or of more than 2^20 values), duplicate tensor names, unknown or unsupported dtypes,
/// negative, non-integer or overflowing dimensions, data ranges that are reversed, run past the
/// end, overlap, or do not match dtype size times element count. Gaps between ranges are fine.
Expected<TensorMap> readSafetensors(const uint8_t *data, size_t size, std::string_view name,
                                    const SafetensorsOptions &options = {});

/// Reads the `.safetensors` file at `path`.
Expected<TensorMap> readSafetensorsFile(const std::string &path,
                                        const SafetensorsOptions &options = {});

} // namespace mhac::io

#endif // MHAC_RUNTIME_IO_SAFETENSORS_H
