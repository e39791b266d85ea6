// gguf_read.cpp - parses and validates a GGUF image held in memory.
//
// Every length and count read from the file is checked against the bytes left
// before anything is allocated, so a hostile file cannot trigger a large allocation.
#include <cstring>
#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "gguf_internal.h"

namespace gl {
namespace {

// Smallest encodings, used to bound counts by the bytes left.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;          // key length, 1-byte key, type, u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, std::string name) : buf_(bytes), name_(std::move(name)) {}
  Result<GgufFile> run();

 private:
  Error error_at(size_t offset, std::string_view msg) const {
    return Error(fmt::format("{}: offset {}: {}", name_, offset, msg));
  }
  // Names what is being read ("key 'x'", "tensor 'y'") in end-of-file errors.
  std::string where() const { return ctx_.empty() ? std::string("header") : ctx_; }
  size_t left() const { return buf_.size() - pos_; }
  template <class T>
  Status read(T& out, std::string_view what);
  Status read_raw(void* out, size_t n, std::string_view what);
  Status read_string(std::string_view& out, std::string_view what);
  template <class T>
  Status read_value(std::string_view what, GgufValue& out);

  Status parse_header();
  Status parse_kvs();
  Status parse_value(GgufType type, std::string_view key, GgufValue& out);
  Status parse_array(std::string_view key, GgufValue& out);
  Status parse_array_body(std::string_view key, GgufType elem, uint64_t count, GgufArray& out);
  Status check_alignment();
  Status parse_tensor_infos();
  Status parse_tensor_info(GgufTensorInfo& t);
  Status place_tensors();

