// gguf.h - GGUF v2/v3 reader and writer, byte-compatible with llama.cpp.
//
//   gl::Result<gl::GgufFile> f = gl::GgufFile::open("model.gguf");   // mmap, fully validated
//   if (!f) { fmt::print(stderr, "{}\n", f.error()); return 1; }
//   gl::Result<uint32_t> n_layer = f->get<uint32_t>("qwen35.block_count");
//   const gl::GgufTensorInfo* t = f->find_tensor("token_embd.weight");
//   gl::Result<gl::DType> dt = f->tensor_dtype(*t);   // an error for e.g. q4_K
//
//   gl::GgufFile out;                                     // build and write a whole file
//   out.set("general.architecture", "qwen35");
//   out.set("qwen35.block_count", uint32_t{24});
//   GL_TRY(out.add_tensor("x", gl::DType::F32, {4, 2}, floats.data()));  // data kept by the caller
//   GL_TRY(out.write("out.gguf"));
//
//   gl::GgufWriter w("big.gguf");                         // stream data one tensor at a time
//   GL_TRY(w.begin(meta));                                // meta: KVs + tensor infos, no data
//   for (size_t i = 0; i < n; ++i) GL_TRY(w.write_tensor_data(i, bytes_i));  // chunks allowed
//   GL_TRY(w.finish());                                   // pad, fsync, rename over big.gguf
//
// Reading checks every rule of the format (docs/reference/ggml-llamacpp.md section 7), including
// ggml's strict packing: tensor data in info order, each at the running sum of padded sizes.
// Errors name the file, the byte offset and the key or tensor. Tensor types ggml-lite cannot
// compute with (iq2_xs, iq3_s, ...) are read as metadata; tensor_dtype() reports them.
// The host must be little-endian; big-endian files are rejected.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "ggml-lite/dtype.h"
#include "ggml-lite/status.h"

namespace gl {

class MappedFile;

// GGUF value types; the numbers are the on-disk ids.
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint64_t kGgufMaxStringLength = uint64_t{1} << 30;
inline constexpr uint64_t kGgufMaxArrayElements = uint64_t{1} << 30;
inline constexpr size_t kGgufMaxTensorName = 63;  // bytes, without ggml's NUL

std::string_view gguf_type_name(GgufType t);  // "u32", "string", "array", ...
size_t gguf_type_size(GgufType t);            // bytes of a scalar; 0 for STRING and ARRAY

// Maps a C++ type to its GGUF type: uint8_t..double, bool, std::string.
template <class T>
struct GgufTypeOf;
template <>
struct GgufTypeOf<uint8_t> {
  static constexpr GgufType value = GgufType::UINT8;
};
template <>
struct GgufTypeOf<int8_t> {
  static constexpr GgufType value = GgufType::INT8;
};
template <>
struct GgufTypeOf<uint16_t> {
  static constexpr GgufType value = GgufType::UINT16;
};
template <>
struct GgufTypeOf<int16_t> {
  static constexpr GgufType value = GgufType::INT16;
};
template <>
struct GgufTypeOf<uint32_t> {
  static constexpr GgufType value = GgufType::UINT32;
};
template <>
struct GgufTypeOf<int32_t> {
  static constexpr GgufType value = GgufType::INT32;
};
template <>
struct GgufTypeOf<float> {
  static constexpr GgufType value = GgufType::FLOAT32;
};
template <>
struct GgufTypeOf<bool> {
  static constexpr GgufType value = GgufType::BOOL;
};
template <>
struct GgufTypeOf<std::string> {
  static constexpr GgufType value = GgufType::STRING;
};
template <>
struct GgufTypeOf<uint64_t> {
  static constexpr GgufType value = GgufType::UINT64;
};
template <>
struct GgufTypeOf<int64_t> {
  static constexpr GgufType value = GgufType::INT64;
};
template <>
struct GgufTypeOf<double> {
  static constexpr GgufType value = GgufType::FLOAT64;
};
template <class T>
concept GgufElement = requires {
  GgufTypeOf<T>::value;
};
template <class T>
concept GgufNumeric = GgufElement<T> && !std::is_same_v<T, std::string>;

// An array value: elements of one non-array type. Numeric and bool elements are
// kept packed little-endian in raw(); strings in strings().
class GgufArray {
 public:
  GgufArray() = default;
  template <GgufElement T>
  static GgufArray of(const std::vector<T>& v);
  template <GgufElement T>
  static GgufArray of(std::initializer_list<T> v) {
    return of(std::vector<T>(v));
  }
  // Packed elements of a non-string type (count * gguf_type_size(type) bytes).
  static GgufArray from_raw(GgufType type, std::vector<uint8_t> raw);

