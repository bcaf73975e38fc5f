//===- Safetensors.cpp - a strict .safetensors reader ---------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"

#include "runtime/io/File.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace mhac::io {
namespace {

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

struct JsonMember;

/// A parsed JSON value. Numbers keep their literal text: shapes and offsets need exact 64-bit
/// integers, which a double cannot hold, and "3.0" must be told apart from "3".
struct JsonValue {
  enum class Kind : uint8_t { Null, Boolean, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text; ///< a string's decoded contents (UTF-8), or a number's literal
  std::vector<JsonValue> items;
  std::vector<JsonMember> members; ///< in file order; duplicates are kept for the caller to judge
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

/// RFC 8259 JSON, strictly: no comments, no trailing commas, no leading zeros, no control
/// characters or invalid UTF-8 in strings, no lone surrogates. Nesting and the number of values
/// are capped so that a hostile header cannot exhaust the stack or memory.
class JsonParser {
public:
  static constexpr unsigned kMaxDepth = 64;
  static constexpr size_t kMaxValues = size_t(1) << 20;

  explicit JsonParser(std::string_view text) : text_(text) {}

  /// Parses the whole text as one value with optional surrounding whitespace.
  bool parseDocument(JsonValue &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the JSON value");
    return true;
  }

  /// "at byte N: what went wrong", once parseDocument failed.
  const std::string &error() const { return error_; }

private:
  bool fail(const std::string &message) {
    error_ = "at byte " + std::to_string(pos_) + ": " + message;
    return false;
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipSpace() {
    while (!atEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                        text_[pos_] == '\r'))
      ++pos_;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  bool parseValue(JsonValue &out, unsigned depth) {
    if (++values_ > kMaxValues)
      return fail("more than " + std::to_string(kMaxValues) + " values");
    switch (peek()) {
    case '{':
      return parseObject(out, depth);
    case '[':
      return parseArray(out, depth);
    case '"':
      out.kind = JsonValue::Kind::String;
      return parseString(out.text);
    case 't':
    case 'f':
      out.kind = JsonValue::Kind::Boolean;
      out.boolean = peek() == 't';
      if (consumeWord(out.boolean ? "true" : "false"))
        return true;
      return fail("invalid literal");
    case 'n':
      out.kind = JsonValue::Kind::Null;
      if (consumeWord("null"))
        return true;
      return fail("invalid literal");
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
        out.kind = JsonValue::Kind::Number;
        return parseNumber(out.text);
      }
      return fail(atEnd() ? "unexpected end of the header" : "expected a value");
    }
  }

  bool parseObject(JsonValue &out, unsigned depth) {
    if (depth >= kMaxDepth)
      return fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    out.kind = JsonValue::Kind::Object;
    ++pos_; // '{'
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return fail("expected a string key");
      out.members.emplace_back();
      JsonMember &member = out.members.back();
      if (!parseString(member.key))
        return false;
      skipSpace();
      if (peek() != ':')
        return fail("expected ':'");
      ++pos_;
      skipSpace();
      if (!parseValue(member.value, depth + 1))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parseArray(JsonValue &out, unsigned depth) {
    if (depth >= kMaxDepth)
      return fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    out.kind = JsonValue::Kind::Array;
    ++pos_; // '['
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      out.items.emplace_back();
      if (!parseValue(out.items.back(), depth + 1))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, kept as text.
  bool parseNumber(std::string &out) {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
      return pos_ - from;
    };
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9')
        return fail("leading zero in a number");
    } else if (digits() == 0) {
      return fail("invalid number");
    }
    if (peek() == '.') {
      ++pos_;
      if (digits() == 0)
        return fail("invalid number");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (digits() == 0)
        return fail("invalid number");
    }
    out.assign(text_.substr(start, pos_ - start));
    return true;
  }

