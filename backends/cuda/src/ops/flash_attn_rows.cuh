// flash_attn_rows.cuh - FLASH_ATTN of many query rows (prefill), flash_attn_rows.cu.
#pragma once

#include "../common.cuh"
#include "ggml-lite/tensor.h"

namespace gl::cuda {

// True when dst suits blocks of 32 query rows of one kv head: head sizes up to 256, Dk a multiple
// of 4, one batch. flash_attn() takes it for rows beyond its decode/verify split path.
bool flash_attn_rows_fits(const Tensor& dst);
void flash_attn_rows(const Ctx& ctx, Tensor& dst);

}  // namespace gl::cuda
