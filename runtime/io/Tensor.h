//===- Tensor.h - host tensors and the errors of the file readers -*- C++ -*-===//
//
// Part of mhac. The tensor files of mha-run (`.npy` activations, `.safetensors` weights) are
// read into HostTensor. Errors travel as Expected<T> holding one line of text: this library links
// nothing (no LLVM, so no llvm::Expected) and must not depend on exceptions being enabled.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_IO_TENSOR_H
#define MHAC_RUNTIME_IO_TENSOR_H

#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mhac::io {

/// A failure: one line, lower case, no trailing period, starting with the file's name.
struct Error {
  std::string message;
};

/// Either a value or an Error. Converts implicitly from both, so a function returns
/// `Error{...}` or its value alike; test it with `if (!result)` before dereferencing.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Error error) : error_(std::move(error.message)) {}

  explicit operator bool() const { return value_.has_value(); }
  T &operator*() {
    assert(value_ && "dereferencing an error");
    return *value_;
  }
  const T &operator*() const {
    assert(value_ && "dereferencing an error");
    return *value_;
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }

  /// The message of a failure; empty on success.
  const std::string &error() const { return error_; }

private:
  std::optional<T> value_;
  std::string error_;
};

/// Success or an Error, for operations without a value.
class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}

  /// True on success.
  explicit operator bool() const { return !failed_; }
  const std::string &error() const { return error_; }

private:
  Status() = default;
  std::string error_;
  bool failed_ = false;
};

/// Element types of the tensor files. mha-run's files need f32 tensors, bf16 weights for bf16
/// layers and the int32 `--kv-lens` array.
enum class DType : uint8_t { F32, BF16, I32 };

/// Bytes per element.
inline constexpr size_t dtypeSize(DType dtype) { return dtype == DType::BF16 ? 2 : 4; }

/// The safetensors spelling (`F32`, `BF16`, `I32`), also used in messages.
inline constexpr const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::BF16:
    return "BF16";
  case DType::I32:
    return "I32";
  }
  return "?";
}

/// Largest rank accepted from a file; NumPy's own limit is 64.
inline constexpr size_t kMaxRank = 64;

/// The number of elements of `shape`, or nullopt when a dimension is negative or the product
/// does not fit in int64_t. A zero dimension makes the product 0 whatever the others are.
inline std::optional<uint64_t> checkedElementCount(const std::vector<int64_t> &shape) {
  uint64_t count = 1;
  bool overflow = false;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    if (dim == 0)
      return 0;
    uint64_t next;
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &next) ||
        next > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      overflow = true; // keep scanning: a later zero dimension still makes the tensor empty
    else
      count = next;
  }
  if (overflow)
    return std::nullopt;
  return count;
}

/// The number of bytes of a `shape` tensor of `dtype`, or nullopt on overflow (see above).
inline std::optional<uint64_t> checkedByteSize(const std::vector<int64_t> &shape, DType dtype) {
  std::optional<uint64_t> count = checkedElementCount(shape);
  uint64_t bytes;
  if (!count || __builtin_mul_overflow(*count, uint64_t(dtypeSize(dtype)), &bytes))
    return std::nullopt;
  return bytes;
}

/// `[768, 768]`; `[]` for a scalar.
inline std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

/// Quotes a name read from a file for a one-line message: printable ASCII as is, other bytes as
/// `\xNN`, long names shortened with "...", so that hostile names cannot break the line.
inline std::string quoteName(std::string_view name, size_t maxLength = 80) {
  static const char *hex = "0123456789abcdef";
  std::string quoted = "'";
  for (size_t i = 0; i < name.size() && i < maxLength; ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      quoted += static_cast<char>(c);
    } else {
      quoted += "\\x";
      quoted += hex[c >> 4];
      quoted += hex[c & 15];
    }
  }
  if (name.size() > maxLength)
    quoted += "...";
  return quoted + "'";
}

/// Widens a bfloat16 (its bits) to float; exact.
inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

/// Rounds a float to bfloat16, to nearest even; NaN stays a (quiet) NaN.
inline uint16_t floatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// Copies `count` little-endian elements of type T (2 or 4 bytes) from the bytes at `src`.
template <typename T> inline void loadLittleEndian(const uint8_t *src, T *dst, size_t count) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "2- or 4-byte elements only");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (count != 0)
    std::memcpy(dst, src, count * sizeof(T));
#else
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    for (size_t b = 0; b < sizeof(T); ++b)
      bits |= uint32_t(src[i * sizeof(T) + b]) << (8 * b);
    auto narrow = static_cast<std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>(bits);
    std::memcpy(&dst[i], &narrow, sizeof(T));
  }
#endif
}

/// Copies `count` elements of type T (2 or 4 bytes) to `dst` as little-endian bytes.
template <typename T> inline void storeLittleEndian(const T *src, uint8_t *dst, size_t count) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "2- or 4-byte elements only");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (count != 0)
    std::memcpy(dst, src, count * sizeof(T));
#else
  for (size_t i = 0; i < count; ++i) {
    std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t> bits;
    std::memcpy(&bits, &src[i], sizeof(T));
    for (size_t b = 0; b < sizeof(T); ++b)
      dst[i * sizeof(T) + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
#endif
}

/// A tensor in host memory, owning its elements in C (row-major) order.
///
/// The storage is typed (one vector per dtype, only the one of `dtype` used) rather than raw
/// bytes, so that callers hand `f32.data()` to generated code without aliasing casts.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> f32;     ///< the elements when dtype is F32
  std::vector<uint16_t> bf16; ///< the raw bfloat16 bits when dtype is BF16
  std::vector<int32_t> i32;   ///< the elements when dtype is I32

  static HostTensor makeF32(std::vector<int64_t> shape, std::vector<float> values) {
    HostTensor tensor;
    tensor.dtype = DType::F32;
    tensor.shape = std::move(shape);
    tensor.f32 = std::move(values);
    return tensor;
  }
  static HostTensor makeI32(std::vector<int64_t> shape, std::vector<int32_t> values) {
    HostTensor tensor;
    tensor.dtype = DType::I32;
    tensor.shape = std::move(shape);
    tensor.i32 = std::move(values);
    return tensor;
  }

  /// The number of elements held (the size of the storage of `dtype`).
  size_t size() const {
    switch (dtype) {
    case DType::F32:
      return f32.size();
    case DType::BF16:
      return bf16.size();
    case DType::I32:
      return i32.size();
    }
    return 0;
  }

  /// True when the shape is valid and its element count is the storage's size: the readers
  /// only return consistent tensors, hand-built ones are checked by the writer.
  bool isConsistent() const {
    std::optional<uint64_t> count = checkedElementCount(shape);
    return count && *count == size() && shape.size() <= kMaxRank;
  }

  /// The elements as float: F32 copied, BF16 widened (exact), I32 converted (exact up to 2^24).
  std::vector<float> toFloat() const {
    switch (dtype) {
    case DType::F32:
      return f32;
    case DType::BF16: {
      std::vector<float> values(bf16.size());
      for (size_t i = 0; i < bf16.size(); ++i)
        values[i] = bf16ToFloat(bf16[i]);
      return values;
    }
    case DType::I32:
      return std::vector<float>(i32.begin(), i32.end());
    }
    return {};
  }
};

} // namespace mhac::io

#endif // MHAC_RUNTIME_IO_TENSOR_H