  bool parseHex4(uint32_t &value) {
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = uint32_t(c - 'A' + 10);
      else
        return fail("invalid \\u escape");
      value = value * 16 + digit;
      ++pos_;
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  bool parseEscape(std::string &out) {
    ++pos_; // '\\'
    char c = peek();
    ++pos_;
    switch (c) {
    case '"':
    case '\\':
    case '/':
      out += c;
      return true;
    case 'b':
      out += '\b';
      return true;
    case 'f':
      out += '\f';
      return true;
    case 'n':
      out += '\n';
      return true;
    case 'r':
      out += '\r';
      return true;
    case 't':
      out += '\t';
      return true;
    case 'u': {
      uint32_t code;
      if (!parseHex4(code))
        return false;
      if (code >= 0xdc00 && code <= 0xdfff)
        return fail("lone low surrogate in \\u escape");
      if (code >= 0xd800 && code <= 0xdbff) {
        uint32_t low;
        if (!consumeWord("\\u") || !parseHex4(low) || low < 0xdc00 || low > 0xdfff)
          return fail("high surrogate not followed by a low surrogate");
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
      }
      appendUtf8(out, code);
      return true;
    }
    default:
      --pos_;
      return fail("invalid escape sequence");
    }
  }

  /// The length of the valid UTF-8 sequence at pos_, or 0 (Unicode 15, table 3-7).
  size_t utf8Length() const {
    auto byte = [&](size_t i) {
      return pos_ + i < text_.size() ? static_cast<uint8_t>(text_[pos_ + i]) : uint8_t(0);
    };
    uint8_t lead = byte(0);
    auto inRange = [&](size_t i, uint8_t low, uint8_t high) {
      return byte(i) >= low && byte(i) <= high;
    };
    if (lead >= 0xc2 && lead <= 0xdf)
      return inRange(1, 0x80, 0xbf) ? 2 : 0;
    if (lead >= 0xe0 && lead <= 0xef) {
      uint8_t low = lead == 0xe0 ? 0xa0 : 0x80, high = lead == 0xed ? 0x9f : 0xbf;
      return inRange(1, low, high) && inRange(2, 0x80, 0xbf) ? 3 : 0;
    }
    if (lead >= 0xf0 && lead <= 0xf4) {
      uint8_t low = lead == 0xf0 ? 0x90 : 0x80, high = lead == 0xf4 ? 0x8f : 0xbf;
      return inRange(1, low, high) && inRange(2, 0x80, 0xbf) && inRange(3, 0x80, 0xbf) ? 4 : 0;
    }
    return 0;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      auto c = static_cast<uint8_t>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        if (!parseEscape(out))
          return false;
      } else if (c < 0x20) {
        return fail("control character in a string");
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++pos_;
      } else {
        size_t length = utf8Length();
        if (length == 0)
          return fail("invalid UTF-8 in a string");
        out.append(text_.substr(pos_, length));
        pos_ += length;
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t values_ = 0;
  std::string error_;
};

//===----------------------------------------------------------------------===//
// The safetensors layer
//===----------------------------------------------------------------------===//

/// One validated header entry.
struct Entry {
  const std::string *name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

enum class IntegerStatus { Ok, Negative, NotInteger, TooLarge };

/// Reads a JSON number literal as an unsigned integer no larger than `max`.
IntegerStatus parseInteger(const std::string &literal, uint64_t max, uint64_t &value) {
  if (literal.find_first_of(".eE") != std::string::npos)
    return IntegerStatus::NotInteger;
  if (!literal.empty() && literal[0] == '-')
    return IntegerStatus::Negative;
  value = 0;
  for (char c : literal) {
    auto digit = uint64_t(c - '0');
    if (value > (max - digit) / 10)
      return IntegerStatus::TooLarge;
    value = value * 10 + digit;
  }
  return IntegerStatus::Ok;
}

std::optional<DType> parseDType(const std::string &name) {
  if (name == "F32")
    return DType::F32;
  if (name == "BF16")
    return DType::BF16;
  if (name == "I32")
    return DType::I32;
  return std::nullopt;
}

bool isKnownUnsupportedDType(const std::string &name) {
  static const char *const known[] = {"BOOL",    "U8",  "I8",      "I16",     "U16",     "F16",
                                      "U32",     "I64", "U64",     "F64",     "F8_E5M2", "F8_E4M3",
                                      "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
  return std::find(std::begin(known), std::end(known), name) != std::end(known);
}

std::string quoteLiteral(const std::string &literal) { return quoteName(literal, 40); }

class HeaderReader {
public:
  HeaderReader(std::string_view file, uint64_t dataSize) : file_(file), dataSize_(dataSize) {}

  /// Validates one tensor's entry; on failure returns false with `error` set.
  bool readEntry(const JsonMember &member, Entry &entry, std::string &error) {
    entry.name = &member.key;
    std::string tensor = std::string(file_) + ": tensor " + quoteName(member.key);
    if (member.value.kind != JsonValue::Kind::Object)
      return fail(error, tensor + " is not described by a JSON object");

    const JsonValue *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const JsonMember &field : member.value.members) {
      const JsonValue **slot = field.key == "dtype"          ? &dtype
                               : field.key == "shape"        ? &shape
                               : field.key == "data_offsets" ? &offsets
                                                             : nullptr;
      if (!slot)
        return fail(error, tensor + " has an unexpected key " + quoteName(field.key));
      if (*slot)
        return fail(error, tensor + " has a duplicate key " + quoteName(field.key));
      *slot = &field.value;
    }
    if (!dtype)
      return fail(error, tensor + " has no 'dtype'");
    if (!shape)
      return fail(error, tensor + " has no 'shape'");
    if (!offsets)
      return fail(error, tensor + " has no 'data_offsets'");

    if (dtype->kind != JsonValue::Kind::String)
      return fail(error, tensor + " has a 'dtype' that is not a string");
    std::optional<DType> type = parseDType(dtype->text);
    if (!type) {
      if (isKnownUnsupportedDType(dtype->text))
        return fail(error, tensor + " has dtype " + dtype->text +
                               ", which is not supported (F32, BF16 or I32)");
      return fail(error, tensor + " has unknown dtype " + quoteName(dtype->text));
    }
    entry.dtype = *type;

    if (shape->kind != JsonValue::Kind::Array)
      return fail(error, tensor + " has a 'shape' that is not an array");
    if (shape->items.size() > kMaxRank)
      return fail(error, tensor + " has more than " + std::to_string(kMaxRank) + " dimensions");
    entry.shape.clear();
    for (const JsonValue &dim : shape->items) {
      if (dim.kind != JsonValue::Kind::Number)
        return fail(error, tensor + " has a dimension that is not a number");
      uint64_t value;
      switch (parseInteger(dim.text, uint64_t(std::numeric_limits<int64_t>::max()), value)) {
      case IntegerStatus::Ok:
        break;
      case IntegerStatus::Negative:
        return fail(error, tensor + " has a negative dimension " + quoteLiteral(dim.text));
      case IntegerStatus::NotInteger:
        return fail(error, tensor + " has a non-integer dimension " + quoteLiteral(dim.text));
      case IntegerStatus::TooLarge:
        return fail(error, tensor + " has a dimension too large " + quoteLiteral(dim.text));
      }
      entry.shape.push_back(static_cast<int64_t>(value));
    }

    if (offsets->kind != JsonValue::Kind::Array || offsets->items.size() != 2 ||
        offsets->items[0].kind != JsonValue::Kind::Number ||
        offsets->items[1].kind != JsonValue::Kind::Number)
      return fail(error, tensor + " has 'data_offsets' that are not two integers");
    uint64_t bounds[2];
    for (int i = 0; i < 2; ++i) {
      const std::string &literal = offsets->items[i].text;
      if (parseInteger(literal, std::numeric_limits<uint64_t>::max(), bounds[i]) !=
          IntegerStatus::Ok)
        return fail(error, tensor + " has an invalid data offset " + quoteLiteral(literal) +
                               " (offsets are non-negative integers)");
    }
    entry.begin = bounds[0];
    entry.end = bounds[1];
    std::string range = "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "]";
    if (entry.begin > entry.end)
      return fail(error, tensor + " has data_offsets " + range + " that end before they begin");
    if (entry.end > dataSize_)
      return fail(error, tensor + " has data_offsets " + range + " past the end of the data (" +
                             std::to_string(dataSize_) + " bytes)");

    std::optional<uint64_t> bytes = checkedByteSize(entry.shape, entry.dtype);
    if (!bytes)
      return fail(error,
                  tensor + " has shape " + formatShape(entry.shape) + " with too many elements");
    if (*bytes != entry.end - entry.begin)
      return fail(error, tensor + " has data_offsets " + range + " (" +
                             std::to_string(entry.end - entry.begin) + " bytes), expected " +
                             std::to_string(*bytes) + " bytes for shape " +
                             formatShape(entry.shape) + " of " + dtypeName(entry.dtype));
    return true;
  }

private:
  static bool fail(std::string &error, std::string message) {
    error = std::move(message);
    return false;
  }

  std::string_view file_;
  uint64_t dataSize_;
};

uint32_t loadLE32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

/// Copies the elements of a validated entry out of the data section.
HostTensor materialize(const Entry &entry, const uint8_t *data, const SafetensorsOptions &options) {
  HostTensor tensor;
  tensor.shape = entry.shape;
  const uint8_t *bytes = data + entry.begin;
  size_t count = static_cast<size_t>((entry.end - entry.begin) / dtypeSize(entry.dtype));
  switch (entry.dtype) {
  case DType::F32:
    tensor.dtype = DType::F32;
    tensor.f32.resize(count);
    loadLittleEndian(bytes, tensor.f32.data(), count);
    break;
  case DType::I32:
    tensor.dtype = DType::I32;
    tensor.i32.resize(count);
    loadLittleEndian(bytes, tensor.i32.data(), count);
    break;
  case DType::BF16:
    tensor.dtype = DType::BF16;
    tensor.bf16.resize(count);
    loadLittleEndian(bytes, tensor.bf16.data(), count);
    if (options.convertBF16ToF32) {
      tensor.f32 = tensor.toFloat(); // while dtype still says BF16
      tensor.dtype = DType::F32;
      tensor.bf16 = {};
    }
    break;
  }
  return tensor;
}

} // namespace

Expected<TensorMap> readSafetensors(const uint8_t *data, size_t size, std::string_view name,
                                    const SafetensorsOptions &options) {
  std::string file(name);
  if (size < 8)
    return Error{file + ": file is too short (" + std::to_string(size) +
                 " bytes) to be a .safetensors file"};
  uint64_t headerSize = uint64_t(loadLE32(data)) | uint64_t(loadLE32(data + 4)) << 32;
  if (headerSize > size - 8)
    return Error{file + ": header length " + std::to_string(headerSize) +
                 " runs past the end of the file (" + std::to_string(size) + " bytes)"};
  if (headerSize > kMaxSafetensorsHeaderSize)
    return Error{file + ": header length " + std::to_string(headerSize) + " exceeds the limit of " +
                 std::to_string(kMaxSafetensorsHeaderSize) + " bytes"};

  std::string_view header(reinterpret_cast<const char *>(data) + 8, size_t(headerSize));
  JsonValue root;
  JsonParser parser(header);
  if (!parser.parseDocument(root))
    return Error{file + ": invalid JSON header " + parser.error()};
  if (root.kind != JsonValue::Kind::Object)
    return Error{file + ": the JSON header is not an object"};

  const uint8_t *tensorData = data + 8 + headerSize;
  uint64_t dataSize = size - 8 - headerSize;
  HeaderReader reader(name, dataSize);
  std::vector<Entry> entries;
  entries.reserve(root.members.size());
  bool sawMetadata = false;
  for (const JsonMember &member : root.members) {
    if (member.key == "__metadata__") {
      if (sawMetadata)
        return Error{file + ": duplicate '__metadata__'"};
      sawMetadata = true;
      if (member.value.kind != JsonValue::Kind::Object)
        return Error{file + ": '__metadata__' is not a JSON object"};
      continue;
    }
    entries.emplace_back();
    std::string error;
    if (!reader.readEntry(member, entries.back(), error))
      return Error{error};
  }

  // Duplicate names: JSON leaves them to the reader, and silently taking one would load a
  // weight the user did not mean.
  std::vector<const Entry *> byName;
  byName.reserve(entries.size());
  for (const Entry &entry : entries)
    byName.push_back(&entry);
  std::sort(byName.begin(), byName.end(),
            [](const Entry *a, const Entry *b) { return *a->name < *b->name; });
  for (size_t i = 1; i < byName.size(); ++i)
    if (*byName[i]->name == *byName[i - 1]->name)
      return Error{file + ": duplicate tensor name " + quoteName(*byName[i]->name)};

  // Overlapping ranges: two tensors sharing bytes is never what a writer meant. Empty tensors
  // occupy nothing and overlap nothing.
  std::vector<const Entry *> byOffset;
  for (const Entry &entry : entries)
    if (entry.begin != entry.end)
      byOffset.push_back(&entry);
  std::sort(byOffset.begin(), byOffset.end(), [](const Entry *a, const Entry *b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const Entry &previous = *byOffset[i - 1], &current = *byOffset[i];
    if (current.begin < previous.end)
      return Error{file + ": tensors " + quoteName(*previous.name) + " and " +
                   quoteName(*current.name) + " have overlapping data ranges [" +
                   std::to_string(previous.begin) + ", " + std::to_string(previous.end) +
                   ") and [" + std::to_string(current.begin) + ", " + std::to_string(current.end) +
                   ")"};
  }

  TensorMap tensors;
  for (const Entry &entry : entries)
    tensors.emplace(*entry.name, materialize(entry, tensorData, options));
  return tensors;
}

Expected<TensorMap> readSafetensorsFile(const std::string &path,
                                        const SafetensorsOptions &options) {
  Expected<std::vector<uint8_t>> bytes = readFileBytes(path);
  if (!bytes)
    return Error{bytes.error()};
  return readSafetensors(bytes->data(), bytes->size(), path, options);
}

} // namespace mhac::io
