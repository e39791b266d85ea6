// mm_utils.cuh - helpers shared by the matmul and SSM kernels (matmul*.cu, ssm.cu, gdr.cu).
//
//   gl::cuda::mm::TView w = gl::cuda::mm::view_of(*dst.src[0]);   // device pointer, ne, nb, dtype
//   float f = gl::cuda::mm::load_elem(w, k, n, 0, 0);             // any dtype, any strides
//
// Sources are read through their ne/nb (views, permutes, transposes) and converted to float on
// load; F16/BF16 round trips use the CUDA intrinsics, a quantized type is read through its device
// traits (quants/<type>.cuh), exactly as its reference dequantizer computes it. The GEMV launchers are declared here
// because mul_mat and mul_mat_id share the kernel (matmul_gemv.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "../common.cuh"
#include "dtype_table.cuh"

namespace gl::cuda {
struct Chain;  // chain.cuh
}  // namespace gl::cuda

namespace gl::cuda::mm {

inline constexpr int kWarp = 32;
// Activation rows one GEMV pass handles; more go to cuBLAS (mul_mat) or to row tiles (mul_mat_id).
inline constexpr int kGemvMaxRows = 8;
// Slots per routed tile of mul_mat_id's tensor-core path (matmul_id_mma.cu).
inline constexpr int kMmaTileRows = 32;
static_assert(kMmaTileRows > kGemvMaxRows, "matmul_id.cu tells the two tile paths apart by their rows");
// The most blocks a launch puts along y (CUDA's limit); kernels loop over the rest.
inline constexpr int64_t kMaxGridY = 65535;

template <class T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

// A source tensor as the kernels see it: device pointer, shape and byte strides.
struct TView {
  const char* data;
  int64_t ne[4];
  int64_t nb[4];
  DType type;
};

inline TView view_of(const Tensor& t) {
  TView v{};
  v.data = static_cast<const char*>(t.data);
  for (int i = 0; i < 4; ++i) {
    v.ne[i] = t.ne[i];
    v.nb[i] = static_cast<int64_t>(t.nb[i]);
  }
  v.type = t.type;
  return v;
}

__device__ __forceinline__ float half_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }

// One scalar of a plain float type (F32, F16, BF16) at p; 0 for any other type.
__device__ __forceinline__ float load_scalar(DType t, const char* p) {
  if (t == DType::F32) return *reinterpret_cast<const float*>(p);
  if (t == DType::F16) return half_bits_to_f32(*reinterpret_cast<const uint16_t*>(p));
  if (t == DType::BF16) return bf16_bits_to_f32(*reinterpret_cast<const uint16_t*>(p));
  return 0.0f;
}