  GgufType type() const { return type_; }
  size_t size() const { return type_ == GgufType::STRING ? strings_.size() : count_; }
  std::span<const uint8_t> raw() const { return raw_; }
  const std::vector<std::string>& strings() const { return strings_; }
  // Elements as T; T must match type() (asserted).
  template <GgufElement T>
  std::vector<T> values() const;
  bool operator==(const GgufArray&) const = default;

 private:
  GgufType type_ = GgufType::UINT8;
  size_t count_ = 0;
  std::vector<uint8_t> raw_;
  std::vector<std::string> strings_;
};

// One value; the alternative index equals the GgufType id.
using GgufValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArray, uint64_t, int64_t, double>;
inline GgufType gguf_type_of(const GgufValue& v) { return static_cast<GgufType>(v.index()); }

struct GgufKV {
  std::string key;
  GgufValue value;
  bool operator==(const GgufKV&) const = default;
};

// Block layout of a ggml tensor type, for every type llama.cpp writes.
struct GgmlTypeInfo {
  std::string_view name;  // ggml's spelling: "f32", "q8_0", "q4_K", "iq2_xxs"
  int64_t block_size;     // elements per block
  size_t block_bytes;     // bytes per block
};
// nullptr for retired (4, 5, 31-33, 36-38) and unknown ids.
const GgmlTypeInfo* ggml_type_info(uint32_t ggml_type);
std::string ggml_type_name(uint32_t ggml_type);  // "q4_K", or "unknown type 99"

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  uint32_t n_dims = 1;                    // 0..4, as stored
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order, ne[0] contiguous
  uint64_t offset = 0;                    // from the start of the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // into the file or caller memory; null if none

  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  std::span<const uint8_t> bytes() const { return {data, data ? nbytes : 0}; }
  std::optional<DType> dtype() const { return dtype_from_ggml(ggml_type); }
};

class GgufFile {
 public:
  // Maps the file; tensor data pointers stay valid while any copy of the GgufFile lives.
  static Result<GgufFile> open(const std::string& path);
  // Parses bytes in place (no copy); the buffer must outlive the result's tensor data use.
  static Result<GgufFile> from_buffer(std::span<const uint8_t> bytes, std::string name = "<buffer>");

  GgufFile();
  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t data_offset() const { return data_offset_; }  // of a read file
  // general.alignment when it is a valid u32 power of two, else 32.
  uint32_t alignment() const;

  // ---- key/value pairs, in file order ----
  const std::vector<GgufKV>& kvs() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Errors: "<file>: key 'k' not found", "<file>: key 'k' has type i32, expected u32".
  template <GgufElement T>
  Result<T> get(std::string_view key) const;
  // Like get(), but an absent key gives fallback (a present key of another type is still an error).
  template <GgufElement T>
  Result<T> get_or(std::string_view key, T fallback) const;
  template <GgufElement T>
  Result<std::vector<T>> get_array(std::string_view key) const;
  // Any integer type (u8..i64) whose value fits int64; for files that vary u32/i32.
  Result<int64_t> get_int(std::string_view key) const;
  // Replaces the value in place, or appends the key at the end.
  void set(std::string key, GgufValue value);
  void set(std::string key, const char* value) { set(std::move(key), GgufValue(std::string(value))); }
  bool remove(std::string_view key);

  // ---- tensors, in file order ----
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The compute type, or "<file>: tensor 'x' has type iq2_xs, which ggml-lite cannot compute with".
  Result<DType> tensor_dtype(const GgufTensorInfo& t) const;
  // Appends a tensor after validating name, shape and type. data (nbytes long) may be null
  // when the file is only a metadata template for GgufWriter; else it must outlive write().
  Status add_tensor(std::string name, uint32_t ggml_type, std::span<const int64_t> ne, const void* data = nullptr);
  Status add_tensor(std::string name, DType type, std::initializer_list<int64_t> ne, const void* data = nullptr);
  Status set_tensor_data(std::string_view name, const void* data);

