//===- NpyTest.cpp - the .npy reader on valid and hostile files ------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"

#include "tests/unit/io/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mhac::io;
using namespace mhac::io::testing;

namespace {

const char *const kName = "x.npy";

Expected<HostTensor> read(const Bytes &bytes) { return readNpy(bytes.data(), bytes.size(), kName); }

/// A valid float32 [2, 3] file with its header written `dict`, for the malformed variants.
Bytes withDict(const std::string &dict, size_t dataBytes = 24) {
  return npyFile(dict, Bytes(dataBytes, 0));
}

} // namespace

//===----------------------------------------------------------------------===//
// Valid files
//===----------------------------------------------------------------------===//

TEST(NpyReadTest, ReadsFloat32Version1) {
  std::vector<float> values = {1.5f, -2.0f, 0.0f, 3.25f, -0.0f, 1e-30f};
  Expected<HostTensor> tensor = read(npyFile(npyDict("<f4", "(2, 3)"), f32Bytes(values)));
  ASSERT_TRUE(tensor) << tensor.error();
  EXPECT_EQ(tensor->dtype, DType::F32);
  EXPECT_EQ(tensor->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor->f32, values);
  EXPECT_TRUE(std::signbit(tensor->f32[4]));
}

TEST(NpyReadTest, ReadsInt32) {
  std::vector<int32_t> values = {7, -1, 2147483647, -2147483647 - 1};
  Expected<HostTensor> tensor = read(npyFile(npyDict("<i4", "(4,)"), i32Bytes(values)));
  ASSERT_TRUE(tensor) << tensor.error();
  EXPECT_EQ(tensor->dtype, DType::I32);
  EXPECT_EQ(tensor->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(tensor->i32, values);
}

TEST(NpyReadTest, ReadsVersion2And3Headers) {
  for (uint8_t major : {uint8_t(2), uint8_t(3)}) {
    Expected<HostTensor> tensor =
        read(npyFile(npyDict("<f4", "(1, 2)"), f32Bytes({4.0f, 5.0f}), major));
    ASSERT_TRUE(tensor) << "version " << int(major) << ": " << tensor.error();
    EXPECT_EQ(tensor->shape, (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(tensor->f32, (std::vector<float>{4.0f, 5.0f}));
  }
}

TEST(NpyReadTest, ReadsScalar) {
  Expected<HostTensor> tensor = read(npyFile(npyDict("<f4", "()"), f32Bytes({42.0f})));
  ASSERT_TRUE(tensor) << tensor.error();
  EXPECT_TRUE(tensor->shape.empty());
  EXPECT_EQ(tensor->f32, std::vector<float>{42.0f});
}

TEST(NpyReadTest, ReadsEmptyArrays) {
  Expected<HostTensor> empty = read(npyFile(npyDict("<f4", "(0,)"), {}));
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_EQ(empty->shape, std::vector<int64_t>{0});
  EXPECT_TRUE(empty->f32.empty());
  // A zero dimension makes the product zero even after dimensions whose product overflows.
  Expected<HostTensor> wide =
      read(npyFile(npyDict("<i4", "(4611686018427387904, 4611686018427387904, 0)"), {}));
  ASSERT_TRUE(wide) << wide.error();
  EXPECT_EQ(wide->size(), 0u);
}

TEST(NpyReadTest, AcceptsHeaderVariationsNumpyProduces) {
  Bytes data = f32Bytes({1, 2, 3, 4, 5, 6});
  // Older NumPy: 16-byte alignment, Python 2 long literals, keys in another order, double quotes.
  for (const std::string &dict :
       {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }"),
        std::string("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}"),
        std::string("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3,)}")}) {
    for (size_t align : {size_t(0), size_t(16), size_t(64)}) {
      Expected<HostTensor> tensor = read(npyFile(dict, data, 1, align));
      ASSERT_TRUE(tensor) << dict << " aligned to " << align << ": " << tensor.error();
      EXPECT_EQ(tensor->shape, (std::vector<int64_t>{2, 3}));
    }
  }
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

TEST(NpyReadTest, RejectsBadMagic) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), Bytes(24, 0));
  bytes[1] = 'n';
  EXPECT_TRUE(failsWith(read(bytes), kName, "not a .npy file (bad magic)"));
  EXPECT_TRUE(failsWith(read(Bytes{}), kName, "bad magic"));
  EXPECT_TRUE(failsWith(read(Bytes{0x93, 'N', 'U'}), kName, "bad magic"));
}

