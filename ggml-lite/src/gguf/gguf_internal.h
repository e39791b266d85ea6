// gguf_internal.h - pieces shared by the GGUF reader, writer and file model.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ggml-lite/gguf.h"
#include "ggml-lite/mmap.h"

namespace gl {

static_assert(std::endian::native == std::endian::little, "GGUF I/O assumes a little-endian host");

inline constexpr char kGgufMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kGgufVersion = 3;

// x rounded up to a multiple of a (a power of two); false on overflow.
inline bool pad_to(uint64_t x, uint64_t a, uint64_t& out) {
  if (x > UINT64_MAX - (a - 1)) return false;
  out = (x + a - 1) & ~(a - 1);
  return true;
}

inline bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Checks type, dims and element/byte counts of a tensor and computes its size.
// Returns "" when valid, else the problem (without the tensor name).
std::string tensor_shape_problem(uint32_t ggml_type, uint32_t n_dims, const std::array<int64_t, 4>& ne,
                                 uint64_t& nbytes);
// "" when name can be a tensor name (< 64 bytes), else the problem.
std::string tensor_name_problem(std::string_view name);
// "" when the general.alignment value (if any) is a u32 power of two, else the problem.
std::string alignment_problem(const GgufValue* v);

// Back door for the reader to fill a GgufFile.
struct GgufAccess {
  static std::string& name(GgufFile& f) { return f.name_; }
  static uint32_t& version(GgufFile& f) { return f.version_; }
  static uint64_t& data_offset(GgufFile& f) { return f.data_offset_; }
  static std::vector<GgufKV>& kvs(GgufFile& f) { return f.kvs_; }
  static std::vector<GgufTensorInfo>& tensors(GgufFile& f) { return f.tensors_; }
  static std::shared_ptr<const MappedFile>& mapping(GgufFile& f) { return f.mapping_; }
};

// Parses and validates a whole GGUF image; tensor data pointers point into bytes.
Result<GgufFile> parse_gguf(std::span<const uint8_t> bytes, std::string name);

// Serialises header, KVs, tensor infos (with offsets recomputed) and padding.
Result<std::vector<uint8_t>> encode_gguf_meta(const GgufFile& f);

}  // namespace gl
