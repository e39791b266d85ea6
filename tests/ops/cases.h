// cases.h - the op cases, one function per op family, and the thresholds they share.
//
//   for (const gl::test::OpCase& c : gl::test::all_cases()) run_case(c, *backend);
//
// Adding an op: a case in its family's file (the coverage test fails until one
// exists). Every threshold carries a one-line justification; a case that needs
// a different one says why next to it.
#pragma once

#include <string>
#include <vector>

#include "common/harness.h"
#include "ggml-lite/ops.h"

namespace gl::test {

// -- thresholds (NMSE = sum((got - want)^2) / sum(want^2) against float64) -----
// One correctly rounded f32 op, or a libm call within a few ulp, per element: NMSE ~1e-15.
inline constexpr double kNmseF32 = 1e-12;
// f32 sums of up to 4096 products/terms: relative error ~sqrt(K) * 2^-24 ~ 4e-6, NMSE ~1e-11.
inline constexpr double kNmseF32Sum = 1e-9;
// Result rounded to f16 (11 significant bits): per-element relative error <= 2^-11, NMSE ~3e-8.
inline constexpr double kNmseF16Out = 1e-6;
// Result rounded to bf16 (8 significant bits): relative error <= 2^-8, NMSE ~2e-6.
inline constexpr double kNmseBf16Out = 2e-5;
// Result quantized to Q8_0: error <= d/2, d = max|x|/127 per block; for |x| in [0.1, 1] NMSE ~1.4e-5.
inline constexpr double kNmseQ8Out = 1e-4;
// Pure data movement (gathers, copies to the same or a wider type, exact dequantization): bit-exact.
inline constexpr double kExact = 0.0;

// The llama.cpp quant family (weights only: MUL_MAT, MUL_MAT_ID, GET_ROWS). The harness fills them
// with the reference quantizer and compares against float64 on the reference-dequantized weights.
inline constexpr DType kQuantFamily[] = {DType::Q4_0, DType::Q4_1,   DType::Q5_0,   DType::Q5_1,
                                         DType::Q2_K, DType::Q3_K,   DType::Q4_K,   DType::Q5_K,
                                         DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};

// Exact equality for I32 outputs (argmax/top_k indices).
std::string compare_indices(const RefArray& got, const RefArray& want);

// Families (one file each).
std::vector<OpCase> elementwise_cases();  // cases_elementwise.cpp: binary, unary, swiglu
std::vector<OpCase> matmul_cases();       // cases_matmul.cpp: mul_mat, mul_mat_id
std::vector<OpCase> layout_cases();       // cases_layout.cpp: get/set_rows, concat, views, cont, cpy
std::vector<OpCase> attention_cases();    // cases_attention.cpp: softmax, rope
std::vector<OpCase> reduce_cases();       // cases_reduce.cpp: norms, argmax, top_k, sum_rows
std::vector<OpCase> ssm_cases();          // cases_ssm.cpp: ssm_conv, gated_delta_rule

// The registry: every family above, in order.
std::vector<OpCase> all_cases();

}  // namespace gl::test