TEST(NpyReadTest, RejectsTruncatedPreamble) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), Bytes(24, 0));
  for (size_t size : {7, 8, 9}) {
    Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_TRUE(failsWith(read(prefix), kName, "truncated in its preamble")) << size;
  }
  Bytes v2 = npyFile(npyDict("<f4", "(2, 3)"), Bytes(24, 0), 2);
  EXPECT_TRUE(failsWith(read(Bytes(v2.begin(), v2.begin() + 11)), kName, "preamble"));
}

TEST(NpyReadTest, RejectsUnknownVersions) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), Bytes(24, 0));
  bytes[6] = 4;
  EXPECT_TRUE(failsWith(read(bytes), kName, "unsupported .npy format version 4.0"));
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_TRUE(failsWith(read(bytes), kName, "version 1.1"));
}

TEST(NpyReadTest, RejectsTruncatedHeader) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), {});
  bytes.resize(bytes.size() - 5);
  EXPECT_TRUE(failsWith(read(bytes), kName, "header is truncated (118 bytes declared, 113"));
}

TEST(NpyReadTest, RejectsHugeHeaderLength) {
  // Version 2 lengths are 32 bits: 4 GiB must be refused before anything is read or allocated.
  Bytes bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff, '{', '}'};
  EXPECT_TRUE(failsWith(read(bytes), kName, "header length 4294967295 exceeds the limit"));
  Bytes justOver = {0x93, 'N', 'U', 'M', 'P', 'Y', 3, 0};
  appendLE(justOver, kMaxNpyHeaderSize + 1, 4);
  EXPECT_TRUE(failsWith(read(justOver), kName, "exceeds the limit of 1048576 bytes"));
}

TEST(NpyReadTest, RejectsTruncatedData) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), f32Bytes({1, 2, 3, 4, 5, 6}));
  bytes.pop_back();
  EXPECT_TRUE(
      failsWith(read(bytes), kName, "data has 23 bytes, expected 24 for shape [2, 3] of F32"));
}

TEST(NpyReadTest, RejectsTrailingData) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), Bytes(28, 0));
  EXPECT_TRUE(failsWith(read(bytes), kName, "data has 28 bytes, expected 24"));
}

TEST(NpyReadTest, RejectsShapeThatDoesNotMatchTheData) {
  EXPECT_TRUE(failsWith(read(npyFile(npyDict("<f4", "(3, 3)"), Bytes(24, 0))), kName,
                        "expected 36 for shape [3, 3]"));
  EXPECT_TRUE(failsWith(read(npyFile(npyDict("<i4", "()"), Bytes(0, 0))), kName,
                        "data has 0 bytes, expected 4 for shape [] of I32"));
}

TEST(NpyReadTest, RejectsFortranOrder) {
  EXPECT_TRUE(failsWith(read(withDict(npyDict("<f4", "(2, 3)", "True"))), kName,
                        "Fortran order are not supported"));
  EXPECT_TRUE(failsWith(read(withDict(npyDict("<f4", "(2, 3)", "0"))), kName,
                        "'fortran_order' is not True or False"));
}

TEST(NpyReadTest, RejectsOtherDtypes) {
  for (const char *descr : {"<f8", ">f4", "<f2", "|u1", "<i8", ">i4", "f4", "<c8", "<U4"}) {
    EXPECT_TRUE(failsWith(read(withDict(npyDict(descr, "(2, 3)"))), kName,
                          std::string("unsupported dtype '") + descr + "'"))
        << descr;
  }
  EXPECT_TRUE(failsWith(
      read(withDict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }")), kName,
      "structured dtypes are not supported"));
}

