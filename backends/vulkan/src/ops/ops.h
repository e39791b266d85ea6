// ops.h - the op families: each records a node's dispatches and answers supports() for its ops.
//
//   if (supports_elementwise(node)) binary(rec, node);
//
// A family's supports_* is the contract: a node it accepts must record correctly; anything else
// runs on the CPU (the scheduler's fallback).
#pragma once

#include <cstddef>
#include <span>

#include "ggml-lite/tensor.h"
#include "recorder.h"

namespace gl::vulkan {

// elementwise.cpp: ADD, SUB, MUL, DIV, SCALE, SILU, SIGMOID, SOFTPLUS, EXP, SWIGLU.
bool supports_elementwise(const Tensor& node);
void elementwise(Recorder& rec, const Tensor& node);
// A run of 2 or 3 elementwise nodes at the front of nodes, each reading the one before, all dense
// F32 of one shape (a binary node's other operand too), as one dispatch that writes every node's
// output: how many nodes it recorded (0: none).
size_t elementwise_chain(Recorder& rec, std::span<Tensor* const> nodes);

// What the fused records (norm_fused, elementwise_chain) ask of their tensors (norm.cpp).
bool dense_f32(const Tensor& t);
// Disjoint memory.
bool apart(const Tensor& x, const Tensor& y);
// Disjoint memory, or the same memory in place (same shape).
bool in_place_or_apart(const Tensor& x, const Tensor& y);

// norm.cpp: RMS_NORM, L2_NORM, SOFTMAX.
bool supports_norm(const Tensor& node);
void norm(Recorder& rec, const Tensor& node);
// A layer's [ADD (residual),] RMS_NORM / L2_NORM, MUL (by a weight row) at the front of nodes, all
// dense F32 with rows of at most 4,096, as one dispatch that writes every node's output: how many
// nodes it recorded (0: none, record nodes[0] on its own). Saves the pipeline drains between them
// (~5 us each on the H100).
size_t norm_fused(Recorder& rec, std::span<Tensor* const> nodes);
void softmax(Recorder& rec, const Tensor& node);

// rope.cpp: ROPE (its workspace holds the inverse frequencies).
bool supports_rope(const Tensor& node);
size_t rope_workspace(const Tensor& node);
void rope(Recorder& rec, const Tensor& node);

// layout.cpp: GET_ROWS, SET_ROWS, CONT, CPY, CONCAT (F32, F16, BF16, I32).
bool supports_layout(const Tensor& node);
void get_rows(Recorder& rec, const Tensor& node);
void set_rows(Recorder& rec, const Tensor& node);
void copy(Recorder& rec, const Tensor& node);

// reduce.cpp: ARGMAX, TOP_K, SUM_ROWS (a long ARGMAX row's workspace holds per-segment picks).
bool supports_reduce(const Tensor& node);
size_t reduce_workspace(const Tensor& node);
void reduce(Recorder& rec, const Tensor& node);

// ssm.cpp: SSM_CONV, GATED_DELTA_RULE.
bool supports_ssm(const Tensor& node);
void ssm_conv(Recorder& rec, const Tensor& node);
void gated_delta_rule(Recorder& rec, const Tensor& node);

// gdr_chunked.cpp: GATED_DELTA_RULE for prefill (its workspace holds the per-chunk matrices).
bool gdr_chunked(const Tensor& node);
size_t gdr_chunked_workspace(const Tensor& node);  // 0 where gdr_chunked(node) is false
void gated_delta_rule_chunked(Recorder& rec, const Tensor& node);

// matmul.cpp: MUL_MAT, MUL_MAT_ID (F32, F16, BF16 and quantized weights but MXFP4).
bool supports_matmul(const Tensor& node);
void mul_mat(Recorder& rec, const Tensor& node);
// Split-K partial sums of a prefill product on tensor cores with few weight rows; else 0.
size_t matmul_workspace(const Device& dev, const Tensor& node);

// attention.cpp: FLASH_ATTN (its workspace holds the scores).
bool supports_flash_attn(const Device& dev, const Tensor& node);
size_t flash_attn_workspace(const Device& dev, const Tensor& node);
void flash_attn(Recorder& rec, const Tensor& node);

}  // namespace gl::vulkan