// Element (i0, i1, i2, i3) of any supported weight or activation dtype, as float. Quantized rows
// are read as dense rows (blocks adjacent), as the GEMV chunks read them.
__device__ __forceinline__ float load_elem(const TView& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const char* row = t.data + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
  if (is_quant_type(t.type)) return load_quant_dense(t.type, row, i0);
  return load_scalar(t.type, row + i0 * t.nb[0]);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = kWarp / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Key head sizes (Dk) up to this run in gdr.cu's recurrent kernel (state rows held in registers).
inline constexpr int64_t kMaxGdrDk = 256;

// mul_mat_id: up to this many tokens each slot (u, t) is its own GEMV (matmul_id.cu).
inline constexpr int64_t kIdDirectMaxTokens = 8;

// mul_mat_id routes on the device with one counter per expert in shared memory.
inline constexpr int64_t kMaxIdExperts = 2048;

// Row tiles of a grouped mul_mat_id, built on the device by matmul_id.cu: tile i multiplies expert
// tile_expert[i] with the activation rows slots[tile_begin[i] .. + tile_count[i]) (slot = t * U + u).
// Tiles at or past *n_tiles are empty.
struct IdTiles {
  const int32_t* slots = nullptr;
  const int32_t* tile_expert = nullptr;
  const int32_t* tile_begin = nullptr;
  const int32_t* tile_count = nullptr;
  const int32_t* n_tiles = nullptr;
  int64_t max_tiles = 0;
};

// matmul_gemv.cu. dst = w^T x for x with at most kGemvMaxRows rows per batch, any w dtype/strides.
void gemv_mul_mat(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst);
// The same for a 2-D product, each output then carried through chain (element (n, m) of its
// [N, M] shape) by the thread that wrote it (see mul_mat_chain in matmul.cu).
void gemv_mul_mat_chain(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst, const Chain& chain);
// matmul_gemv.cu. Two 2-D products of the same x (at most kTwinMaxRows rows), weights of one
// type and layout, each carried through its own chain, as one launch (TwinRows in
// gemv_kernel.cuh; see mul_mat_twin in matmul.cu). Each output has its own launch's bits.
inline constexpr int64_t kTwinMaxRows = 4;
void gemv_mul_mat_twin(const Ctx& ctx, const Tensor& wa, const Tensor& wb, const Tensor& x, Tensor& a, Tensor& b,
                       const Chain& chain_a, const Chain& chain_b);
// matmul_gemv.cu. mul_mat_id as one single-row GEMV per (u, t) slot (tiles == nullptr), or one
// GEMV of up to kGemvMaxRows rows per tile of slots routed to the same expert.
void gemv_mul_mat_id(const Ctx& ctx, const Tensor& experts, const Tensor& x, const Tensor& ids, Tensor& dst,
                     const IdTiles* tiles);

// matmul_gemv.cu. An FFN's gate and up products of the same x (2-D, or mul_mat_id's slots of at
// most kGemvMaxRows tokens) as one GEMV launch (PairRows in gemv_kernel.cuh): gate and up get their
// own launches' bits, act = swiglu(gate, up) as its kernel computes it. The weights share type and
// layout. Under Precision::FAST the int8 rows are gate's workspace.
void gemv_mul_mat_pair(const Ctx& ctx, const Tensor& wg, const Tensor& wu, const Tensor& x, Tensor& gate, Tensor& up,
                       Tensor& act);
void gemv_mul_mat_id_pair(const Ctx& ctx, const Tensor& eg, const Tensor& eu, const Tensor& x, const Tensor& ids,
                          Tensor& gate, Tensor& up, Tensor& act);

// matmul_id_mma.cu. Whether mul_mat_id's routed tiles of these experts and activations can go to
// tensor cores (F16, BF16 and quantized experts, F32 activation rows), and the launch over tiles
// of up to kMmaTileRows slots.
// The activations rounded once for every tile (act: mma_id_act_bytes of workspace).
bool mma_id_supported(const Tensor& experts, const Tensor& x);
size_t mma_id_act_bytes(const Tensor& x);
void mma_mul_mat_id(const Ctx& ctx, const Tensor& experts, const Tensor& x, Tensor& dst, const IdTiles& tiles,
                    void* act);

// matmul_q8_mma.cu. 2-D Q8_0 products of more than kGemvMaxRows F32 rows on tensor cores: the
// quants as F16 operands, each block's scale applied to its partial sums. xh is x rounded to F16
// (dense [K, M]), xl its residue (or null: one product). Supported for rows on 16 bytes
// (K % 256 == 0) at a 16-byte aligned address.
bool q8_mma_supported(const Tensor& w, const Tensor& x);
// Whether its output tiles fill the device and the device gives a block the shared memory it needs
// (else cuBLAS).
bool q8_mma_fills(const Ctx& ctx, const Tensor& w, const Tensor& x);
void q8_mma_mul_mat(const Ctx& ctx, const Tensor& w, const __half* xh, const __half* xl, Tensor& dst);

// matmul_f32.cu. Small F32 weight matrices (the MoE router, the shared expert's gate) times more
// than kGemvMaxRows activation rows: a tiled CUDA-core kernel instead of cuBLAS's pedantic SGEMM.
inline constexpr size_t kF32TiledMaxBytes = size_t{8} << 20;
inline constexpr int64_t kF32TiledMinRows = 32;
bool f32_tiled_supported(const Tensor& w, const Tensor& x, const Tensor& dst);
void f32_tiled_mul_mat(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst);

// matmul_gemv_q8.cu. Weight types whose GEMV multiplies int8 activations under Precision::FAST.
bool q8_gemv_type(DType w);
// Bytes of one quantized activation row of length k (k % 32 == 0): k int8 quants, then k / 32
// float scales, padded to 16 bytes.
int64_t q8_row_stride(int64_t k);
// Workspace for x's rows quantized (0 when w's type has no int8 GEMV).
size_t q8_act_bytes(DType w, const Tensor& x);
// x's rows (i1 fastest, then i2, i3), each quantized on its own, into dst at q8_row_stride(k).
void quantize_rows_q8(const Ctx& ctx, const Tensor& x, char* dst);

// Block `block` of a row of quantize_rows_q8's layout (row: ne0 int8, then a float d a block), a
// warp's lane l holding its element 32 block + l: d = max|v| / 127, q = round(v / d) in [-127, 127].
__device__ __forceinline__ void warp_quantize_q8(float v, char* row, int64_t ne0, int64_t block, int lane) {
  float amax = fabsf(v);
#pragma unroll
  for (int off = kWarp / 2; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float d = __fdiv_rn(amax, 127.0f);
  const int q = amax > 0.0f ? __float2int_rn(__fdiv_rn(v, d)) : 0;
  row[kWarp * block + lane] = static_cast<char>(max(-127, min(127, q)));
  if (lane == 0) reinterpret_cast<float*>(row + ne0)[block] = d;
}

}  // namespace gl::cuda::mm
