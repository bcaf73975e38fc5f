//===- SafetensorsTest.cpp - the .safetensors reader on valid and hostile files -===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"

#include "tests/unit/io/TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mhac::io;
using namespace mhac::io::testing;

namespace {

const char *const kName = "w.safetensors";

Expected<TensorMap> read(const Bytes &bytes, bool convert = false) {
  SafetensorsOptions options;
  options.convertBF16ToF32 = convert;
  return readSafetensors(bytes.data(), bytes.size(), kName, options);
}

/// A file whose header is `header` and whose data is `dataBytes` zero bytes.
Expected<TensorMap> readHeader(const std::string &header, size_t dataBytes = 64) {
  return read(safetensorsFile(header, Bytes(dataBytes, 0)));
}

/// A header entry.
std::string entry(const std::string &name, const std::string &dtype, const std::string &shape,
                  const std::string &offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

} // namespace

//===----------------------------------------------------------------------===//
// Valid files
//===----------------------------------------------------------------------===//

TEST(SafetensorsReadTest, ReadsFloat32Tensors) {
  Bytes file = safetensorsOf(
      {{"a", "F32", {2, 2}, f32Bytes({1, 2, 3, 4})}, {"b", "F32", {3}, f32Bytes({-1.5f, 0, 8})}});
  Expected<TensorMap> tensors = read(file);
  ASSERT_TRUE(tensors) << tensors.error();
  ASSERT_EQ(tensors->size(), 2u);
  const HostTensor &a = tensors->at("a");
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a.f32, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(tensors->at("b").f32, (std::vector<float>{-1.5f, 0, 8}));
}

TEST(SafetensorsReadTest, ReadsBFloat16RawOrConverted) {
  // 1.0, -2.5, the smallest normal, +inf
  std::vector<uint16_t> bits = {0x3f80, 0xc020, 0x0080, 0x7f80};
  Bytes file = safetensorsOf({{"w", "BF16", {2, 2}, bf16Bytes(bits)}});
  Expected<TensorMap> raw = read(file);
  ASSERT_TRUE(raw) << raw.error();
  EXPECT_EQ(raw->at("w").dtype, DType::BF16);
  EXPECT_EQ(raw->at("w").bf16, bits);

  Expected<TensorMap> converted = read(file, /*convert=*/true);
  ASSERT_TRUE(converted) << converted.error();
  const HostTensor &w = converted->at("w");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(w.f32.size(), 4u);
  EXPECT_EQ(w.f32[0], 1.0f);
  EXPECT_EQ(w.f32[1], -2.5f);
  EXPECT_EQ(w.f32[2], 1.17549435e-38f);
  EXPECT_TRUE(std::isinf(w.f32[3]));
}

TEST(SafetensorsReadTest, ReadsInt32) {
  Expected<TensorMap> tensors = read(safetensorsOf({{"lens", "I32", {3}, i32Bytes({5, -1, 0})}}));
  ASSERT_TRUE(tensors) << tensors.error();
  EXPECT_EQ(tensors->at("lens").dtype, DType::I32);
  EXPECT_EQ(tensors->at("lens").i32, (std::vector<int32_t>{5, -1, 0}));
}

TEST(SafetensorsReadTest, IgnoresMetadata) {
  Expected<TensorMap> tensors =
      read(safetensorsOf({{"a", "F32", {1}, f32Bytes({7})}},
                         "{\"format\":\"pt\",\"nested\":{\"x\":[1,2.5e3,true,null,\"\\n\"]}}"));
  ASSERT_TRUE(tensors) << tensors.error();
  EXPECT_EQ(tensors->size(), 1u);
  EXPECT_EQ(tensors->count("__metadata__"), 0u);
  EXPECT_EQ(tensors->at("a").f32, std::vector<float>{7});
}

TEST(SafetensorsReadTest, AcceptsScalarsEmptyTensorsGapsAndPadding) {
  // The reference writer pads the header with spaces to 8 bytes; gaps are tolerated here.
  std::string header = "{" + entry("s", "F32", "[]", "[0,4]") + "," +
                       entry("e", "F32", "[0,3]", "[4,4]") + "," +
                       entry("g", "I32", "[1]", "[12,16]") + "}   \n ";
  Expected<TensorMap> tensors = read(safetensorsFile(header, f32Bytes({3.0f, 0.0f, 0.0f, 9.0f})));
  ASSERT_TRUE(tensors) << tensors.error();
  EXPECT_TRUE(tensors->at("s").shape.empty());
  EXPECT_EQ(tensors->at("s").f32, std::vector<float>{3.0f});
  EXPECT_EQ(tensors->at("e").shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(tensors->at("e").f32.empty());
  EXPECT_EQ(tensors->at("g").i32.size(), 1u);
}

TEST(SafetensorsReadTest, EmptyTensorsInsideOtherRangesDoNotOverlap) {
  std::string header =
      "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("e", "F32", "[0]", "[4,4]") + "}";
  Expected<TensorMap> tensors = readHeader(header, 8);
  ASSERT_TRUE(tensors) << tensors.error();
  EXPECT_EQ(tensors->size(), 2u);
}

TEST(SafetensorsReadTest, DecodesJsonEscapesInNames) {
  // "q\u005fproj.weight" is q_proj.weight; then U+00E9 raw, and U+1F600 as a surrogate pair.
  std::string header = "{" + entry("q\\u005fproj.weight", "F32", "[1]", "[0,4]") + "," +
                       entry("caf\xc3\xa9\\t\\\"\\\\\\/", "F32", "[1]", "[4,8]") + "," +
                       entry("\\ud83d\\ude00", "F32", "[1]", "[8,12]") + "}";
  Expected<TensorMap> tensors = readHeader(header, 12);
  ASSERT_TRUE(tensors) << tensors.error();
  EXPECT_EQ(tensors->count("q_proj.weight"), 1u);
  EXPECT_EQ(tensors->count("caf\xc3\xa9\t\"\\/"), 1u);
  EXPECT_EQ(tensors->count("\xf0\x9f\x98\x80"), 1u);
}

TEST(SafetensorsReadTest, ReadsFiles) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  writeBytes(path, safetensorsOf({{"a", "F32", {1}, f32Bytes({2})}}));
  Expected<TensorMap> tensors = readSafetensorsFile(path);
  ASSERT_TRUE(tensors) << tensors.error();
  EXPECT_EQ(tensors->at("a").f32, std::vector<float>{2});
  EXPECT_TRUE(failsWith(readSafetensorsFile(dir.file("none.safetensors")),
                        dir.file("none.safetensors"), "cannot open"));
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

TEST(SafetensorsReadTest, RejectsFilesShorterThanTheLength) {
  for (size_t size = 0; size < 8; ++size)
    EXPECT_TRUE(failsWith(read(Bytes(size, 0)), kName, "to be a .safetensors file")) << size;
}

TEST(SafetensorsReadTest, RejectsHeaderLengthPastTheEnd) {
  Bytes file = safetensorsOf({{"a", "F32", {1}, f32Bytes({2})}});
  // One byte more than the header and data hold, and a few more.
  for (uint8_t extra : {uint8_t(1), uint8_t(9)}) {
    Bytes longer = file;
    longer[0] = static_cast<uint8_t>(longer[0] + 4 + extra); // 4 data bytes follow the header
    EXPECT_TRUE(failsWith(read(longer), kName, "runs past the end of the file")) << int(extra);
  }
  for (uint64_t length : {uint64_t(1) << 63, ~uint64_t(0), uint64_t(1) << 32}) {
    Bytes forged = file;
    for (int i = 0; i < 8; ++i)
      forged[i] = static_cast<uint8_t>(length >> (8 * i));
    EXPECT_TRUE(failsWith(read(forged), kName,
                          "header length " + std::to_string(length) + " runs past the end"));
  }
}

TEST(SafetensorsReadTest, RejectsHeaderOverTheLimit) {
  // A file really this large, so that only the limit can refuse it.
  std::string header = "{}" + std::string(kMaxSafetensorsHeaderSize - 1, ' ');
  EXPECT_TRUE(
      failsWith(read(safetensorsFile(header, {})), kName, "exceeds the limit of 104857600 bytes"));
  header.pop_back();
  EXPECT_TRUE(read(safetensorsFile(header, {})));
}

TEST(SafetensorsReadTest, EveryPrefixOfAValidFileIsAnError) {
  Bytes file =
      safetensorsOf({{"a", "F32", {2}, f32Bytes({1, 2})}, {"b", "I32", {1}, i32Bytes({3})}});
  ASSERT_TRUE(read(file));
  for (size_t size = 0; size < file.size(); ++size) {
    Bytes prefix(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(size));
    Expected<TensorMap> tensors = read(prefix);
    EXPECT_FALSE(tensors) << "a prefix of " << size << " bytes was accepted";
    if (!tensors)
      EXPECT_TRUE(failsWith(tensors, kName, ""));
  }
}

TEST(SafetensorsReadTest, RejectsInvalidJson) {
  struct Case {
    std::string header;
    const char *message;
  } cases[] = {
      {"", "unexpected end of the header"},
      {"   ", "unexpected end of the header"},
      {"{", "expected a string key"},
      {"{\"a\"}", "expected ':'"},
      {"{\"a\":}", "expected a value"},
      {"{\"__metadata__\":{},}", "expected a string key"},
      {"{\"__metadata__\":[1,]}", "expected a value"},
      {"{\"__metadata__\":[1 2]}", "expected ',' or ']'"},
      {"{\"__metadata__\":{} \"x\":1}", "expected ',' or '}'"},
      {"{'a':1}", "expected a string key"},
      {"{\"a", "unterminated string"},
      {"{\"a\nb\":1}", "control character in a string"},
      {"{\"a\\x\":1}", "invalid escape sequence"},
      {"{\"a\\u12\":1}", "invalid \\u escape"},
      {"{\"a\\udc00\":1}", "lone low surrogate"},
      {"{\"a\\ud800x\":1}", "high surrogate not followed by a low surrogate"},
      {"{\"a\\ud800\\u0041\":1}", "high surrogate not followed by a low surrogate"},
      {"{\"a\xff\":1}", "invalid UTF-8"},
      {"{\"a\xc0\x80\":1}", "invalid UTF-8"},         // overlong
      {"{\"a\xed\xa0\x80\":1}", "invalid UTF-8"},     // encoded surrogate
      {"{\"a\xf4\x90\x80\x80\":1}", "invalid UTF-8"}, // past U+10FFFF
      {"{\"a\xe2\x82\":1}", "invalid UTF-8"},         // truncated sequence
      {"{\"__metadata__\":{\"n\":01}}", "leading zero"},
      {"{\"__metadata__\":{\"n\":-}}", "invalid number"},
      {"{\"__metadata__\":{\"n\":1.}}", "invalid number"},
      {"{\"__metadata__\":{\"n\":1e}}", "invalid number"},
      {"{\"__metadata__\":{\"n\":NaN}}", "expected a value"},
      {"{\"__metadata__\":{\"n\":tru}}", "invalid literal"},
      {"{\"__metadata__\":{\"n\":nul}}", "invalid literal"},
      {"{} {}", "unexpected text after the JSON value"},
      {"{}/* comment */", "unexpected text after the JSON value"},
      {std::string("{\0}", 3), "expected a string key"},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(failsWith(readHeader(c.header), kName, c.message)) << c.header;
  EXPECT_TRUE(failsWith(readHeader("{\"a\":1"), kName, "invalid JSON header at byte 6"));
}

TEST(SafetensorsReadTest, RejectsDeepNestingAndTooManyValues) {
  std::string deep = "{\"__metadata__\":" + std::string(10000, '[') + std::string(10000, ']') + "}";
  EXPECT_TRUE(failsWith(readHeader(deep), kName, "nested deeper than 64 levels"));
  std::string ok = "{\"__metadata__\":{\"a\":" + std::string(60, '[') + std::string(60, ']') + "}}";
  EXPECT_TRUE(readHeader(ok));

  std::string many = "{\"__metadata__\":[0";
  for (size_t i = 0; i < (size_t(1) << 20); ++i)
    many += ",0";
  many += "]}";
  EXPECT_TRUE(failsWith(readHeader(many), kName, "more than 1048576 values"));
}

TEST(SafetensorsReadTest, RejectsHeadersOfTheWrongShape) {
  struct Case {
    std::string header;
    const char *message;
  } cases[] = {
      {"[]", "the JSON header is not an object"},
      {"\"x\"", "the JSON header is not an object"},
      {"{\"__metadata__\":[]}", "'__metadata__' is not a JSON object"},
      {"{\"__metadata__\":{},\"__metadata__\":{}}", "duplicate '__metadata__'"},
      {"{\"a\":[1]}", "tensor 'a' is not described by a JSON object"},
      {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", "tensor 'a' has no 'dtype'"},
      {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", "tensor 'a' has no 'shape'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "tensor 'a' has no 'data_offsets'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}",
       "tensor 'a' has an unexpected key 'x'"},
      {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
       "tensor 'a' has a duplicate key 'dtype'"},
      {"{" + entry("a", "F32", "[1]", "[0,4]").replace(13, 5, "32") + "}", "'dtype' that is not"},
      {"{" + entry("a", "F32", "{}", "[0,4]") + "}",
       "tensor 'a' has a 'shape' that is not an array"},
      {"{" + entry("a", "F32", "[\"1\"]", "[0,4]") + "}", "dimension that is not a number"},
      {"{" + entry("a", "F32", "[1]", "[0]") + "}", "'data_offsets' that are not two integers"},
      {"{" + entry("a", "F32", "[1]", "[0,4,8]") + "}", "not two integers"},
      {"{" + entry("a", "F32", "[1]", "{}") + "}", "not two integers"},
      {"{" + entry("a", "F32", "[1]", "[\"0\",4]") + "}", "not two integers"},
      {"{" + entry("a", "F32", "[1]", "[-4,4]") + "}", "invalid data offset '-4'"},
      {"{" + entry("a", "F32", "[1]", "[0,4.0]") + "}", "invalid data offset '4.0'"},
      {"{" + entry("a", "F32", "[1]", "[0,18446744073709551616]") + "}",
       "invalid data offset '18446744073709551616'"},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(failsWith(readHeader(c.header), kName, c.message)) << c.header;
}

TEST(SafetensorsReadTest, RejectsBadDimensions) {
  struct Case {
    const char *shape;
    const char *message;
  } cases[] = {
      {"[-2,2]", "tensor 'a' has a negative dimension '-2'"},
      {"[2.0,2]", "tensor 'a' has a non-integer dimension '2.0'"},
      {"[2e0]", "non-integer dimension '2e0'"},
      {"[9223372036854775808]", "dimension too large '9223372036854775808'"},
      {"[1099511627776,1099511627776]",
       "shape [1099511627776, 1099511627776] with too many elements"},
      {"[4611686018427387904]", "with too many elements"},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(
        failsWith(readHeader("{" + entry("a", "F32", c.shape, "[0,16]") + "}"), kName, c.message))
        << c.shape;
  std::string rank65 = "[1";
  for (int i = 0; i < 64; ++i)
    rank65 += ",1";
  rank65 += "]";
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F32", rank65, "[0,4]") + "}"), kName,
                        "more than 64 dimensions"));
}

TEST(SafetensorsReadTest, RejectsOffsetsPastTheEnd) {
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F32", "[4]", "[0,16]") + "}", 15), kName,
                        "tensor 'a' has data_offsets [0, 16] past the end of the data (15 bytes)"));
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F32", "[0]", "[99,99]") + "}", 16), kName,
                        "past the end"));
  EXPECT_TRUE(failsWith(
      readHeader("{" + entry("a", "F32", "[1]", "[18446744073709551612,18446744073709551615]") +
                 "}"),
      kName, "past the end"));
}

