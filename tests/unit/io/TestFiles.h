//===- TestFiles.h - tensor files built by hand for the reader tests -*- C++ -*-===//
//
// Part of mhac. The builders here write the formats from their definitions, independently of
// the library's own writer, so that a reader and writer sharing one mistake cannot agree on it.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TESTS_UNIT_IO_TESTFILES_H
#define MHAC_TESTS_UNIT_IO_TESTFILES_H

#include "runtime/io/Tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mhac::io::testing {

using Bytes = std::vector<uint8_t>;

inline void appendLE(Bytes &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

inline Bytes f32Bytes(const std::vector<float> &values) {
  Bytes out;
  for (float value : values) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    appendLE(out, bits, 4);
  }
  return out;
}

inline Bytes i32Bytes(const std::vector<int32_t> &values) {
  Bytes out;
  for (int32_t value : values)
    appendLE(out, static_cast<uint32_t>(value), 4);
  return out;
}

inline Bytes bf16Bytes(const std::vector<uint16_t> &values) {
  Bytes out;
  for (uint16_t value : values)
    appendLE(out, value, 2);
  return out;
}

/// A `.npy` file: magic, version `major`.0, the header length in the width of that version,
/// `dict` padded with spaces and a newline to `align` bytes (no padding when `align` is 0),
/// then `data`.
inline Bytes npyFile(const std::string &dict, const Bytes &data, uint8_t major = 1,
                     size_t align = 64) {
  size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  if (align != 0) {
    size_t total = preamble + header.size() + 1;
    header.append((align - total % align) % align, ' ');
    header += '\n';
  }
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  appendLE(out, header.size(), major == 1 ? 2 : 4);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// The header dict numpy.save writes for `descr` and the shape tuple text `shape`.
inline std::string npyDict(const std::string &descr, const std::string &shape,
                           const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

/// A `.safetensors` file: the 8-byte length of `header`, `header`, then `data`.
inline Bytes safetensorsFile(const std::string &header, const Bytes &data) {
  Bytes out;
  appendLE(out, header.size(), 8);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// One tensor for safetensorsOf.
struct Entry {
  std::string name; ///< written into JSON as is (escape it yourself if needed)
  std::string dtype;
  std::vector<int64_t> shape;
  Bytes data;
};

/// A valid `.safetensors` file holding `entries` back to back, in order.
inline Bytes safetensorsOf(const std::vector<Entry> &entries, const std::string &metadata = "") {
  std::string header = "{";
  if (!metadata.empty())
    header += "\"__metadata__\":" + metadata;
  Bytes data;
  for (const Entry &entry : entries) {
    if (header.size() > 1)
      header += ",";
    std::string shape;
    for (size_t i = 0; i < entry.shape.size(); ++i)
      shape += (i == 0 ? "" : ",") + std::to_string(entry.shape[i]);
    header += "\"" + entry.name + "\":{\"dtype\":\"" + entry.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + entry.data.size()) + "]}";
    data.insert(data.end(), entry.data.begin(), entry.data.end());
  }
  header += "}";
  return safetensorsFile(header, data);
}

/// A fresh directory under the system's temporary directory, removed with its contents.
class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mhac-io-XXXXXX").string();
    char *made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "cannot create a temporary directory";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

  /// The names in the directory, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator(path_, error))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

private:
  std::string path_;
};

inline void writeBytes(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline Bytes readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Checks that `result` failed with one line that starts with `file` and holds `needle`.
template <typename Result>
::testing::AssertionResult failsWith(const Result &result, const std::string &file,
                                     const std::string &needle) {
  if (result)
    return ::testing::AssertionFailure()
           << "succeeded; expected an error containing '" << needle << "'";
  const std::string &error = result.error();
  if (error.rfind(file + ": ", 0) != 0)
    return ::testing::AssertionFailure()
           << "error does not start with '" << file << ": ': " << error;
  if (error.find('\n') != std::string::npos)
    return ::testing::AssertionFailure() << "error spans several lines: " << error;
  if (error.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "error lacks '" << needle << "': " << error;
  return ::testing::AssertionSuccess();
}

} // namespace mhac::io::testing

#endif // MHAC_TESTS_UNIT_IO_TESTFILES_H
