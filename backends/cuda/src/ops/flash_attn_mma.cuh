// flash_attn_mma.cuh - FLASH_ATTN of many query rows on tensor cores, flash_attn_mma.cu.
#pragma once

#include "../common.cuh"
#include "ggml-lite/tensor.h"

namespace gl::cuda {

// True when dst suits the tensor-core kernel: K and V dense F16 rows (the F16 KV cache) on 16-byte
// boundaries with Dk == Dv in {64, 128, 256}, an F32 mask of dense rows or none, F32 output, one
// batch. flash_attn() takes it for prefill rows, and for decode and verify rows in key splits.
bool flash_attn_mma_fits(const Tensor& dst);
// Keys a block takes of a row's span when the span is cut into splits (decode and verify rows).
constexpr int64_t kMmaSplitKeys = 256;
// False (nothing launched) when the device's shared memory per block is too small for the head size.
// n_split > 1: block z takes keys [z kMmaSplitKeys, (z + 1) kMmaSplitKeys) of every row and leaves
// its state in part (per (token, head, split): max, sum, Dv outputs) for flash_attn.cu's merge.
bool flash_attn_mma(const Ctx& ctx, Tensor& dst, int64_t n_split = 1, float* part = nullptr);

}  // namespace gl::cuda