TEST(SafetensorsReadTest, RejectsReversedOffsets) {
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F32", "[1]", "[8,4]") + "}"), kName,
                        "data_offsets [8, 4] that end before they begin"));
}

TEST(SafetensorsReadTest, RejectsOffsetsThatDoNotMatchTheShape) {
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F32", "[2,2]", "[0,12]") + "}"), kName,
                        "tensor 'a' has data_offsets [0, 12] (12 bytes), expected 16 bytes for "
                        "shape [2, 2] of F32"));
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "BF16", "[3]", "[0,12]") + "}"), kName,
                        "expected 6 bytes for shape [3] of BF16"));
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F32", "[]", "[0,0]") + "}"), kName,
                        "expected 4 bytes for shape [] of F32"));
}

TEST(SafetensorsReadTest, RejectsOverlappingOffsets) {
  std::string header =
      "{" + entry("a", "F32", "[4]", "[0,16]") + "," + entry("b", "F32", "[4]", "[12,28]") + "}";
  EXPECT_TRUE(failsWith(readHeader(header), kName,
                        "tensors 'a' and 'b' have overlapping data ranges [0, 16) and [12, 28)"));
  std::string same =
      "{" + entry("a", "F32", "[1]", "[4,8]") + "," + entry("b", "I32", "[1]", "[4,8]") + "}";
  EXPECT_TRUE(failsWith(readHeader(same), kName, "overlapping data ranges"));
  // Nested ranges, listed in reverse order.
  std::string nested = "{" + entry("inner", "F32", "[1]", "[8,12]") + "," +
                       entry("outer", "F32", "[8]", "[0,32]") + "}";
  EXPECT_TRUE(failsWith(readHeader(nested), kName, "overlapping"));
}