TEST(NpyReadTest, RejectsShapeProductOverflow) {
  EXPECT_TRUE(failsWith(read(withDict(npyDict("<f4", "(1099511627776, 1099511627776)"))), kName,
                        "shape [1099511627776, 1099511627776] has too many elements"));
  // Elements fit in int64 but bytes do not.
  EXPECT_TRUE(failsWith(read(withDict(npyDict("<f4", "(4611686018427387904,)"))), kName,
                        "too many elements"));
  EXPECT_TRUE(failsWith(read(withDict(npyDict("<f4", "(9223372036854775808,)"))), kName,
                        "dimension in 'shape' is too large"));
  EXPECT_TRUE(
      failsWith(read(withDict(npyDict("<f4", "(99999999999999999999999,)"))), kName, "too large"));
}

TEST(NpyReadTest, RejectsMalformedShapes) {
  struct Case {
    const char *shape;
    const char *message;
  } cases[] = {
      {"(-1, 3)", "negative dimension"},    {"(2.0, 3)", "non-integer dimension"},
      {"(2e1,)", "non-integer dimension"},  {"(3)", "a 1-d shape is written '(n,)'"},
      {"[2, 3]", "'shape' is not a tuple"}, {"(2 3)", "expected ',' or ')'"},
      {"(,)", "expected an integer"},       {"(2, 3", "expected an integer"},
      {"(x,)", "expected an integer"},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(failsWith(read(withDict(npyDict("<f4", c.shape))), kName, c.message)) << c.shape;

  std::string tooDeep = "(";
  for (int i = 0; i < 65; ++i)
    tooDeep += "1, ";
  tooDeep += ")";
  EXPECT_TRUE(
      failsWith(read(withDict(npyDict("<f4", tooDeep), 4)), kName, "more than 64 dimensions"));
}

TEST(NpyReadTest, RejectsMalformedDicts) {
  struct Case {
    std::string dict;
    const char *message;
  } cases[] = {
      {"", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "header has no 'shape'"},
      {"{'descr': '<f4', 'shape': (2, 3)}", "header has no 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2, 3)}", "header has no 'descr'"},
      {npyDict("<f4", "(2, 3)") + " extra", "unexpected text after the header dict"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}", "expected ',' or '}'"},
      {"{'descr' '<f4'}", "expected ':'"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr': '<\\x66\\x34'}", "escape sequences are not supported"},
      {"{descr: '<f4'}", "expected a quoted string"},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(failsWith(read(withDict(c.dict)), kName, c.message)) << c.dict;
}

TEST(NpyReadTest, EveryPrefixOfAValidFileIsAnError) {
  Bytes bytes = npyFile(npyDict("<f4", "(2, 3)"), f32Bytes({1, 2, 3, 4, 5, 6}));
  for (size_t size = 0; size < bytes.size(); ++size) {
    Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
    Expected<HostTensor> tensor = read(prefix);
    EXPECT_FALSE(tensor) << "a prefix of " << size << " bytes was accepted";
    if (!tensor)
      EXPECT_TRUE(failsWith(tensor, kName, ""));
  }
}

TEST(NpyReadTest, ReadsFiles) {
  TempDir dir;
  std::string path = dir.file("in.npy");
  writeBytes(path, npyFile(npyDict("<f4", "(2,)"), f32Bytes({1.0f, 2.0f})));
  Expected<HostTensor> tensor = readNpyFile(path);
  ASSERT_TRUE(tensor) << tensor.error();
  EXPECT_EQ(tensor->f32, (std::vector<float>{1.0f, 2.0f}));

  EXPECT_TRUE(failsWith(readNpyFile(dir.file("absent.npy")), dir.file("absent.npy"),
                        "cannot open: No such file or directory"));
  EXPECT_TRUE(failsWith(readNpyFile(dir.path()), dir.path(), "is a directory"));
  EXPECT_TRUE(failsWith(readNpyFile("/dev/null"), "/dev/null", "not a regular file"));
}
