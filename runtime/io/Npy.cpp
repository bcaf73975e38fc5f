//===- Npy.cpp - NumPy .npy tensors: a strict reader and an atomic writer -===//
//
// Part of mhac. The format: the magic `\x93NUMPY`, a major and a minor version byte, the header
// length (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), a header that is the
// text of a Python dict such as `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`
// padded with spaces and ended by a newline, then the raw elements.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"

#include "runtime/io/File.h"

#include <cstring>
#include <limits>

namespace mhac::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

uint32_t loadLE32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

/// Parses the header dict: a Python literal of which only the subset NumPy writes is accepted.
class HeaderParser {
public:
  /// `offset` is where `text` starts in the file, for the byte positions of syntax errors.
  HeaderParser(std::string_view text, size_t offset, std::string_view name)
      : text_(text), offset_(offset), name_(name) {}

  /// Fills `dtype` and `shape`; returns false with `error` set on anything else.
  bool parse(DType &dtype, std::vector<int64_t> &shape, std::string &error) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'", error);
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string_view key;
      if (!parseString(key, error))
        return false;
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key " + quoteName(key), error);
      skipSpace();
      if (key == "descr") {
        if (sawDescr)
          return reject("duplicate key 'descr' in the .npy header", error);
        sawDescr = true;
        if (peek() != '\'' && peek() != '"')
          return reject("'descr' is not a string (structured dtypes are not supported)", error);
        std::string_view descr;
        if (!parseString(descr, error))
          return false;
        if (descr == "<f4")
          dtype = DType::F32;
        else if (descr == "<i4")
          dtype = DType::I32;
        else
          return reject("unsupported dtype " + quoteName(descr) +
                            " (expected '<f4' for float32 or '<i4' for int32)",
                        error);
      } else if (key == "fortran_order") {
        if (sawOrder)
          return reject("duplicate key 'fortran_order' in the .npy header", error);
        sawOrder = true;
        if (consumeWord("True"))
          return reject("arrays in Fortran order are not supported (save a C-order array)", error);
        if (!consumeWord("False"))
          return fail("'fortran_order' is not True or False", error);
      } else if (key == "shape") {
        if (sawShape)
          return reject("duplicate key 'shape' in the .npy header", error);
        sawShape = true;
        if (!parseShape(shape, error))
          return false;
      } else {
        return reject("unexpected key " + quoteName(key) + " in the .npy header", error);
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}'", error);
    }
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the header dict", error);
    if (!sawDescr)
      return reject("the .npy header has no 'descr'", error);
    if (!sawOrder)
      return reject("the .npy header has no 'fortran_order'", error);
    if (!sawShape)
      return reject("the .npy header has no 'shape'", error);
    return true;
  }

private:
  /// A syntax error, located.
  bool fail(const std::string &message, std::string &error) {
    error = std::string(name_) + ": invalid .npy header at byte " + std::to_string(offset_ + pos_) +
            ": " + message;
    return false;
  }
  /// A well-formed header that asks for something unsupported or inconsistent.
  bool reject(const std::string &message, std::string &error) {
    error = std::string(name_) + ": " + message;
    return false;
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  /// A quoted string without escapes (NumPy never writes any in the three keys).
  bool parseString(std::string_view &out, std::string &error) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return fail("expected a quoted string", error);
    size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\')
        return fail("escape sequences are not supported", error);
      if (text_[pos_] == '\n')
        return fail("unterminated string", error);
      ++pos_;
    }
    if (pos_ == text_.size())
      return fail("unterminated string", error);
    out = text_.substr(start, pos_ - start);
    ++pos_;
    return true;
  }

  /// A tuple of non-negative integers: `()`, `(3,)`, `(2, 3)`, `(2, 3,)`. `(3)` is an int in
  /// Python, not a tuple, and is rejected as NumPy rejects it.
  bool parseShape(std::vector<int64_t> &shape, std::string &error) {
    if (!consume('('))
      return fail("'shape' is not a tuple", error);
    shape.clear();
    bool trailingComma = false;
    while (true) {
      skipSpace();
      if (consume(')'))
        break;
      if (!shape.empty() && !trailingComma)
        return fail("expected ',' or ')' in 'shape'", error);
      if (shape.size() == kMaxRank)
        return reject("'shape' has more than " + std::to_string(kMaxRank) + " dimensions", error);
      int64_t dim;
      if (!parseDim(dim, error))
        return false;
      shape.push_back(dim);
      skipSpace();
      trailingComma = consume(',');
    }
    if (shape.size() == 1 && !trailingComma)
      return reject("'shape' is not a tuple (a 1-d shape is written '(n,)')", error);
    return true;
  }

  bool parseDim(int64_t &dim, std::string &error) {
    if (peek() == '-')
      return reject("negative dimension in 'shape'", error);
    if (peek() < '0' || peek() > '9')
      return fail("expected an integer in 'shape'", error);
    uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + uint64_t(text_[pos_] - '0');
      if (value > uint64_t(std::numeric_limits<int64_t>::max()))
        return reject("dimension in 'shape' is too large", error);
      ++pos_;
    }
    consume('L'); // Python 2's long literals, as old NumPy wrote them
    if (peek() == '.' || peek() == 'e' || peek() == 'E' || peek() == 'j')
      return reject("non-integer dimension in 'shape'", error);
    dim = static_cast<int64_t>(value);
    return true;
  }

  std::string_view text_;
  size_t offset_;
  std::string_view name_;
  size_t pos_ = 0;
};

} // namespace

