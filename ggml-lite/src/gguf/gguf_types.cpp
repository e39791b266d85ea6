// gguf_types.cpp - GGUF value types, the ggml tensor type table, shape checks.
#include <array>
#include <limits>

#include <fmt/format.h>

#include "gguf_internal.h"

namespace gl {

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::UINT8: return "u8";
    case GgufType::INT8: return "i8";
    case GgufType::UINT16: return "u16";
    case GgufType::INT16: return "i16";
    case GgufType::UINT32: return "u32";
    case GgufType::INT32: return "i32";
    case GgufType::FLOAT32: return "f32";
    case GgufType::BOOL: return "bool";
    case GgufType::STRING: return "string";
    case GgufType::ARRAY: return "array";
    case GgufType::UINT64: return "u64";
    case GgufType::INT64: return "i64";
    case GgufType::FLOAT64: return "f64";
  }
  return "invalid";
}

size_t gguf_type_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL: return 1;
    case GgufType::UINT16:
    case GgufType::INT16: return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32: return 4;
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64: return 8;
    case GgufType::STRING:
    case GgufType::ARRAY: return 0;
  }
  return 0;
}

namespace {

// Indexed by ggml type id; empty names mark retired ids.
// Block layouts follow ggml's ggml-common.h (see docs/reference/ggml-llamacpp.md section 7).
constexpr std::array<GgmlTypeInfo, 43> kGgmlTypes{{
    {"f32", 1, 4},      {"f16", 1, 2},        {"q4_0", 32, 18},    {"q4_1", 32, 20},     {"", 0, 0},
    {"", 0, 0},         {"q5_0", 32, 22},     {"q5_1", 32, 24},    {"q8_0", 32, 34},     {"q8_1", 32, 36},
    {"q2_K", 256, 84},  {"q3_K", 256, 110},   {"q4_K", 256, 144},  {"q5_K", 256, 176},   {"q6_K", 256, 210},
    {"q8_K", 256, 292}, {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74}, {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50},
    {"iq4_nl", 32, 18}, {"iq3_s", 256, 110},  {"iq2_s", 256, 82},  {"iq4_xs", 256, 136}, {"i8", 1, 1},
    {"i16", 1, 2},      {"i32", 1, 4},        {"i64", 1, 8},       {"f64", 1, 8},        {"iq1_m", 256, 56},
    {"bf16", 1, 2},     {"", 0, 0},           {"", 0, 0},          {"", 0, 0},           {"tq1_0", 256, 54},
    {"tq2_0", 256, 66}, {"", 0, 0},           {"", 0, 0},          {"", 0, 0},           {"mxfp4", 32, 17},
    {"nvfp4", 64, 36},  {"q1_0", 128, 18},    {"q2_0", 64, 18},
}};

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t ggml_type) {
  if (ggml_type >= kGgmlTypes.size() || kGgmlTypes[ggml_type].name.empty()) return nullptr;
  return &kGgmlTypes[ggml_type];
}

std::string ggml_type_name(uint32_t ggml_type) {
  const GgmlTypeInfo* info = ggml_type_info(ggml_type);
  return info ? std::string(info->name) : fmt::format("unknown type {}", ggml_type);
}

std::string tensor_shape_problem(uint32_t ggml_type, uint32_t n_dims, const std::array<int64_t, 4>& ne,
                                 uint64_t& nbytes) {
  const GgmlTypeInfo* info = ggml_type_info(ggml_type);
  if (!info) return fmt::format("unknown or retired ggml type {}", ggml_type);
  if (n_dims > 4) return fmt::format("n_dims {} exceeds 4", n_dims);
  for (size_t i = 0; i < 4; ++i) {
    if (ne[i] < 0) return fmt::format("ne[{}] = {} is negative", i, ne[i]);
    if (i >= n_dims && ne[i] != 1) return fmt::format("ne[{}] = {} beyond n_dims {}", i, ne[i], n_dims);
  }
  int64_t n = 1;
  for (int64_t d : ne) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return fmt::format("element count [{}, {}, {}, {}] overflows int64", ne[0], ne[1], ne[2], ne[3]);
    n *= d;
  }
  if (ne[0] % info->block_size != 0)
    return fmt::format("ne[0] = {} is not a multiple of the {} block size {}", ne[0], info->name, info->block_size);
  const uint64_t blocks = static_cast<uint64_t>(n / info->block_size);
  if (blocks != 0 && blocks > std::numeric_limits<uint64_t>::max() / info->block_bytes)
    return fmt::format("byte size of {} blocks of {} overflows", blocks, info->name);
  nbytes = blocks * info->block_bytes;
  return {};
}

std::string tensor_name_problem(std::string_view name) {
  if (name.size() > kGgufMaxTensorName)
    return fmt::format("tensor name '{}...' is {} bytes (limit {})", name.substr(0, 32), name.size(),
                       kGgufMaxTensorName);
  return {};
}

std::string alignment_problem(const GgufValue* v) {
  if (!v) return {};
  if (gguf_type_of(*v) != GgufType::UINT32)
    return fmt::format("general.alignment has type {}, expected u32", gguf_type_name(gguf_type_of(*v)));
  const uint32_t a = std::get<uint32_t>(*v);
  if (!is_pow2(a)) return fmt::format("general.alignment {} is not a power of two", a);
  return {};
}

}  // namespace gl
