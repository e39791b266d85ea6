// cuda_utils.cuh - what the CUDA op kernels share: a tensor passed by value, element loads and
// stores in every dtype, the row-group launch geometry and the row-group reduction.
//
//   const TensorArg x = arg(*dst.src[0]);               // data, ne, nb (bytes), dtype
//   const RowLaunch l = row_launch(x.ne[0], nrows(dst));  // threadIdx.x walks a row, threadIdx.y picks it
//   my_kernel<<<l.grid, l.block, 0, ctx.stream>>>(x, ...);
//
// Kernels address elements through byte strides, like the CPU reference, so every view (permuted,
// transposed, strided rows) works without a copy. Conversions match ggml-lite/src/dtype.cpp bit for
// bit: F16 and BF16 stores round to nearest even, F32 -> I32 truncates, and a quantized type
// converts through its device traits (quants/<type>.cuh, dispatched by dtype_table.cuh), which
// mirror its reference functions in ggml-lite/src/quants/.
// One row group (blockDim.x threads, a power of two from 32 to 1024) owns a row, so a row's result
// never depends on how many rows the batch has (batch invariance for speculative verify).
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "../common.cuh"
#include "dtype_table.cuh"

namespace gl::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;
// Grid cap: kernels stride over rows, so a larger grid would only add idle blocks.
inline constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// A tensor as a kernel sees it; nb in bytes (for a quantized type, nb[0] is the block stride).
struct TensorArg {
  char* data;
  int64_t ne[kMaxDims];
  int64_t nb[kMaxDims];
  DType type;
};

inline TensorArg arg(const Tensor& t) {
  TensorArg a{};
  a.data = static_cast<char*>(t.data);
  for (int d = 0; d < kMaxDims; ++d) {
    a.ne[d] = t.ne[d];
    a.nb[d] = static_cast<int64_t>(t.nb[d]);
  }
  a.type = t.type;
  return a;
}

inline bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
inline bool is_plain_type(DType t) { return !dtype_traits(t).is_quant; }
// Quantized rows are only handled with adjacent blocks (the CPU reference asserts the same).
inline bool dense_quant_rows(const Tensor& t) {
  const DTypeTraits& tr = dtype_traits(t.type);
  return !tr.is_quant || (t.nb[0] == tr.block_bytes && t.ne[0] % tr.block_size == 0);
}

// ---- launch geometry ---------------------------------------------------------

struct RowLaunch {
  dim3 grid;
  dim3 block;
  int64_t rows;
  bool empty() const { return rows == 0 || grid.x == 0; }
};

// Threads per row: the row length rounded up to a warp multiple power of two, at most max_tx;
// short rows share a 256-thread block (blockDim.y rows per block).
inline RowLaunch row_launch(int64_t ne0, int64_t rows, int max_tx = 256) {
  int tx = 32;
  while (tx < ne0 && tx < max_tx) tx *= 2;
  const int ty = tx >= 256 ? 1 : 256 / tx;
  const int64_t blocks = std::min<int64_t>((rows + ty - 1) / ty, kMaxBlocks);
  return {dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(tx), static_cast<unsigned>(ty)), rows};
}

// Elementwise kernels (no reduction along a row) may also split each row over gridDim.y blocks:
// with few long rows (a decode step's [12288] activation) one block per row leaves the GPU idle.
// Their loops run i0 = first_col() .. by col_stride(), which is threadIdx.x .. by blockDim.x when
// gridDim.y is 1, so every element is still read and written by one thread.
inline RowLaunch elem_launch(int64_t ne0, int64_t rows, int max_tx = 256) {
  constexpr int64_t kTargetBlocks = 528;  // 4 per SM on the H200
  RowLaunch l = row_launch(ne0, rows, max_tx);
  if (l.empty()) return l;
  const int64_t col_blocks = (ne0 + l.block.x - 1) / l.block.x;
  const int64_t want = (kTargetBlocks + l.grid.x - 1) / l.grid.x;
  l.grid.y = static_cast<unsigned>(std::clamp<int64_t>(std::min(col_blocks, want), 1, 65535));
  return l;
}