  std::span<const uint8_t> buf_;
  std::string name_;
  size_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::string ctx_;
  std::vector<size_t> kv_offsets_;    // where each KV starts, for later errors
  std::vector<size_t> info_offsets_;  // where each tensor info starts
  GgufFile file_;
};

template <class T>
Status Parser::read(T& out, std::string_view what) {
  return read_raw(&out, sizeof(T), what);
}

Status Parser::read_raw(void* out, size_t n, std::string_view what) {
  if (left() < n)
    return error_at(
        pos_, fmt::format("{}: unexpected end of file reading {} (need {} bytes, {} left)", where(), what, n, left()));
  if (n) std::memcpy(out, buf_.data() + pos_, n);  // out may be null for an empty array
  pos_ += n;
  return {};
}

Status Parser::read_string(std::string_view& out, std::string_view what) {
  const size_t at = pos_;
  uint64_t len = 0;
  GL_TRY(read(len, what));
  if (len > kGgufMaxStringLength)
    return error_at(at, fmt::format("{}: {} length {} exceeds the 1 GiB limit", where(), what, len));
  if (len > left())
    return error_at(at, fmt::format("{}: {} length {} exceeds the {} bytes left", where(), what, len, left()));
  out = std::string_view(reinterpret_cast<const char*>(buf_.data() + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return {};
}

Status Parser::parse_header() {
  char magic[4];
  if (buf_.size() < 4) return error_at(0, fmt::format("file too small for a GGUF header ({} bytes)", buf_.size()));
  GL_TRY(read_raw(magic, 4, "magic"));
  if (std::memcmp(magic, kGgufMagic, 4) != 0)
    return error_at(0, fmt::format("bad magic {:02x} {:02x} {:02x} {:02x} (expected 'GGUF')", uint8_t(magic[0]),
                                   uint8_t(magic[1]), uint8_t(magic[2]), uint8_t(magic[3])));
  uint32_t version = 0;
  GL_TRY(read(version, "version"));
  if (version == 0) return error_at(4, "version 0 is invalid");
  if ((version & 0xFFFF) == 0)
    return error_at(4, fmt::format("version 0x{:08x}: endianness mismatch (big-endian file?)", version));
  if (version == 1) return error_at(4, "version 1 is not supported (32-bit counts); re-convert the model");
  if (version > kGgufVersion)
    return error_at(4, fmt::format("version {} is not supported (newest known is {})", version, kGgufVersion));
  GgufAccess::version(file_) = version;

  GL_TRY(read(n_tensors_, "n_tensors"));
  GL_TRY(read(n_kv_, "n_kv"));
  // Bound the counts by the bytes left; the smallest KV or tensor info has a known size.
  if (n_kv_ > left() / kMinKvBytes)
    return error_at(16, fmt::format("n_kv {} cannot fit in the {} bytes left", n_kv_, left()));
  if (n_tensors_ > (left() - n_kv_ * kMinKvBytes) / kMinTensorInfoBytes)
    return error_at(8, fmt::format("n_tensors {} cannot fit in the {} bytes left", n_tensors_, left()));
  return {};
}

Status Parser::parse_kvs() {
  auto& kvs = GgufAccess::kvs(file_);
  std::unordered_set<std::string_view> seen;
  for (uint64_t i = 0; i < n_kv_; ++i) {
    const size_t at = pos_;
    std::string_view key;
    ctx_ = fmt::format("key {}", i);
    GL_TRY(read_string(key, "key"));
    if (key.empty()) return error_at(at, fmt::format("key {} is empty", i));
    if (!seen.insert(key).second) return error_at(at, fmt::format("duplicate key '{}'", key));
    ctx_ = fmt::format("key '{}'", key);
    const size_t type_at = pos_;
    int32_t type = 0;
    GL_TRY(read(type, "value type"));
    if (type < 0 || static_cast<uint32_t>(type) >= kGgufTypeCount)
      return error_at(type_at, fmt::format("key '{}': invalid value type {}", key, type));
    GgufKV kv{std::string(key), {}};
    GL_TRY(parse_value(static_cast<GgufType>(type), key, kv.value));
    kvs.push_back(std::move(kv));
    kv_offsets_.push_back(at);
  }
  return {};
}

template <class T>
Status Parser::read_value(std::string_view what, GgufValue& out) {
  T v{};
  GL_TRY(read(v, what));
  out = v;
  return {};
}

Status Parser::parse_value(GgufType type, std::string_view key, GgufValue& out) {
  const std::string_view what = "value";
  switch (type) {
    case GgufType::UINT8: return read_value<uint8_t>(what, out);
    case GgufType::INT8: return read_value<int8_t>(what, out);
    case GgufType::UINT16: return read_value<uint16_t>(what, out);
    case GgufType::INT16: return read_value<int16_t>(what, out);
    case GgufType::UINT32: return read_value<uint32_t>(what, out);
    case GgufType::INT32: return read_value<int32_t>(what, out);
    case GgufType::FLOAT32: return read_value<float>(what, out);
    case GgufType::UINT64: return read_value<uint64_t>(what, out);
    case GgufType::INT64: return read_value<int64_t>(what, out);
    case GgufType::FLOAT64: return read_value<double>(what, out);
    case GgufType::BOOL: {
      const size_t at = pos_;
      uint8_t b = 0;
      GL_TRY(read(b, what));
      if (b > 1) return error_at(at, fmt::format("key '{}': bool value {} (expected 0 or 1)", key, b));
      out = b == 1;
      return {};
    }
    case GgufType::STRING: {
      std::string_view s;
      GL_TRY(read_string(s, what));
      out = std::string(s);
      return {};
    }
    case GgufType::ARRAY: return parse_array(key, out);
  }
  return error_at(pos_, "unreachable value type");
}

Status Parser::parse_array(std::string_view key, GgufValue& out) {
  const size_t at = pos_;
  int32_t elem = 0;
  GL_TRY(read(elem, "array element type"));
  if (elem < 0 || static_cast<uint32_t>(elem) >= kGgufTypeCount)
    return error_at(at, fmt::format("key '{}': invalid array element type {}", key, elem));
  const GgufType et = static_cast<GgufType>(elem);
  if (et == GgufType::ARRAY) return error_at(at, fmt::format("key '{}': nested arrays are not supported", key));
  const size_t count_at = pos_;
  uint64_t count = 0;
  GL_TRY(read(count, "array count"));
  if (count > kGgufMaxArrayElements)
    return error_at(count_at, fmt::format("key '{}': array count {} exceeds the limit 2^30", key, count));
  // Strings take at least their 8-byte length each.
  const uint64_t min_elem = et == GgufType::STRING ? 8 : gguf_type_size(et);
  if (count * min_elem > left())
    return error_at(count_at, fmt::format("key '{}': array of {} {} needs at least {} bytes, {} left", key, count,
                                          gguf_type_name(et), count * min_elem, left()));
  GgufArray arr;
  GL_TRY(parse_array_body(key, et, count, arr));
  out = std::move(arr);
  return {};
}

Status Parser::parse_array_body(std::string_view key, GgufType elem, uint64_t count, GgufArray& out) {
  const size_t n = static_cast<size_t>(count);
  if (elem == GgufType::STRING) {
    std::vector<std::string> v;
    v.reserve(n);  // bounded: n * 8 <= bytes left
    for (size_t i = 0; i < n; ++i) {
      std::string_view s;
      GL_TRY(read_string(s, "string element"));
      v.emplace_back(s);
    }
    out = GgufArray::of(v);
    return {};
  }
  const size_t at = pos_;
  std::vector<uint8_t> raw(n * gguf_type_size(elem));
  GL_TRY(read_raw(raw.data(), raw.size(), "array elements"));
  if (elem == GgufType::BOOL) {
    for (size_t i = 0; i < n; ++i)
      if (raw[i] > 1)
        return error_at(at + i, fmt::format("key '{}': bool element {} is {} (expected 0 or 1)", key, i, raw[i]));
  }
  out = GgufArray::from_raw(elem, std::move(raw));
  return {};
}

Status Parser::check_alignment() {
  const auto& kvs = GgufAccess::kvs(file_);
  for (size_t i = 0; i < kvs.size(); ++i) {
    if (kvs[i].key != "general.alignment") continue;
    std::string problem = alignment_problem(&kvs[i].value);
    if (!problem.empty()) return error_at(kv_offsets_[i], problem);
    alignment_ = std::get<uint32_t>(kvs[i].value);
  }
  return {};
}

Status Parser::parse_tensor_infos() {
  auto& tensors = GgufAccess::tensors(file_);
  std::unordered_set<std::string_view> seen;
  for (uint64_t i = 0; i < n_tensors_; ++i) {
    const size_t at = pos_;
    GgufTensorInfo t;
    GL_TRY(parse_tensor_info(t));
    const std::string_view stored(reinterpret_cast<const char*>(buf_.data() + at + 8), t.name.size());
    if (!seen.insert(stored).second) return error_at(at, fmt::format("duplicate tensor name '{}'", t.name));
    tensors.push_back(std::move(t));
    info_offsets_.push_back(at);
  }
  return {};
}

Status Parser::parse_tensor_info(GgufTensorInfo& t) {
  const size_t at = pos_;
  std::string_view name;
  ctx_ = fmt::format("tensor info {}", GgufAccess::tensors(file_).size());
  GL_TRY(read_string(name, "tensor name"));
  std::string problem = tensor_name_problem(name);
  if (!problem.empty()) return error_at(at, problem);
  t.name = std::string(name);
  ctx_ = fmt::format("tensor '{}'", t.name);
  const std::string& what = ctx_;
  const size_t dims_at = pos_;
  GL_TRY(read(t.n_dims, "n_dims"));
  if (t.n_dims > 4) return error_at(dims_at, fmt::format("{}: n_dims {} exceeds 4", what, t.n_dims));
  for (uint32_t d = 0; d < t.n_dims; ++d) GL_TRY(read(t.ne[d], "ne"));
  const size_t type_at = pos_;
  int32_t type = 0;
  GL_TRY(read(type, "type"));
  GL_TRY(read(t.offset, "offset"));
  t.ggml_type = static_cast<uint32_t>(type);
  if (!ggml_type_info(t.ggml_type))
    return error_at(type_at, fmt::format("{}: unknown or retired ggml type {}", what, type));
  problem = tensor_shape_problem(t.ggml_type, t.n_dims, t.ne, t.nbytes);
  if (!problem.empty()) return error_at(at, fmt::format("{}: {}", what, problem));
  return {};
}

// Checks ggml's strict packing and that every tensor's bytes lie inside the file.
Status Parser::place_tensors() {
  uint64_t data_offset = 0;
  if (!pad_to(pos_, alignment_, data_offset)) return error_at(pos_, "data offset overflows");
  GgufAccess::data_offset(file_) = data_offset;
  auto& tensors = GgufAccess::tensors(file_);
  if (!tensors.empty() && data_offset > buf_.size())
    return error_at(pos_, fmt::format("data section starts at {}, past the file size {}", data_offset, buf_.size()));
  uint64_t expected = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    GgufTensorInfo& t = tensors[i];
    const size_t at = info_offsets_[i];
    if (t.offset % alignment_ != 0)
      return error_at(at, fmt::format("tensor '{}': offset {} is not a multiple of the alignment {}", t.name, t.offset,
                                      alignment_));
    if (t.offset != expected)
      return error_at(at, fmt::format("tensor '{}': offset {} is not the packed offset {} (data must "
                                      "follow info order with minimal padding)",
                                      t.name, t.offset, expected));
    const uint64_t begin = data_offset + t.offset;  // no overflow: offset == expected <= size + align
    if (begin > buf_.size() || t.nbytes > buf_.size() - begin)
      return error_at(at, fmt::format("tensor '{}': data [{}, {}) exceeds file size {}", t.name, begin,
                                      begin + t.nbytes, buf_.size()));
    t.data = buf_.data() + begin;
    if (!pad_to(t.offset + t.nbytes, alignment_, expected)) return error_at(at, "tensor offset overflows");
  }
  return {};
}

Result<GgufFile> Parser::run() {
  GgufAccess::name(file_) = name_;
  for (Status (Parser::*pass)() : {&Parser::parse_header, &Parser::parse_kvs, &Parser::check_alignment,
                                   &Parser::parse_tensor_infos, &Parser::place_tensors}) {
    Status s = (this->*pass)();
    if (!s) return Error(s.error());
  }
  return std::move(file_);
}

}  // namespace

Result<GgufFile> parse_gguf(std::span<const uint8_t> bytes, std::string name) {
  Parser p(bytes, std::move(name));
  return p.run();
}

}  // namespace gl