Expected<HostTensor> readNpy(const uint8_t *data, size_t size, std::string_view name) {
  std::string file(name);
  if (size < kMagicSize || std::memcmp(data, kMagic, kMagicSize) != 0)
    return Error{file + ": not a .npy file (bad magic)"};
  if (size < kMagicSize + 2)
    return Error{file + ": .npy file is truncated in its preamble"};
  unsigned major = data[6], minor = data[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return Error{file + ": unsupported .npy format version " + std::to_string(major) + "." +
                 std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)"};
  size_t lengthSize = major == 1 ? 2 : 4;
  if (size < 8 + lengthSize)
    return Error{file + ": .npy file is truncated in its preamble"};
  uint32_t headerSize =
      major == 1 ? uint32_t(data[8]) | uint32_t(data[9]) << 8 : loadLE32(data + 8);
  size_t headerStart = 8 + lengthSize;
  if (headerSize > kMaxNpyHeaderSize)
    return Error{file + ": .npy header length " + std::to_string(headerSize) +
                 " exceeds the limit of " + std::to_string(kMaxNpyHeaderSize) + " bytes"};
  if (headerSize > size - headerStart)
    return Error{file + ": .npy header is truncated (" + std::to_string(headerSize) +
                 " bytes declared, " + std::to_string(size - headerStart) + " present)"};

  std::string_view header(reinterpret_cast<const char *>(data) + headerStart, headerSize);
  HostTensor tensor;
  std::string error;
  if (!HeaderParser(header, headerStart, name).parse(tensor.dtype, tensor.shape, error))
    return Error{error};

  size_t dataStart = headerStart + headerSize;
  size_t dataSize = size - dataStart;
  std::optional<uint64_t> count = checkedElementCount(tensor.shape);
  std::optional<uint64_t> bytes = checkedByteSize(tensor.shape, tensor.dtype);
  if (!count || !bytes)
    return Error{file + ": shape " + formatShape(tensor.shape) + " has too many elements"};
  if (*bytes != dataSize)
    return Error{file + ": data has " + std::to_string(dataSize) + " bytes, expected " +
                 std::to_string(*bytes) + " for shape " + formatShape(tensor.shape) + " of " +
                 dtypeName(tensor.dtype)};

  // The element count is now bounded by the input's size, so the allocation is too.
  const uint8_t *elements = data + dataStart;
  if (tensor.dtype == DType::F32) {
    tensor.f32.resize(*count);
    loadLittleEndian(elements, tensor.f32.data(), tensor.f32.size());
  } else {
    tensor.i32.resize(*count);
    loadLittleEndian(elements, tensor.i32.data(), tensor.i32.size());
  }
  return tensor;
}

Expected<HostTensor> readNpyFile(const std::string &path) {
  Expected<std::vector<uint8_t>> bytes = readFileBytes(path);
  if (!bytes)
    return Error{bytes.error()};
  return readNpy(bytes->data(), bytes->size(), path);
}

Expected<std::vector<uint8_t>> encodeNpy(const HostTensor &tensor, std::string_view name) {
  std::string file(name);
  if (tensor.dtype == DType::BF16)
    return Error{file + ": cannot write a BF16 tensor to .npy (convert it to F32)"};
  if (!tensor.isConsistent())
    return Error{file + ": cannot write a tensor of shape " + formatShape(tensor.shape) +
                 " holding " + std::to_string(tensor.size()) + " elements"};

  std::string header = tensor.dtype == DType::F32 ? "{'descr': '<f4', " : "{'descr': '<i4', ";
  header += "'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    header += (i == 0 ? "" : ", ") + std::to_string(tensor.shape[i]);
  header += tensor.shape.size() == 1 ? ",), }" : "), }";

  // Pad with spaces and end with a newline so that the data starts on a 64-byte boundary;
  // version 2.0 only when the padded header outgrows version 1.0's 16-bit length.
  auto padding = [&](size_t preamble) { return (64 - (preamble + header.size() + 1) % 64) % 64; };
  size_t preamble = header.size() + 1 + padding(10) <= 65535 ? 10 : 12;
  header.append(padding(preamble), ' ');
  header += '\n';

  std::vector<uint8_t> out;
  out.insert(out.end(), kMagic, kMagic + kMagicSize);
  out.push_back(preamble == 10 ? 1 : 2);
  out.push_back(0);
  auto headerSize = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < preamble - 8; ++i)
    out.push_back(static_cast<uint8_t>(headerSize >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  size_t dataStart = out.size();
  out.resize(dataStart + tensor.size() * 4);
  if (tensor.dtype == DType::F32)
    storeLittleEndian(tensor.f32.data(), out.data() + dataStart, tensor.f32.size());
  else
    storeLittleEndian(tensor.i32.data(), out.data() + dataStart, tensor.i32.size());
  return out;
}

Status writeNpyFile(const std::string &path, const HostTensor &tensor) {
  Expected<std::vector<uint8_t>> bytes = encodeNpy(tensor, path);
  if (!bytes)
    return Error{bytes.error()};
  return writeFileAtomically(path, bytes->data(), bytes->size());
}

} // namespace mhac::io