// Whether the bytes of a and b do not overlap at all (not even as the same elements): what one
// thread writes against what every thread of a fused kernel reads throughout.
inline bool disjoint(const Tensor& a, const Tensor& b) {
  const char* pa = static_cast<const char*>(a.data);
  const char* pb = static_cast<const char*>(b.data);
  return pa + nbytes(a) <= pb || pb + nbytes(b) <= pa;
}

// Whether a fused kernel may write `out` while its other threads still read `in`: their bytes do
// not overlap, or they are the same elements (same pointer, dtype, shape and strides, so each
// thread reads its element before writing it). The planner only promises this node by node: a
// tensor that died at an earlier node of a fused group may lie under a later node's output.
inline bool safe_to_fuse(const Tensor& out, const Tensor& in) {
  if (disjoint(out, in)) return true;
  return out.data == in.data && out.type == in.type && out.ne == in.ne && out.nb == in.nb;
}

// Whether node n touches the bytes of t: its output or a source lies on them (a view of t, or any
// other tensor placed there, a split's staged copy included).
inline bool touches(const Tensor& n, const Tensor& t) {
  auto on_t = [&](const Tensor* x) { return x && x->data && !disjoint(*x, t); };
  if (on_t(&n)) return true;
  for (const Tensor* s : n.src)
    if (on_t(s)) return true;
  return false;
}

// Contiguous F32 at a 16-byte aligned address: readable as float4 from element 0.
inline bool dense_f32(const Tensor& t) {
  return t.type == DType::F32 && is_contiguous(t) && reinterpret_cast<uintptr_t>(t.data) % 16 == 0;
}

// ---- indexing ----------------------------------------------------------------

// Row r of a [ne0, ne1, ne2, ne3] walk -> (i1, i2, i3), the CPU's unravel_row.
__device__ __forceinline__ void unravel_row(const int64_t* ne, int64_t r, int64_t& i1, int64_t& i2, int64_t& i3) {
  i1 = r % ne[1];
  i2 = (r / ne[1]) % ne[2];
  i3 = r / (ne[1] * ne[2]);
}

// Flat row-major index f -> (i0, i1, i2, i3) for shape ne.
__device__ __forceinline__ void unravel(const int64_t* ne, int64_t f, int64_t& i0, int64_t& i1, int64_t& i2,
                                        int64_t& i3) {
  i0 = f % ne[0];
  unravel_row(ne, f / ne[0], i1, i2, i3);
}

__device__ __forceinline__ char* row_ptr(const TensorArg& t, int64_t i1, int64_t i2, int64_t i3) {
  return t.data + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

// First row of the block-strided walk owned by this row group (see for_rows in the kernels).
__device__ __forceinline__ int64_t first_row_base() { return static_cast<int64_t>(blockIdx.x) * blockDim.y; }
__device__ __forceinline__ int64_t row_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.y; }
// Column walk of elementwise kernels (see elem_launch).
__device__ __forceinline__ int64_t first_col() { return static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t col_stride() { return static_cast<int64_t>(gridDim.y) * blockDim.x; }

// ---- element conversion (bit-exact with dtype.cpp) ---------------------------

__device__ __forceinline__ float bf16_bits_to_float(uint16_t h) { return __uint_as_float(uint32_t{h} << 16); }

// Round to nearest even; NaN stays a quiet NaN with its upper payload bits (dtype.cpp's fp32_to_bf16).
__device__ __forceinline__ uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float half_bits_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t float_to_half_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }

// Value of a plain (unquantized) element at p; F32 for anything else (callers never pass a
// quantized type: those go through load_elem and the type's traits).
__device__ __forceinline__ float load_plain(DType t, const char* p) {
  // F32 first: it is the hot case (activations), one compare before the load.
  if (t == DType::F32) return *reinterpret_cast<const float*>(p);
  if (t == DType::F16) return half_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
  if (t == DType::BF16) return bf16_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
  if (t == DType::I32) return static_cast<float>(*reinterpret_cast<const int32_t*>(p));
  return *reinterpret_cast<const float*>(p);
}

