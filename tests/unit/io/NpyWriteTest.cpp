//===- NpyWriteTest.cpp - the atomic .npy writer ---------------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"

#include "tests/unit/io/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace mhac::io;
using namespace mhac::io::testing;

namespace {

bool exists(const std::string &path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

/// Bitwise equality, so that NaN payloads and the sign of zero count.
bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

TEST(NpyWriteTest, RoundTripsFloat32) {
  TempDir dir;
  std::string path = dir.file("y.npy");
  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f,          -0.0f, 1.0f,  -1e-45f,
                               3.4028235e38f, inf,   -inf,  std::numeric_limits<float>::quiet_NaN(),
                               0.1f,          -7.5f, 1e10f, 2.0f};
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{12}, {3, 4}, {2, 3, 2}, {1, 1, 12, 1}}) {
    Status written = writeNpyFile(path, HostTensor::makeF32(shape, values));
    ASSERT_TRUE(written) << written.error();
    Expected<HostTensor> back = readNpyFile(path);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->dtype, DType::F32);
    EXPECT_EQ(back->shape, shape);
    EXPECT_TRUE(sameBits(back->f32, values));
  }
  EXPECT_EQ(dir.list(), std::vector<std::string>{"y.npy"}) << "temporary files left behind";
}

TEST(NpyWriteTest, RoundTripsScalarsEmptyArraysAndInt32) {
  TempDir dir;
  std::string path = dir.file("s.npy");
  ASSERT_TRUE(writeNpyFile(path, HostTensor::makeF32({}, {2.5f})));
  Expected<HostTensor> scalar = readNpyFile(path);
  ASSERT_TRUE(scalar) << scalar.error();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->f32, std::vector<float>{2.5f});

  ASSERT_TRUE(writeNpyFile(path, HostTensor::makeF32({0, 5}, {})));
  Expected<HostTensor> empty = readNpyFile(path);
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_EQ(empty->shape, (std::vector<int64_t>{0, 5}));

  std::vector<int32_t> lens = {3, 0, -1, 2147483647};
  ASSERT_TRUE(writeNpyFile(path, HostTensor::makeI32({4}, lens)));
  Expected<HostTensor> ints = readNpyFile(path);
  ASSERT_TRUE(ints) << ints.error();
  EXPECT_EQ(ints->dtype, DType::I32);
  EXPECT_EQ(ints->i32, lens);
}

TEST(NpyWriteTest, WritesWhatNumpySaveWrites) {
  Expected<std::vector<uint8_t>> bytes =
      encodeNpy(HostTensor::makeF32({2, 3}, std::vector<float>(6, 1.0f)), "y.npy");
  ASSERT_TRUE(bytes) << bytes.error();
  // numpy.save(np.ones((2, 3), np.float32)): version 1.0, header padded to 128 bytes in all.
  Bytes expected = npyFile(npyDict("<f4", "(2, 3)"), f32Bytes(std::vector<float>(6, 1.0f)));
  EXPECT_EQ(*bytes, expected);
  EXPECT_EQ((*bytes)[8] | (*bytes)[9] << 8, 118);

  Expected<std::vector<uint8_t>> vector = encodeNpy(HostTensor::makeI32({3}, {1, 2, 3}), "v.npy");
  ASSERT_TRUE(vector) << vector.error();
  EXPECT_EQ(*vector, npyFile(npyDict("<i4", "(3,)"), i32Bytes({1, 2, 3})));
}

