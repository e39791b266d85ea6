// quants.cpp - the table of reference quantized types (quants/quants.h).
#include "ggml-lite/quants/quants.h"

#include <array>

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
#include "ggml-lite/quants/q8_k.h"

namespace gl {
namespace {

// Type-erases a typed row pair; the function pointers are exactly the typed ones.
template <class Block, void (*Dequant)(const Block*, float*, int64_t), void (*Quant)(const float*, Block*, int64_t)>
constexpr QuantRef make_ref(std::string_view name, uint32_t ggml_type, int64_t block_size) {
  return {name,
          ggml_type,
          block_size,
          sizeof(Block),
          [](const void* src, float* dst, int64_t n) { Dequant(static_cast<const Block*>(src), dst, n); },
          [](const float* src, void* dst, int64_t n) { Quant(src, static_cast<Block*>(dst), n); },
          nullptr};
}

template <class Block, void (*Dequant)(const Block*, float*, int64_t), void (*Quant)(const float*, Block*, int64_t),
          void (*QuantW)(const float*, Block*, int64_t, const float*)>
constexpr QuantRef make_ref_imatrix(std::string_view name, uint32_t ggml_type, int64_t block_size) {
  QuantRef r = make_ref<Block, Dequant, Quant>(name, ggml_type, block_size);
  r.from_float_imatrix = [](const float* src, void* dst, int64_t n, const float* qw) {
    QuantW(src, static_cast<Block*>(dst), n, qw);
  };
  return r;
}

constexpr std::array kRefs{
    make_ref<BlockQ4_0, dequantize_row_q4_0, quantize_row_q4_0>("q4_0", kQ4_0GgmlType, kQ4_0Block),
    make_ref<BlockQ4_1, dequantize_row_q4_1, quantize_row_q4_1>("q4_1", kQ4_1GgmlType, kQ4_1Block),
    make_ref<BlockQ5_0, dequantize_row_q5_0, quantize_row_q5_0>("q5_0", kQ5_0GgmlType, kQ5_0Block),
    make_ref<BlockQ5_1, dequantize_row_q5_1, quantize_row_q5_1>("q5_1", kQ5_1GgmlType, kQ5_1Block),
    make_ref<BlockQ2_K, dequantize_row_q2_k, quantize_row_q2_k>("q2_K", kQ2_KGgmlType, kQ2_KBlock),
    make_ref<BlockQ3_K, dequantize_row_q3_k, quantize_row_q3_k>("q3_K", kQ3_KGgmlType, kQ3_KBlock),
    make_ref_imatrix<BlockQ4_K, dequantize_row_q4_k, quantize_row_q4_k, quantize_row_q4_k_imatrix>(
        "q4_K", kQ4_KGgmlType, kQ4_KBlock),
    make_ref_imatrix<BlockQ5_K, dequantize_row_q5_k, quantize_row_q5_k, quantize_row_q5_k_imatrix>(
        "q5_K", kQ5_KGgmlType, kQ5_KBlock),
    make_ref_imatrix<BlockQ6_K, dequantize_row_q6_k, quantize_row_q6_k, quantize_row_q6_k_imatrix>(
        "q6_K", kQ6_KGgmlType, kQ6_KBlock),
    make_ref<BlockQ8_K, dequantize_row_q8_k, quantize_row_q8_k>("q8_K", kQ8_KGgmlType, kQ8_KBlock),
    make_ref<BlockIQ4_NL, dequantize_row_iq4_nl, quantize_row_iq4_nl>("iq4_nl", kIQ4_NLGgmlType, kIQ4_NLBlock),
    make_ref<BlockIQ4_XS, dequantize_row_iq4_xs, quantize_row_iq4_xs>("iq4_xs", kIQ4_XSGgmlType, kIQ4_XSBlock),
    make_ref<BlockMXFP4, dequantize_row_mxfp4, quantize_row_mxfp4>("mxfp4", kMXFP4GgmlType, kMXFP4Block),
};

}  // namespace

std::span<const QuantRef> quant_refs() { return kRefs; }

const QuantRef* quant_ref_by_ggml_type(uint32_t ggml_type) {
  for (const QuantRef& r : kRefs)
    if (r.ggml_type == ggml_type) return &r;
  return nullptr;
}

const QuantRef* quant_ref_by_name(std::string_view name) {
  for (const QuantRef& r : kRefs)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace gl