TEST(SafetensorsReadTest, RejectsUnknownAndUnsupportedDtypes) {
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F17", "[1]", "[0,4]") + "}"), kName,
                        "tensor 'a' has unknown dtype 'F17'"));
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "f32", "[1]", "[0,4]") + "}"), kName,
                        "unknown dtype 'f32'"));
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F16", "[2]", "[0,4]") + "}"), kName,
                        "tensor 'a' has dtype F16, which is not supported (F32, BF16 or I32)"));
  EXPECT_TRUE(failsWith(readHeader("{" + entry("a", "F64", "[1]", "[0,8]") + "}"), kName,
                        "dtype F64, which is not supported"));
}

TEST(SafetensorsReadTest, RejectsDuplicateNames) {
  std::string header = "{" + entry("a", "F32", "[1]", "[0,4]") + "," +
                       entry("b", "F32", "[1]", "[4,8]") + "," +
                       entry("a", "F32", "[1]", "[8,12]") + "}";
  EXPECT_TRUE(failsWith(readHeader(header), kName, "duplicate tensor name 'a'"));
  // The same name spelled once with an escape.
  std::string escaped =
      "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("\\u0061", "F32", "[1]", "[4,8]") + "}";
  EXPECT_TRUE(failsWith(readHeader(escaped), kName, "duplicate tensor name 'a'"));
}

