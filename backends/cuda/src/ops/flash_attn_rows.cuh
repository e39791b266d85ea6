// flash_attn_rows.cuh - FLASH_ATTN of many query rows (prefill), flash_attn_rows.cu.
#pragma once

#include <cstdint>

#include "../common.cuh"
#include "ggml-lite/tensor.h"

namespace gl::cuda {

// Rows (dims 1 and 2: kv heads, keys) that start on 16-byte boundaries: the attention kernels'
// vector loads of K and V rows.
inline bool rows_on_16_bytes(const Tensor& t) {
  return (reinterpret_cast<uintptr_t>(t.data) | t.nb[1] | t.nb[2]) % 16 == 0;
}

// True when dst suits blocks of 32 query rows of one kv head: head sizes up to 256, Dk a multiple
// of 4, one batch. flash_attn() takes it for rows beyond its decode/verify split path.
bool flash_attn_rows_fits(const Tensor& dst);
void flash_attn_rows(const Ctx& ctx, Tensor& dst);

}  // namespace gl::cuda
