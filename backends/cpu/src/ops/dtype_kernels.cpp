// dtype_kernels.cpp - the table of CPU kernels per weight dtype (see dtype_kernels.h).
//
// The switch in kernels_of() has no default, so a DType added to the enum does not compile until
// it has a row here (-Werror=switch); a row with null kernels is a type the CPU refuses.
#include "dtype_kernels.h"

#include <array>
#include <cstring>

#include "bf16_fast.h"
#include "dot_tiles.h"
#include "matmul.h"
#include "quants/dequant_tiles.h"
#include "quants/int8_dot.h"
#include "quants/int8_legacy.h"

namespace gl::cpu {
namespace {

void f32_row_to_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// A weight type whose dot product reads F32 activations.
template <DType T>
constexpr CpuTypeKernels f32_act_kernels() {
  return {&stored_row_to_f32<T>, &dot_rows_f32x<T>, DType::F32};
}

// A llama.cpp quant type: decoded exactly as its reference dequantizer, F32 activations.
template <class D>
constexpr CpuTypeKernels dequant_kernels() {
  using K = DequantKernels<D>;
  return {&K::row_to_f32, &K::dot_rows, DType::F32};
}

constexpr CpuTypeKernels kernels_of(DType t) {
  switch (t) {
    case DType::F32: return {&f32_row_to_f32, &dot_rows_f32x<DType::F32>, DType::F32};
    case DType::F16: return f32_act_kernels<DType::F16>();
    case DType::BF16: return f32_act_kernels<DType::BF16>();
    case DType::Q8_0: return f32_act_kernels<DType::Q8_0>();
    case DType::I32: return {};  // indices, never a weight
    case DType::Q4_0: return dequant_kernels<DecodeQ4_0>();
    case DType::Q4_1: return dequant_kernels<DecodeQ4_1>();
    case DType::Q5_0: return dequant_kernels<DecodeQ5_0>();
    case DType::Q5_1: return dequant_kernels<DecodeQ5_1>();
    case DType::Q2_K: return dequant_kernels<DecodeQ2_K>();
    case DType::Q3_K: return dequant_kernels<DecodeQ3_K>();
    case DType::Q4_K: return dequant_kernels<DecodeQ4_K>();
    case DType::Q5_K: return dequant_kernels<DecodeQ5_K>();
    case DType::Q6_K: return dequant_kernels<DecodeQ6_K>();
    case DType::IQ4_NL: return dequant_kernels<DecodeIQ4_NL>();
    case DType::IQ4_XS: return dequant_kernels<DecodeIQ4_XS>();
    case DType::MXFP4: return dequant_kernels<DecodeMXFP4>();
  }
  return {};
}

// A type with FAST rows: its exact row with the rounded-activation dot product and its quantizer.
template <class K>
constexpr CpuTypeKernels int8_kernels(DType t) {
  CpuTypeKernels k = kernels_of(t);
  k.dot_rows = &K::dot_rows;
  k.quantize_act = &K::quantize_act;
  k.act_row_bytes = &K::act_row_bytes;
  return k;
}

// Precision::FAST: int8 activations where the type has them (BF16: BF16 activations), else the
// exact row.
constexpr CpuTypeKernels fast_kernels_of(DType t) {
  switch (t) {
    case DType::Q4_0: return int8_kernels<LegacyInt8<UnpackQ4_0>>(t);
    case DType::Q8_0: return int8_kernels<LegacyInt8<UnpackQ8_0>>(t);
    case DType::Q4_K: return int8_kernels<KQuantInt8<LevelsQ4_K>>(t);
    case DType::Q5_K: return int8_kernels<KQuantInt8<LevelsQ5_K>>(t);
    case DType::Q6_K: return int8_kernels<KQuantInt8<LevelsQ6_K>>(t);
    case DType::BF16: return int8_kernels<Bf16Fast>(t);
    case DType::F32:
    case DType::F16:
    case DType::I32:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: return kernels_of(t);
  }
  return kernels_of(t);
}

template <bool Fast>
constexpr std::array<CpuTypeKernels, kDTypeCount> make_table() {
  std::array<CpuTypeKernels, kDTypeCount> t{};
  for (int i = 0; i < kDTypeCount; ++i)
    t[static_cast<size_t>(i)] = Fast ? fast_kernels_of(static_cast<DType>(i)) : kernels_of(static_cast<DType>(i));
  return t;
}

constexpr std::array<CpuTypeKernels, kDTypeCount> kKernels = make_table<false>();
constexpr std::array<CpuTypeKernels, kDTypeCount> kFastKernels = make_table<true>();

}  // namespace

DotTileShape dot_tile_shape() { return {kBlockW, kBlockX}; }
DotTileShape slab_tile_shape() { return {kSlabTileW, kSlabTileX}; }

const CpuTypeKernels& cpu_type_kernels(DType t, Precision p) {
  return (p == Precision::FAST ? kFastKernels : kKernels)[static_cast<size_t>(t)];
}

bool supports_node(const Tensor& node) {
  if (node.op != Op::MUL_MAT && node.op != Op::MUL_MAT_ID) return true;
  const CpuTypeKernels& k = cpu_type_kernels(node.src[0]->type);
  return k.dot_rows != nullptr && k.act_type == dtype_traits(node.src[0]->type).vec_dot_type;
}

}  // namespace gl::cpu
