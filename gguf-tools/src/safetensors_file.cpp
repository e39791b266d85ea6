// safetensors_file.cpp - parses and validates one .safetensors file.
//
// Layout: u64 little-endian header length N, N bytes of JSON (may end in spaces),
// then the data region. The JSON maps tensor names to {dtype, shape, data_offsets}
// and may carry a "__metadata__" object of strings.
#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "ggml-lite/mmap.h"
#include "gguf-tools/safetensors.h"
#include "json_util.h"

namespace gl {

// The reference implementation refuses headers above 100 MB.
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

struct SafetensorsAccess {
  static std::string& path(SafetensorsFile& f) { return f.path_; }
  static std::vector<SafetensorsTensor>& tensors(SafetensorsFile& f) { return f.tensors_; }
  static std::map<std::string, std::string>& metadata(SafetensorsFile& f) { return f.metadata_; }
  static std::shared_ptr<const MappedFile>& mapping(SafetensorsFile& f) { return f.mapping_; }
};

struct DTypeBits {
  std::string_view name;
  int bits;
};
constexpr DTypeBits kDTypes[] = {
    {"BOOL", 8}, {"U8", 8},   {"I8", 8},    {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},
    {"U16", 16}, {"F16", 16}, {"BF16", 16}, {"I32", 32},    {"U32", 32},    {"F32", 32},    {"F64", 64},
    {"I64", 64}, {"U64", 64}, {"F4", 4},    {"F6_E2M3", 6}, {"F6_E3M2", 6},
};

int safetensors_dtype_bits(std::string_view d) {
  for (const DTypeBits& e : kDTypes)
    if (e.name == d) return e.bits;
  return 0;
}

int64_t SafetensorsTensor::nelements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated not to overflow when the header was read
  return n;
}

Result<DType> SafetensorsTensor::dtype() const {
  if (dtype_name == "F32") return DType::F32;
  if (dtype_name == "F16") return DType::F16;
  if (dtype_name == "BF16") return DType::BF16;
  return Error(fmt::format("{}: tensor '{}' has dtype {} (supported: F32, F16, BF16)", file, name, dtype_name));
}

Result<std::array<int64_t, 4>> SafetensorsTensor::ggml_ne() const {
  if (shape.size() > 4)
    return Error(fmt::format("{}: tensor '{}' has {} dims (ggml allows 4)", file, name, shape.size()));
  std::array<int64_t, 4> ne{1, 1, 1, 1};
  for (size_t i = 0; i < shape.size(); ++i) ne[i] = shape[shape.size() - 1 - i];
  return ne;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const SafetensorsTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

namespace {

// Reads one {dtype, shape, data_offsets} entry; returns "" or the problem.
std::string parse_entry(const nlohmann::json& j, SafetensorsTensor& t) {
  if (!j.is_object()) return fmt::format("entry is a JSON {}, expected an object", json_kind(j));
  for (const auto& [k, v] : j.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets") return fmt::format("unexpected field '{}'", k);
  if (!j.contains("dtype") || !j["dtype"].is_string()) return "missing or non-string 'dtype'";
  t.dtype_name = j["dtype"].get<std::string>();
  if (safetensors_dtype_bits(t.dtype_name) == 0) return fmt::format("unknown dtype '{}'", t.dtype_name);
  if (!j.contains("shape") || !j["shape"].is_array()) return "missing or non-array 'shape'";
  for (const auto& d : j["shape"]) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return fmt::format("shape entry {} is not a non-negative integer", d.dump());
    t.shape.push_back(d.get<int64_t>());
  }
  const auto& offs = j.contains("data_offsets") ? j["data_offsets"] : nlohmann::json();
  if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
    return "'data_offsets' must be two non-negative integers";
  t.data_begin = offs[0].get<uint64_t>();
  t.data_end = offs[1].get<uint64_t>();
  return {};
}

// Checks offsets and byte size against the shape; returns "" or the problem.
std::string check_extent(const SafetensorsTensor& t, uint64_t data_size) {
  if (t.data_begin > t.data_end) return fmt::format("data_offsets [{}, {}) have begin > end", t.data_begin, t.data_end);
  if (t.data_end > data_size)
    return fmt::format("data_offsets [{}, {}) exceed the data region of {} bytes", t.data_begin, t.data_end, data_size);
  uint64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / 8 / uint64_t(d)) return "element count overflows";
    numel *= uint64_t(d);
  }
  const uint64_t bits = numel * uint64_t(safetensors_dtype_bits(t.dtype_name));
  if (bits % 8 != 0 || bits / 8 != t.data_end - t.data_begin)
    return fmt::format("{} bytes in data_offsets, but shape {} of {} needs {}{}", t.data_end - t.data_begin,
                       nlohmann::json(t.shape).dump(), t.dtype_name, bits / 8, bits % 8 ? " and a bit more" : "");
  return {};
}