TEST(SafetensorsReadTest, QuotesHostileNamesOnOneLine) {
  std::string header = "{" + entry("a\\nb\\u0000", "F17", "[1]", "[0,4]") + "}";
  EXPECT_TRUE(failsWith(readHeader(header), kName, "tensor 'a\\x0ab\\x00' has unknown dtype"));
}

TEST(SafetensorsReadTest, SurvivesEveryByteMutation) {
  Bytes file = safetensorsOf({{"q_proj.weight", "F32", {2, 2}, f32Bytes({1, 2, 3, 4})},
                              {"b", "BF16", {2}, bf16Bytes({1, 2})}},
                             "{\"k\":\"v\"}");
  size_t accepted = 0;
  for (size_t i = 0; i < file.size(); ++i) {
    for (uint8_t value : {uint8_t(0), uint8_t(0xff), uint8_t('9'), uint8_t('"'), uint8_t(']')}) {
      Bytes mutated = file;
      mutated[i] = value;
      Expected<TensorMap> tensors = read(mutated, i % 2 == 0);
      if (tensors) {
        ++accepted;
        for (const auto &[name, tensor] : *tensors)
          EXPECT_TRUE(tensor.isConsistent()) << name;
      } else {
        EXPECT_TRUE(failsWith(tensors, kName, ""));
      }
    }
  }
  // Mutating data bytes keeps the file valid; most header mutations must not.
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, file.size() * 5);
}