  // ---- writing (always version 3, alignment from general.alignment) ----
  Result<uint64_t> meta_size() const;           // header, KVs, infos and padding
  Result<uint64_t> file_size() const;           // meta_size plus padded tensor data
  Status write(const std::string& path) const;  // every tensor needs data
  Result<std::vector<uint8_t>> to_bytes() const;

 private:
  friend struct GgufAccess;  // the reader fills the fields
  Error missing_or_wrong(std::string_view key, GgufType expected, bool array) const;

  std::string name_ = "<memory>";
  uint32_t version_ = 3;
  uint64_t data_offset_ = 0;
  std::vector<GgufKV> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  std::shared_ptr<const MappedFile> mapping_;  // keeps tensor data alive for mapped files
};

// Streams a GGUF file to disk: metadata first, then tensor data in info order.
// Writes "<path>.tmp.XXXXXX" and renames it over path in finish(); any error, or
// destruction before finish(), removes the temp file.
class GgufWriter {
 public:
  explicit GgufWriter(std::string path);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Validates meta (its tensor data pointers are ignored) and writes header, KVs, infos, padding.
  Status begin(const GgufFile& meta);
  // Appends bytes to tensor index, which must be the first incomplete tensor; a tensor may
  // arrive in several chunks. Padding is written automatically.
  Status write_tensor_data(size_t index, std::span<const uint8_t> bytes);
  // Checks every tensor is complete, pads, fsyncs and renames.
  Status finish();
  const std::string& temp_path() const { return tmp_path_; }

 private:
  Status fail(std::string message);
  Status write_all(const void* p, size_t n);
  Status write_padding(uint64_t n);
  Status advance_complete();
  void discard();

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::vector<std::string> names_;
  std::vector<uint64_t> sizes_;
  size_t cur_ = 0;            // first incomplete tensor
  uint64_t cur_written_ = 0;  // bytes of tensor cur_ written so far
  bool begun_ = false;
  bool done_ = false;
};

// ---------------------------------------------------------------- template bodies

template <GgufElement T>
GgufArray GgufArray::of(const std::vector<T>& v) {
  GgufArray a;
  a.type_ = GgufTypeOf<T>::value;
  if constexpr (std::is_same_v<T, std::string>) {
    a.strings_ = v;
  } else {
    a.count_ = v.size();
    a.raw_.resize(v.size() * sizeof(T));
    for (size_t i = 0; i < v.size(); ++i) {
      T x = v[i];
      __builtin_memcpy(a.raw_.data() + i * sizeof(T), &x, sizeof(T));
    }
  }
  return a;
}

template <GgufElement T>
std::vector<T> GgufArray::values() const {
  GL_ASSERT(type_ == GgufTypeOf<T>::value, "GgufArray::values: element type mismatch");
  if constexpr (std::is_same_v<T, std::string>) {
    return strings_;
  } else {
    std::vector<T> out(count_);
    for (size_t i = 0; i < count_; ++i) {
      T x;
      __builtin_memcpy(&x, raw_.data() + i * sizeof(T), sizeof(T));
      out[i] = x;
    }
    return out;
  }
}

template <GgufElement T>
Result<T> GgufFile::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || gguf_type_of(*v) != GgufTypeOf<T>::value) return missing_or_wrong(key, GgufTypeOf<T>::value, false);
  return std::get<T>(*v);
}

template <GgufElement T>
Result<T> GgufFile::get_or(std::string_view key, T fallback) const {
  if (!find(key)) return fallback;
  return get<T>(key);
}

template <GgufElement T>
Result<std::vector<T>> GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  const GgufArray* a = v ? std::get_if<GgufArray>(v) : nullptr;
  if (!a || a->type() != GgufTypeOf<T>::value) return missing_or_wrong(key, GgufTypeOf<T>::value, true);
  return a->values<T>();
}

}  // namespace gl