// The format forbids overlaps and holes: sorted by offset, tensors tile the data region.
std::string check_coverage(std::vector<const SafetensorsTensor*> order, uint64_t data_size) {
  std::sort(order.begin(), order.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
    return std::tie(a->data_begin, a->data_end) < std::tie(b->data_begin, b->data_end);
  });
  uint64_t end = 0;
  const SafetensorsTensor* prev = nullptr;
  for (const SafetensorsTensor* t : order) {
    if (t->data_begin < end)
      return fmt::format("tensor '{}' [{}, {}) overlaps tensor '{}' [{}, {})", t->name, t->data_begin, t->data_end,
                         prev->name, prev->data_begin, prev->data_end);
    if (t->data_begin > end)
      return fmt::format("{} bytes before tensor '{}' (offset {}) belong to no tensor", t->data_begin - end, t->name,
                         t->data_begin);
    end = t->data_end;
    prev = t;
  }
  if (end != data_size)
    return fmt::format("{} bytes at the end of the data region belong to no tensor", data_size - end);
  return {};
}

Status parse_header_json(const nlohmann::json& root, std::span<const uint8_t> data, SafetensorsFile& f) {
  const std::string& path = SafetensorsAccess::path(f);
  if (!root.is_object())
    return Error(fmt::format("{}: header is a JSON {}, expected an object", path, json_kind(root)));
  auto& tensors = SafetensorsAccess::tensors(f);
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) return Error(fmt::format("{}: __metadata__ is not an object", path));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) return Error(fmt::format("{}: __metadata__ '{}' is not a string", path, mk));
        SafetensorsAccess::metadata(f)[mk] = mv.get<std::string>();
      }
      continue;
    }
    SafetensorsTensor t;
    t.name = key;
    t.file = path;
    std::string problem = parse_entry(value, t);
    if (problem.empty()) problem = check_extent(t, data.size());
    if (!problem.empty()) return Error(fmt::format("{}: tensor '{}': {}", path, key, problem));
    t.data = data.subspan(t.data_begin, t.data_end - t.data_begin);
    tensors.push_back(std::move(t));  // items() iterates in key order, so tensors stay sorted
  }
  std::vector<const SafetensorsTensor*> order;
  for (const SafetensorsTensor& t : tensors) order.push_back(&t);
  std::string problem = check_coverage(std::move(order), data.size());
  if (!problem.empty()) return Error(fmt::format("{}: {}", path, problem));
  return {};
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::from_buffer(std::span<const uint8_t> bytes, std::string name) {
  SafetensorsFile f;
  f.path_ = std::move(name);
  if (bytes.size() < 8)
    return Error(fmt::format("{}: {} bytes is too small for the 8-byte header length", f.path_, bytes.size()));
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8)
    return Error(fmt::format("{}: header length {} exceeds the {} bytes after it", f.path_, n, bytes.size() - 8));
  if (n > kMaxSafetensorsHeader)
    return Error(fmt::format("{}: header length {} exceeds the limit {}", f.path_, n, kMaxSafetensorsHeader));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(n));
  if (text.empty() || text[0] != '{') return Error(fmt::format("{}: header does not start with '{{'", f.path_));
  Result<nlohmann::json> root = parse_json_strict(text, f.path_ + ": header", 4);
  if (!root) return Error(root.error());
  Status s = parse_header_json(*root, bytes.subspan(8 + static_cast<size_t>(n)), f);
  if (!s) return Error(s.error());
  return f;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  Result<MappedFile> m = MappedFile::open(path);
  if (!m) return Error(m.error());
  auto mapping = std::make_shared<const MappedFile>(std::move(m).value());
  Result<SafetensorsFile> f = from_buffer(mapping->bytes(), path);
  if (f) f->mapping_ = std::move(mapping);
  return f;
}

}  // namespace gl
