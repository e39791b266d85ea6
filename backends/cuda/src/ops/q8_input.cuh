// q8_input.cuh - an int8 GEMV input quantized by the kernel that produces it (Precision::FAST).
//
//   if (norm_add_mul(ctx, add, norm, mul, next)) ...  // next: the node after the three
//
// Where next is an int8 GEMV of mul's result with a shared workspace (Backend::workspace_share),
// the fused norm kernel also writes mul's rows as int8 blocks into that workspace, as
// quantize_rows_q8 would, and records them in Ctx::q8, so no product of that input launches the
// quantization (ncu: 3.6 us a launch, 64 of the 129 a 9B decode step had follow a norm).
#pragma once

#include "../common.cuh"

namespace gl::cuda {

// Where the int8 rows of x go when next (the node after x's producer) is an int8 GEMV of x with a
// shared workspace: that workspace; else nullptr.
char* q8_input_target(const Ctx& ctx, const Tensor& x, const Tensor* next);

// Bytes of x's rows as int8 blocks (quantize_rows_q8's layout, matmul_gemv_q8.cu).
size_t q8_rows_bytes(const Tensor& x);

// Whether the bytes [p, p + n) and [q, q + qn) share one (an empty range shares none).
inline bool bytes_overlap(const void* p, size_t n, const void* q, size_t qn) {
  const char* a = static_cast<const char*>(p);
  const char* b = static_cast<const char*>(q);
  return n > 0 && qn > 0 && a < b + qn && b < a + n;
}

// kernels.cuh's norm_mul and norm_add_mul, also writing mul's int8 rows where next takes them.
bool norm_mul(const Ctx& ctx, Tensor& norm, Tensor& mul, const Tensor* next);
bool norm_add_mul(const Ctx& ctx, Tensor& add, Tensor& norm, Tensor& mul, const Tensor* next);

}  // namespace gl::cuda
