// attention_fast.h - FLASH_ATTN under Precision::FAST (attention_fast.cpp).
#pragma once

#include "ggml-lite/tensor.h"

namespace gl::cpu {

// Keys [0, end) that row t of FLASH_ATTN dst attends to: its causal limit (all keys without one),
// less the tail of its mask row that is -inf (the KV span past the sequence): those keys add
// exactly nothing, so both paths skip them.
int64_t attn_row_end(const Tensor& dst, int64_t t);
// True when dst's operands suit the FAST kernel: F32 q rows; K and V both dense F32 or both dense
// F16 rows; an F32 mask with dense rows (or none); Dk and Dv whole vectors; one batch.
bool flash_attn_fast_fits(const Tensor& dst);
// FLASH_ATTN of dst (flash_attn_fast_fits(dst) must hold).
void flash_attn_fast(Tensor& dst);

}  // namespace gl::cpu