// Element i0 of a row starting at `row` (any dtype; quantized rows have nb[0] = block stride).
__device__ __forceinline__ float load_elem(const TensorArg& t, const char* row, int64_t i0) {
  if (is_quant_type(t.type)) return load_quant(t.type, row, i0, t.nb[0]);
  return load_plain(t.type, row + i0 * t.nb[0]);
}

// v as it reads back after a store in float dtype t (a register-only round trip).
__device__ __forceinline__ float round_to(DType t, float v) {
  if (t == DType::F16) return half_bits_to_float(float_to_half_bits(v));
  if (t == DType::BF16) return bf16_bits_to_float(float_to_bf16_bits(v));
  return v;
}

// Stores v into a plain element at p in dtype t (F32 -> I32 truncates, as static_cast does); F32
// for anything else (quantized rows are written a block at a time through the type's traits).
__device__ __forceinline__ void store_plain(DType t, char* p, float v) {
  if (t == DType::F32) {
    *reinterpret_cast<float*>(p) = v;
  } else if (t == DType::F16) {
    *reinterpret_cast<uint16_t*>(p) = float_to_half_bits(v);
  } else if (t == DType::BF16) {
    *reinterpret_cast<uint16_t*>(p) = float_to_bf16_bits(v);
  } else if (t == DType::I32) {
    *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v);
  } else {
    *reinterpret_cast<float*>(p) = v;
  }
}

// Copies one plain element from (st, from) to (dt, to): raw bits when the dtypes agree (the CPU's
// memcpy, so I32 and NaN payloads survive), through float otherwise.
__device__ __forceinline__ void convert_plain(DType st, const char* from, DType dt, char* to) {
  if (st == dt) {
    if (st == DType::F16 || st == DType::BF16) {
      *reinterpret_cast<uint16_t*>(to) = *reinterpret_cast<const uint16_t*>(from);
    } else {
      *reinterpret_cast<uint32_t*>(to) = *reinterpret_cast<const uint32_t*>(from);
    }
    return;
  }
  store_plain(dt, to, load_plain(st, from));
}

// ---- row-group reduction -----------------------------------------------------

// (value, index) for argmax/top_k; ranks_before orders by value descending, then index ascending.
struct Ranked {
  float v;
  int32_t i;
};
__device__ __forceinline__ bool ranks_before(Ranked a, Ranked b) { return a.v > b.v || (a.v == b.v && a.i < b.i); }

template <class T>
__device__ __forceinline__ T shfl_xor(T v, int lane_mask) {
  return __shfl_xor_sync(kFullMask, v, lane_mask);
}
template <>
__device__ __forceinline__ Ranked shfl_xor(Ranked r, int lane_mask) {
  return {__shfl_xor_sync(kFullMask, r.v, lane_mask), __shfl_xor_sync(kFullMask, r.i, lane_mask)};
}

// Combines v over the blockDim.x threads of this row group; every thread gets the result.
// scratch: __shared__ T[32]. Every thread of the block must call it (it may __syncthreads).
template <class T, class Op>
__device__ __forceinline__ T group_reduce(T v, Op op, T* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  const int nw = static_cast<int>(blockDim.x) / 32;
  if (nw == 1) return v;
  T* s = scratch + threadIdx.y * nw;  // blockDim.x * blockDim.y <= 1024: at most 32 entries
  __syncthreads();                    // the previous call's readers are done with scratch
  if ((threadIdx.x & 31) == 0) s[threadIdx.x / 32] = v;
  __syncthreads();
  v = s[0];
  for (int w = 1; w < nw; ++w) v = op(v, s[w]);  // fixed order: the same bits in every lane
  return v;
}

struct SumOp {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }  // NaN never wins
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};
struct RankOp {
  __device__ Ranked operator()(Ranked a, Ranked b) const { return ranks_before(a, b) ? a : b; }
};

}  // namespace gl::cuda
