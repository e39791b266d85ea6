// flash_attn_mma.cuh - FLASH_ATTN of many query rows on tensor cores, flash_attn_mma.cu.
#pragma once

#include "../common.cuh"
#include "ggml-lite/tensor.h"

namespace gl::cuda {

// True when dst suits the tensor-core kernel: K and V dense F16 rows (the F16 KV cache) on 16-byte
// boundaries with Dk == Dv in {64, 128, 256}, an F32 mask of dense rows or none, F32 output, one
// batch. flash_attn() takes it for prefill rows; flash_attn_rows.cu takes the rest.
bool flash_attn_mma_fits(const Tensor& dst);
// False (nothing launched) when the device's shared memory per block is too small for the head size.
bool flash_attn_mma(const Ctx& ctx, Tensor& dst);

}  // namespace gl::cuda
