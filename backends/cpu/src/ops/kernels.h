// kernels.h - CPU reference kernels, one entry per op family (backends/cpu/src/ops/*.cpp).
//
// Each entry computes dst from dst.src[] honouring ne/nb strides of every
// tensor; it parallelises over rows with OpenMP and never allocates
// arena memory. Entries switch on dst.op where one family covers several ops.
#pragma once

#include "ggml-lite/backend.h"
#include "ggml-lite/tensor.h"

namespace gl::cpu {

void binary(Tensor& dst);  // ADD, SUB, MUL, DIV (broadcasting)
void unary(Tensor& dst);   // SCALE, SILU, SIGMOID, SOFTPLUS, EXP
void swiglu(Tensor& dst);  // SWIGLU
void norm(Tensor& dst);    // RMS_NORM, L2_NORM
// MUL_MAT, MUL_MAT_ID. FAST: weights with an int8 kernel (dtype_kernels.h) multiply activation
// rows quantized to int8 blocks; other weights, and EXACT, take the exact path.
void mul_mat(Tensor& dst, Precision precision = Precision::EXACT);
void mul_mat_id(Tensor& dst, Precision precision = Precision::EXACT);
void softmax(Tensor& dst);  // SOFTMAX
// FLASH_ATTN. FAST: attention_fast.h over dense F32 or F16 K/V rows (other layouts exact).
void flash_attn(Tensor& dst, Precision precision = Precision::EXACT);
void rope(Tensor& dst);              // ROPE
void get_rows(Tensor& dst);          // GET_ROWS
void set_rows(Tensor& dst);          // SET_ROWS
void concat(Tensor& dst);            // CONCAT
void copy(Tensor& dst);              // CONT, CPY
void argmax(Tensor& dst);            // ARGMAX
void top_k(Tensor& dst);             // TOP_K
void sum_rows(Tensor& dst);          // SUM_ROWS
void ssm_conv(Tensor& dst);          // SSM_CONV
void gated_delta_rule(Tensor& dst);  // GATED_DELTA_RULE

}  // namespace gl::cpu
