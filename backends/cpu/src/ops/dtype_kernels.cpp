// dtype_kernels.cpp - the table of CPU kernels per weight dtype (see dtype_kernels.h).
//
// The switch in kernels_of() has no default, so a DType added to the enum does not compile until
// it has a row here (-Werror=switch); a row with null kernels is a type the CPU refuses.
#include "dtype_kernels.h"

#include <array>
#include <cstring>

#include "dot_tiles.h"
#include "ggml-lite/quants/iq4_nl.h"
#include "ggml-lite/quants/iq4_xs.h"
#include "ggml-lite/quants/mxfp4.h"
#include "ggml-lite/quants/q2_k.h"
#include "ggml-lite/quants/q3_k.h"
#include "ggml-lite/quants/q4_0.h"
#include "ggml-lite/quants/q4_1.h"
#include "ggml-lite/quants/q4_k.h"
#include "ggml-lite/quants/q5_0.h"
#include "ggml-lite/quants/q5_1.h"
#include "ggml-lite/quants/q5_k.h"
#include "ggml-lite/quants/q6_k.h"
#include "matmul.h"
#include "quants/dequant_tiles.h"

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

// A llama.cpp quant type: its reference dequantizer per chunk, F32 activations (the exact path).
template <class Block, void (*Dequant)(const Block*, float*, int64_t), int64_t kBlock>
constexpr CpuTypeKernels dequant_kernels() {
  using K = DequantKernels<Block, Dequant, kBlock>;
  return {&K::row_to_f32, &K::dot_rows, DType::F32};
}

constexpr CpuTypeKernels kernels_of(DType t) {
  switch (t) {
    case DType::F32: return {&f32_row_to_f32, &dot_rows_f32x<DType::F32>, DType::F32};
    case DType::F16: return f32_act_kernels<DType::F16>();
    case DType::BF16: return f32_act_kernels<DType::BF16>();
    case DType::Q8_0: return f32_act_kernels<DType::Q8_0>();
    case DType::I32: return {};  // indices, never a weight
    case DType::Q4_0: return dequant_kernels<BlockQ4_0, dequantize_row_q4_0, kQ4_0Block>();
    case DType::Q4_1: return dequant_kernels<BlockQ4_1, dequantize_row_q4_1, kQ4_1Block>();
    case DType::Q5_0: return dequant_kernels<BlockQ5_0, dequantize_row_q5_0, kQ5_0Block>();
    case DType::Q5_1: return dequant_kernels<BlockQ5_1, dequantize_row_q5_1, kQ5_1Block>();
    case DType::Q2_K: return dequant_kernels<BlockQ2_K, dequantize_row_q2_k, kQ2_KBlock>();
    case DType::Q3_K: return dequant_kernels<BlockQ3_K, dequantize_row_q3_k, kQ3_KBlock>();
    case DType::Q4_K: return dequant_kernels<BlockQ4_K, dequantize_row_q4_k, kQ4_KBlock>();
    case DType::Q5_K: return dequant_kernels<BlockQ5_K, dequantize_row_q5_k, kQ5_KBlock>();
    case DType::Q6_K: return dequant_kernels<BlockQ6_K, dequantize_row_q6_k, kQ6_KBlock>();
    case DType::IQ4_NL: return dequant_kernels<BlockIQ4_NL, dequantize_row_iq4_nl, kIQ4_NLBlock>();
    case DType::IQ4_XS: return dequant_kernels<BlockIQ4_XS, dequantize_row_iq4_xs, kIQ4_XSBlock>();
    case DType::MXFP4: return dequant_kernels<BlockMXFP4, dequantize_row_mxfp4, kMXFP4Block>();
  }
  return {};
}

constexpr std::array<CpuTypeKernels, kDTypeCount> make_table() {
  std::array<CpuTypeKernels, kDTypeCount> t{};
  for (int i = 0; i < kDTypeCount; ++i) t[static_cast<size_t>(i)] = kernels_of(static_cast<DType>(i));
  return t;
}

constexpr std::array<CpuTypeKernels, kDTypeCount> kKernels = make_table();

}  // namespace

DotTileShape dot_tile_shape() { return {kBlockW, kBlockX}; }

const CpuTypeKernels& cpu_type_kernels(DType t) { return kKernels[static_cast<size_t>(t)]; }

bool supports_node(const Tensor& node) {
  if (node.op != Op::MUL_MAT && node.op != Op::MUL_MAT_ID) return true;
  const CpuTypeKernels& k = cpu_type_kernels(node.src[0]->type);
  return k.dot_rows != nullptr && k.act_type == dtype_traits(node.src[0]->type).vec_dot_type;
}

}  // namespace gl::cpu
