// mma_sync.cuh - warp-level tensor-core and async-copy primitives (sm_80+ PTX): ldmatrix,
// mma.sync m16n8k16 (f16 in, f32 accumulate) and cp.async with zero fill.
//
// Fragment layouts of mma.m16n8k16.row.col (lane = 4 g + t):
//   A (16 x 16, 4 regs of 2 halves): a0 (row g, cols 2t, 2t+1), a1 (row g + 8, same cols),
//                                    a2 (row g, cols 2t + 8, +9), a3 (row g + 8, same cols);
//   B (16 x 8, 2 regs): b0 (rows 2t, 2t+1 of col g), b1 (rows 2t + 8, +9 of col g);
//   C (16 x 8, 4 floats): c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g + 8, same cols).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace gl::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8 x 8 matrices of halves; lane i gives the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// The same, each matrix transposed.
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a * b.
__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes from global to shared memory, of which the first src_bytes (0..16) are read and the
// rest zero-filled.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

// 4 bytes, or 4 zero bytes when src_bytes is 0.
__device__ __forceinline__ void cp_async4(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// Two floats as halves (x in the low half), rounded to nearest even.
__device__ __forceinline__ uint32_t pack_half2(float x, float y) {
  const __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// x = hi + lo as two half pairs: hi = half(x), lo = half(x - hi). Their sum carries ~22 bits of
// x's mantissa, so hi * b + lo * b on the tensor cores is within f32 rounding of x * b for a
// half b (below half's normal range, 2^-14, lo keeps 2^-24 absolute).
__device__ __forceinline__ void split_half2(float x, float y, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x, y);
  const float2 f = __half22float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_half2(x - f.x, y - f.y);
}

}  // namespace gl::cuda