TEST(NpyWriteTest, RejectsTensorsItCannotWrite) {
  TempDir dir;
  std::string path = dir.file("y.npy");
  HostTensor bf16;
  bf16.dtype = DType::BF16;
  bf16.shape = {2};
  bf16.bf16 = {0x3f80, 0x4000};
  EXPECT_TRUE(failsWith(writeNpyFile(path, bf16), path, "cannot write a BF16 tensor"));
  EXPECT_TRUE(failsWith(writeNpyFile(path, HostTensor::makeF32({2, 3}, {1.0f})), path,
                        "cannot write a tensor of shape [2, 3] holding 1 elements"));
  EXPECT_TRUE(failsWith(writeNpyFile(path, HostTensor::makeF32({-1}, {})), path,
                        "cannot write a tensor of shape [-1]"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(NpyWriteTest, FailedWriteKeepsTheOldFile) {
  TempDir dir;
  std::string path = dir.file("y.npy");
  ASSERT_TRUE(writeNpyFile(path, HostTensor::makeF32({1}, {1.0f})));
  Bytes before = readBytes(path);
  EXPECT_FALSE(writeNpyFile(path, HostTensor::makeF32({2}, {1.0f})));
  EXPECT_EQ(readBytes(path), before);
  // A successful write replaces it whole.
  ASSERT_TRUE(writeNpyFile(path, HostTensor::makeF32({2}, {5.0f, 6.0f})));
  Expected<HostTensor> after = readNpyFile(path);
  ASSERT_TRUE(after) << after.error();
  EXPECT_EQ(after->f32, (std::vector<float>{5.0f, 6.0f}));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"y.npy"});
}

TEST(NpyWriteTest, MissingDirectoryLeavesNothing) {
  TempDir dir;
  std::string path = dir.file("missing/y.npy");
  EXPECT_TRUE(failsWith(writeNpyFile(path, HostTensor::makeF32({1}, {1.0f})), path,
                        "cannot create a temporary file: No such file or directory"));
  EXPECT_FALSE(exists(path));
  EXPECT_TRUE(dir.list().empty());
}

TEST(NpyWriteTest, ParentThatIsAFileLeavesNothing) {
  TempDir dir;
  writeBytes(dir.file("plain"), Bytes{1, 2, 3});
  std::string path = dir.file("plain/y.npy");
  EXPECT_TRUE(failsWith(writeNpyFile(path, HostTensor::makeF32({1}, {1.0f})), path,
                        "cannot create a temporary file: Not a directory"));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"plain"});
  EXPECT_EQ(readBytes(dir.file("plain")), (Bytes{1, 2, 3}));
}

TEST(NpyWriteTest, OutputThatIsADirectoryRemovesTheTemporaryFile) {
  // The temporary file is written and flushed, then the rename fails: it must be removed.
  TempDir dir;
  std::string path = dir.file("out");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((path + "/keep").c_str(), 0755), 0);
  EXPECT_TRUE(failsWith(writeNpyFile(path, HostTensor::makeF32({1}, {1.0f})), path,
                        "cannot replace the file"));
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out"});
  EXPECT_TRUE(exists(path + "/keep"));
}

TEST(NpyWriteTest, ReadOnlyDirectoryLeavesNothing) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root writes into read-only directories";
  TempDir dir;
  std::string sub = dir.file("ro");
  ASSERT_EQ(::mkdir(sub.c_str(), 0555), 0);
  std::string path = sub + "/y.npy";
  EXPECT_TRUE(
      failsWith(writeNpyFile(path, HostTensor::makeF32({1}, {1.0f})), path, "Permission denied"));
  EXPECT_FALSE(exists(path));
  ::chmod(sub.c_str(), 0755);
}

TEST(NpyWriteTest, RejectsPathsWithoutAFileName) {
  TempDir dir;
  std::string path = dir.path() + "/";
  EXPECT_TRUE(
      failsWith(writeNpyFile(path, HostTensor::makeF32({1}, {1.0f})), path, "not a file name"));
  EXPECT_TRUE(dir.list().empty());
}

TEST(NpyWriteTest, WritesRelativePaths) {
  TempDir dir;
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof(previous)), nullptr);
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  Status written = writeNpyFile("rel.npy", HostTensor::makeF32({1}, {3.0f}));
  Expected<HostTensor> back = readNpyFile("rel.npy");
  ASSERT_EQ(::chdir(previous), 0);
  ASSERT_TRUE(written) << written.error();
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->f32, std::vector<float>{3.0f});
  EXPECT_EQ(dir.list(), std::vector<std::string>{"rel.npy"});
}
