// gguf_file.cpp - the in-memory GGUF model: opening, typed access, editing.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "gguf_internal.h"

namespace gl {

GgufArray GgufArray::from_raw(GgufType type, std::vector<uint8_t> raw) {
  const size_t size = gguf_type_size(type);
  GL_ASSERT(size != 0, "GgufArray::from_raw: type must be numeric or bool");
  GL_ASSERT(raw.size() % size == 0, "GgufArray::from_raw: raw size is not a multiple of the element size");
  GgufArray a;
  a.type_ = type;
  a.count_ = raw.size() / size;
  a.raw_ = std::move(raw);
  return a;
}

GgufFile::GgufFile() = default;

Result<GgufFile> GgufFile::open(const std::string& path) {
  Result<MappedFile> m = MappedFile::open(path);
  if (!m) return Error(m.error());
  auto mapping = std::make_shared<const MappedFile>(std::move(m).value());
  Result<GgufFile> f = parse_gguf(mapping->bytes(), path);
  if (f) GgufAccess::mapping(*f) = std::move(mapping);
  return f;
}

Result<GgufFile> GgufFile::from_buffer(std::span<const uint8_t> bytes, std::string name) {
  return parse_gguf(bytes, std::move(name));
}

uint32_t GgufFile::alignment() const {
  const GgufValue* v = find("general.alignment");
  if (v && alignment_problem(v).empty()) return std::get<uint32_t>(*v);
  return kGgufDefaultAlignment;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const GgufKV& kv : kvs_)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

Error GgufFile::missing_or_wrong(std::string_view key, GgufType expected, bool array) const {
  const GgufValue* v = find(key);
  const std::string want =
      array ? fmt::format("array of {}", gguf_type_name(expected)) : std::string(gguf_type_name(expected));
  if (!v) return Error(fmt::format("{}: key '{}' not found (expected {})", name_, key, want));
  std::string have(gguf_type_name(gguf_type_of(*v)));
  if (const GgufArray* a = std::get_if<GgufArray>(v)) have = fmt::format("array of {}", gguf_type_name(a->type()));
  return Error(fmt::format("{}: key '{}' has type {}, expected {}", name_, key, have, want));
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return Error(fmt::format("{}: key '{}' not found (expected an integer)", name_, key));
  return std::visit(
      [&](const auto& x) -> Result<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
              return Error(fmt::format("{}: key '{}' value {} does not fit int64", name_, key, x));
          }
          return static_cast<int64_t>(x);
        } else {
          return Error(fmt::format("{}: key '{}' has type {}, expected an integer", name_, key,
                                   gguf_type_name(gguf_type_of(*v))));
        }
      },
      *v);
}

void GgufFile::set(std::string key, GgufValue value) {
  GL_ASSERT(!key.empty(), "GgufFile::set: empty key");
  for (GgufKV& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back({std::move(key), std::move(value)});
}

bool GgufFile::remove(std::string_view key) {
  auto it = std::find_if(kvs_.begin(), kvs_.end(), [&](const GgufKV& kv) { return kv.key == key; });
  if (it == kvs_.end()) return false;
  kvs_.erase(it);
  return true;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

Result<DType> GgufFile::tensor_dtype(const GgufTensorInfo& t) const {
  if (std::optional<DType> d = t.dtype()) return *d;
  return Error(fmt::format("{}: tensor '{}' has type {}, which ggml-lite cannot compute with", name_, t.name,
                           ggml_type_name(t.ggml_type)));
}

Status GgufFile::add_tensor(std::string name, uint32_t ggml_type, std::span<const int64_t> ne, const void* data) {
  std::string problem = tensor_name_problem(name);
  if (problem.empty() && find_tensor(name)) problem = fmt::format("duplicate tensor name '{}'", name);
  if (ne.size() > 4) problem = fmt::format("tensor '{}': {} dims (at most 4)", name, ne.size());
  if (!problem.empty()) return Error(fmt::format("{}: {}", name_, problem));
  GgufTensorInfo t;
  t.name = std::move(name);
  t.ggml_type = ggml_type;
  t.n_dims = static_cast<uint32_t>(ne.size());
  std::copy(ne.begin(), ne.end(), t.ne.begin());
  problem = tensor_shape_problem(ggml_type, t.n_dims, t.ne, t.nbytes);
  if (!problem.empty()) return Error(fmt::format("{}: tensor '{}': {}", name_, t.name, problem));
  t.data = static_cast<const uint8_t*>(data);
  if (!tensors_.empty()) {
    const GgufTensorInfo& last = tensors_.back();
    if (!pad_to(last.offset + last.nbytes, alignment(), t.offset))
      return Error(fmt::format("{}: tensor '{}': offset overflows", name_, t.name));
  }
  tensors_.push_back(std::move(t));
  return {};
}

Status GgufFile::add_tensor(std::string name, DType type, std::initializer_list<int64_t> ne, const void* data) {
  return add_tensor(std::move(name), dtype_traits(type).ggml_type, std::span<const int64_t>(ne.begin(), ne.size()),
                    data);
}

Status GgufFile::set_tensor_data(std::string_view name, const void* data) {
  for (GgufTensorInfo& t : tensors_) {
    if (t.name == name) {
      t.data = static_cast<const uint8_t*>(data);
      return {};
    }
  }
  return Error(fmt::format("{}: no tensor named '{}'", name_, name));
}

}  // namespace gl
