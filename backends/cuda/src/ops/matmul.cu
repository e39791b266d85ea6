// matmul.cu - MUL_MAT on CUDA: the GEMV kernels for a few activation rows, cuBLAS for the rest.
//
// Why two paths: up to kGemvMaxRows rows per batch (decode, MTP verify) the weight read is the whole
// cost and the result must be batch invariant, which the hand-written GEMV (matmul_gemv.cu) gives.
// From there on the product is compute-bound and cuBLAS's tensor-core GEMM wins (STYLE rule 13):
//   * F32 weights: up to kF32TiledMaxBytes a tiled CUDA-core kernel (matmul_f32.cu: the MoE
//     router), above that SGEMM with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no reduced precision);
//   * F16/BF16 weights: activations rounded to the weight format, F32 accumulation;
//   * quantized weights (and any weight layout cuBLAS cannot address): tiles of weight rows
//     converted to F16 (F32 for F32 weights) in scratch, one GEMM per tile; a quantized type
//     dequantizes through its traits (quants/<type>.cuh, dtype_table.cuh).
// The converted activations and weight tile live in the node's workspace (mul_mat_workspace),
// which the memory planner reserves for the node's step: no kernel allocates. Broadcast: x batch b
// reads w batch b / (B / W); the r2 x batches that share a weight matrix are adjacent, so they
// form the columns of one GEMM.
#include <algorithm>
#include <climits>

#include "chain.cuh"
#include "kernels.cuh"
#include "mm_utils.cuh"
#include "q8_input.cuh"
#include "round_to.cuh"

namespace gl::cuda {
namespace {

using mm::ceil_div;
using mm::TView;

// Converted weight tiles stay under this size (bytes).
constexpr int64_t kWeightTileBytes = int64_t{64} << 20;
constexpr int kConvertThreads = 256;
// The weight tile follows the activations in the workspace on the arena's 256-byte grid.
constexpr size_t kWorkspaceAlign = 256;

// x [K, M, B2, B3] (any float dtype, any strides) -> contiguous hi = round(x) in T, and when lo is
// not null lo = round(x - hi): two GEMMs over hi and lo give activations ~16 significant bits
// (BF16) instead of 8, at twice the tensor-core work.
template <class T>
__global__ void convert_x_kernel(TView x, T* hi, T* lo, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % x.ne[0], r = i / x.ne[0];
    const int64_t i1 = r % x.ne[1], i2 = r / x.ne[1] % x.ne[2], i3 = r / (x.ne[1] * x.ne[2]);
    const float v = mm::load_elem(x, k, i1, i2, i3);
    const T h = from_f32<T>(v);
    hi[i] = h;
    if (lo) lo[i] = from_f32<T>(v - static_cast<float>(h));
  }
}

// The same for dense F32 x (the common case: a norm's output), four elements per thread with one
// float4 load and no index arithmetic; n4 = elements / 4.
template <class T>
__global__ void convert_dense_x_kernel(const float4* x, T* hi, T* lo, int64_t n4) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n4; i += int64_t{gridDim.x} * blockDim.x) {
    const float4 v = x[i];
    const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const T h = from_f32<T>(f[e]);
      hi[4 * i + e] = h;
      if (lo) lo[4 * i + e] = from_f32<T>(f[e] - static_cast<float>(h));
    }
  }
}

// Weight rows [n0, n0 + tn) of batch (w2, w3) -> contiguous T [K, tn].
template <class T>
__global__ void convert_w_kernel(TView w, int64_t n0, int64_t tn, int64_t w2, int64_t w3, T* out) {
  const int64_t n = w.ne[0] * tn;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = from_f32<T>(mm::load_elem(w, i % w.ne[0], n0 + i / w.ne[0], w2, w3));
  }
}

// Weight rows [n0, n0 + tn) of quantized type Q, batch (w2, w3) -> contiguous F16 [K, tn], a pair
// of elements per thread so that both the quant reads and the half2 writes are coalesced. With lo,
// also the rounding residue lo = round(v - hi): hi + lo hold ~22 significant bits, enough for
// every dequantized value (a K-quant's d * sc * q - dmin * m needs up to 21), so the product on
// hi and lo is the product on the exact weights.
template <class Q>
__global__ void dequant_f16_kernel(TView w, int64_t n0, int64_t tn, int64_t w2, int64_t w3, __half2* out, __half2* lo) {
  static_assert(Q::kBlock % 2 == 0, "pairs must not straddle blocks");
  constexpr int kPairs = Q::kBlock / 2;
  const int64_t pairs_per_row = w.ne[0] / 2, n = pairs_per_row * tn;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / pairs_per_row, p = i % pairs_per_row;
    const char* blk =
        w.data + (n0 + row) * w.nb[1] + w2 * w.nb[2] + w3 * w.nb[3] + (p / kPairs) * int64_t{Q::kBlockBytes};
    if (!lo) {
      out[i] = Q::pair_f16(blk, static_cast<int>(p % kPairs));
      continue;
    }
    const int e = 2 * static_cast<int>(p % kPairs);
    const float v0 = Q::elem(blk, e), v1 = Q::elem(blk, e + 1);
    const __half2 h = __floats2half2_rn(v0, v1);
    out[i] = h;
    lo[i] = __floats2half2_rn(v0 - __low2float(h), v1 - __high2float(h));
  }
}

// The same for a type whose GEMV chunk can give its values (Q::chunk_values: the K-quants): a
// thread decodes one chunk, reading each quant byte once as the GEMV does, and stores its runs 8
// halves at a time. (The pair kernel re-reads a block's scales for every two elements: 3.2 ms
// for a 9B Q6_K [4096, 8192] tile at pp512 against 0.3 ms for Q4_K.)
template <class Q>
concept HasChunkValues = requires(const typename Q::Chunk& c, float (&y)[Q::kChunk]) {
  Q::chunk_values(c, y);
};

template <class Q>
constexpr bool has_chunk_values() {
  if constexpr (requires { Q::kChunkValues; }) {
    return Q::kChunkValues;
  } else {
    return false;
  }
}

template <class Q>
__global__ void dequant_chunks_kernel(TView w, int64_t n0, int64_t tn, int64_t w2, int64_t w3, bool vec, __half* out,
                                      __half* lo) {
  constexpr int E = Q::kChunk, L = E / Q::kRuns;
  static_assert(L % 8 == 0, "runs are whole 16-byte stores");
  const int64_t k = w.ne[0], per_row = k / E, n = per_row * tn;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / per_row, c = i % per_row;
    typename Q::Chunk ch;
    Q::load_chunk(w.data + (n0 + row) * w.nb[1] + w2 * w.nb[2] + w3 * w.nb[3], c, ch, vec);
    float y[E];
    Q::chunk_values(ch, y);
#pragma unroll
    for (int r = 0; r < Q::kRuns; ++r)
#pragma unroll
      for (int j = 0; j < L; j += 8) {
        uint32_t hi_w[4], lo_w[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float v0 = y[r * L + j + 2 * e], v1 = y[r * L + j + 2 * e + 1];
          const __half2 h = __floats2half2_rn(v0, v1);
          hi_w[e] = *reinterpret_cast<const uint32_t*>(&h);
          const __half2 l = __floats2half2_rn(v0 - __low2float(h), v1 - __high2float(h));
          lo_w[e] = *reinterpret_cast<const uint32_t*>(&l);
        }
        const int64_t at = row * k + Q::run_start(c, r) + j;
        *reinterpret_cast<uint4*>(out + at) = make_uint4(hi_w[0], hi_w[1], hi_w[2], hi_w[3]);
        if (lo) *reinterpret_cast<uint4*>(lo + at) = make_uint4(lo_w[0], lo_w[1], lo_w[2], lo_w[3]);
      }
  }
}

unsigned convert_blocks(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>(ceil_div<int64_t>(n, kConvertThreads), 65535));
}

// Weight rows [n0, n0 + tn) of quantized type Q -> F16 tile buf (and its residue lo when given).
template <class Q>
void dequant_tile(const Ctx& ctx, const Tensor& w, int64_t n0, int64_t tn, int64_t w2, int64_t w3, void* buf,
                  void* lo) {
  const int64_t k = w.ne[0];
  if constexpr (has_chunk_values<Q>()) {
    const bool vec =
        reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && w.nb[1] % 16 == 0 && w.nb[2] % 16 == 0 && w.nb[3] % 16 == 0;
    dequant_chunks_kernel<Q><<<convert_blocks(tn * k / Q::kChunk), kConvertThreads, 0, ctx.stream>>>(
        mm::view_of(w), n0, tn, w2, w3, vec, static_cast<__half*>(buf), static_cast<__half*>(lo));
  } else {
    dequant_f16_kernel<Q><<<convert_blocks(tn * k / 2), kConvertThreads, 0, ctx.stream>>>(
        mm::view_of(w), n0, tn, w2, w3, static_cast<__half2*>(buf), static_cast<__half2*>(lo));
  }
}

// The GEMM element type for a weight dtype and its cuBLAS enums.
struct GemmType {
  DType type;  // F32, F16 or BF16
  cudaDataType_t cuda;
  cublasComputeType_t compute;
  size_t size;
};

// F32 and BF16 weights keep their type; F16 and every quantized type (dequantized tiles) use F16.
GemmType gemm_type(DType w) {
  if (w == DType::F32) return {DType::F32, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4};
  if (w == DType::BF16) return {DType::BF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2};
  return {DType::F16, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2};
}

template <class F>
void with_type(DType t, F&& f) {
  if (t == DType::F32) return f(float{});
  if (t == DType::BF16) return f(__nv_bfloat16{});
  f(__half{});
}

// How cuBLAS reads a weight matrix of (or converted to) the GEMM type: column-major A with op.
struct WeightOperand {
  bool direct = false;  // read in place; otherwise converted tile by tile
  cublasOperation_t op = CUBLAS_OP_T;
  int64_t ld = 0;
};

WeightOperand weight_operand(const Tensor& w, const GemmType& gt) {
  WeightOperand a;
  if (w.type != gt.type) return a;  // quantized: converted
  const int64_t es = static_cast<int64_t>(gt.size), k = w.ne[0], n = w.ne[1];
  const int64_t nb0 = static_cast<int64_t>(w.nb[0]), nb1 = static_cast<int64_t>(w.nb[1]);
  if (w.nb[2] % es != 0 || w.nb[3] % es != 0) return a;
  if (nb0 == es && nb1 % es == 0 && (nb1 / es >= k || n == 1)) {
    a = {true, CUBLAS_OP_T, n == 1 ? k : nb1 / es};  // rows of w are columns of A (K x N)
  } else if (nb1 == es && nb0 % es == 0 && (nb0 / es >= n || k == 1)) {
    a = {true, CUBLAS_OP_N, k == 1 ? n : nb0 / es};  // transposed w: A is N x K
  }
  if (a.ld > INT_MAX) a.direct = false;
  return a;
}

// x as the B operand: in place when F32 rows with uniform column stride, else converted contiguous.
struct ActOperand {
  const void* data = nullptr;
  int64_t ld = 0;      // elements between columns (activation rows)
  int64_t batch = 0;   // elements between x batches i2
  int64_t batch3 = 0;  // elements between x batches i3
};

bool act_direct(const Tensor& x, const GemmType& gt, int64_t r2) {
  if (gt.type != DType::F32 || x.type != DType::F32 || x.nb[0] != sizeof(float)) return false;
  const int64_t m = x.ne[1], nb1 = static_cast<int64_t>(x.nb[1]);
  if (nb1 % 4 != 0 || x.nb[2] % 4 != 0 || x.nb[3] % 4 != 0) return false;
  if (m > 1 && nb1 / 4 < x.ne[0]) return false;
  if (m * nb1 / 4 > INT_MAX) return false;
  return r2 == 1 || static_cast<int64_t>(x.nb[2]) == m * nb1;  // r2 batches merge into one GEMM
}

// c = a^T b (beta 0) or c += a^T b (accumulate).
void gemm(const Ctx& ctx, const GemmType& gt, cublasOperation_t op_a, int64_t rows, int64_t cols, int64_t k,
          const void* a, int64_t lda, const void* b, int64_t ldb, float* c, int64_t ldc, bool accumulate = false) {
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  GL_CUBLAS_CHECK(cublasGemmEx(ctx.cublas, op_a, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(cols),
                               static_cast<int>(k), &one, a, gt.cuda, static_cast<int>(lda), b, gt.cuda,
                               static_cast<int>(ldb), &beta, c, CUDA_R_32F, static_cast<int>(ldc), gt.compute,
                               CUBLAS_GEMM_DEFAULT));
}

// The A operand for weight rows [n0, n0 + tn) of batch (w2, w3): in place, or converted into buf
// (and, for a quantized weight with lo given, its rounding residue into lo).
const void* weight_tile(const Ctx& ctx, const Tensor& w, const WeightOperand& wa, const GemmType& gt, int64_t n0,
                        int64_t tn, int64_t w2, int64_t w3, void* buf, void* lo = nullptr) {
  if (wa.direct) return static_cast<const char*>(w.data) + w2 * w.nb[2] + w3 * w.nb[3];
  const int64_t k = w.ne[0];
  if (dtype_traits(w.type).is_quant) {
    with_weight_quant_host(w.type, [&](auto q) { dequant_tile<decltype(q)>(ctx, w, n0, tn, w2, w3, buf, lo); });
  } else {
    with_type(gt.type, [&](auto tag) {
      using T = decltype(tag);
      convert_w_kernel<T><<<convert_blocks(tn * k), kConvertThreads, 0, ctx.stream>>>(mm::view_of(w), n0, tn, w2, w3,
                                                                                      static_cast<T*>(buf));
    });
  }
  GL_CUDA_CHECK(cudaGetLastError());
  return buf;
}

// 16-bit GEMMs (BF16/F16 weights, quantized ones via F16) split the activations into a high and a low part
// (two GEMMs, the second accumulated), so prefill rows see ~16 significant bits of x, like the
// F32 activations of the GEMV path, instead of the weight format's 8 (BF16) or 11 (F16). Measured
// on the H200: BF16 fixture logits against the CPU 8.2e-5 / 2.5e-5 (dense / MoE) instead of
// 1.65e-2 / 2.4e-2; 9B BF16 pp512 13.3k instead of 19.6k tok/s. Precision::FAST rounds the
// activations once (one GEMM).
bool split_activations(const Ctx& ctx) { return ctx.precision == Precision::EXACT; }

// How the cuBLAS path lays out one node: the operands, the weight tile, and the workspace it
// needs (mul_mat_workspace and the launcher both read it from here, so they agree).
struct CublasLayout {
  GemmType gt;
  WeightOperand wa;
  bool x_in_place = false;
  int64_t x_elems = 0;  // elements of x (one half of the converted activations)
  int64_t tile = 0;     // weight rows per GEMM
  size_t x_bytes = 0;   // converted activations: hi, then lo (room for lo at either precision)
  size_t w_bytes = 0;   // converted weight tiles after the activations: one, or hi and lo (quantized)
};

// The precision may change after the planner sized the workspace (plans are not keyed on it), so
// the low half is always reserved; FAST leaves it unused.
CublasLayout cublas_layout(const Tensor& w, const Tensor& x) {
  CublasLayout l;
  const int64_t k = w.ne[0], n = w.ne[1];
  l.gt = gemm_type(w.type);
  l.wa = weight_operand(w, l.gt);
  l.x_in_place = act_direct(x, l.gt, x.ne[2] / w.ne[2]);
  l.x_elems = k * x.ne[1] * x.ne[2] * x.ne[3];
  const int64_t es = static_cast<int64_t>(l.gt.size);
  l.tile = l.wa.direct ? n : std::clamp<int64_t>(kWeightTileBytes / (k * es), 1, n);
  l.x_bytes = l.x_in_place ? 0 : ceil_div(static_cast<size_t>(l.x_elems * es) * 2, kWorkspaceAlign) * kWorkspaceAlign;
  // A quantized weight's F16 tile gets room for its low half too (EXACT; see split_activations).
  const size_t halves = dtype_traits(w.type).is_quant ? 2 : 1;
  l.w_bytes =
      l.wa.direct ? 0 : halves * ceil_div(static_cast<size_t>(l.tile * k * es), kWorkspaceAlign) * kWorkspaceAlign;
  return l;
}

// x as the GEMM's B operand: in place, or converted (hi, and lo when split) into buf.
ActOperand activations(const Ctx& ctx, const Tensor& x, const CublasLayout& l, bool split, void* buf) {
  const int64_t k = x.ne[0], m = x.ne[1], b2 = x.ne[2];
  if (l.x_in_place)
    return {x.data, static_cast<int64_t>(x.nb[1]) / 4, static_cast<int64_t>(x.nb[2]) / 4,
            static_cast<int64_t>(x.nb[3]) / 4};
  const int64_t x_elems = l.x_elems;
  with_type(l.gt.type, [&](auto tag) {
    using T = decltype(tag);
    T* hi = static_cast<T*>(buf);
    T* lo = split ? hi + x_elems : nullptr;
    if (dense_f32(x) && x_elems % 4 == 0) {
      convert_dense_x_kernel<T><<<convert_blocks(x_elems / 4), kConvertThreads, 0, ctx.stream>>>(
          static_cast<const float4*>(x.data), hi, lo, x_elems / 4);
    } else {
      convert_x_kernel<T><<<convert_blocks(x_elems), kConvertThreads, 0, ctx.stream>>>(mm::view_of(x), hi, lo, x_elems);
    }
  });
  GL_CUDA_CHECK(cudaGetLastError());
  return {buf, k, k * m, k * m * b2};
}

// dst [N, M, B2, B3] = w^T x through cuBLAS, one GEMM per (weight batch, weight tile, i3).
void mul_mat_cublas(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst) {
  const int64_t k = w.ne[0], n = w.ne[1], m = x.ne[1], b2 = x.ne[2], b3 = x.ne[3];
  const int64_t r2 = b2 / w.ne[2], r3 = b3 / w.ne[3];
  const CublasLayout l = cublas_layout(w, x);
  check_quant_alignment(w);
  const GemmType& gt = l.gt;
  const WeightOperand& wa = l.wa;
  GL_ASSERT(l.x_bytes + l.w_bytes == 0 || dst.workspace != nullptr,
            "cuda mul_mat: cuBLAS path without its planned workspace");
  char* ws = static_cast<char*>(dst.workspace);

  const int64_t x_elems = l.x_elems;
  const bool split = !l.x_in_place && split_activations(ctx);
  const ActOperand xb = activations(ctx, x, l, split, ws);

  // Weight tiles: the whole matrix when read in place, else rows converted into the workspace.
  const int64_t tile = l.tile;
  void* w_buf = wa.direct ? nullptr : ws + l.x_bytes;
  // EXACT with quantized weights: the weights' low half too (a third GEMM, w_lo x_hi).
  const bool split_w = split && dtype_traits(w.type).is_quant;
  void* w_lo = split_w ? static_cast<char*>(w_buf) + l.w_bytes / 2 : nullptr;
  float* out = static_cast<float*>(dst.data);
  for (int64_t w3 = 0; w3 < w.ne[3]; ++w3)
    for (int64_t w2 = 0; w2 < w.ne[2]; ++w2)
      for (int64_t n0 = 0; n0 < n; n0 += tile) {
        const int64_t tn = std::min(tile, n - n0);
        const void* a = weight_tile(ctx, w, wa, gt, n0, tn, w2, w3, w_buf, w_lo);
        const int64_t lda = wa.direct ? wa.ld : k;
        // The r2 x batches i2 = w2 * r2 .. + r2 - 1 of every i3 reading this weight batch.
        for (int64_t i3 = w3 * r3; i3 < (w3 + 1) * r3; ++i3) {
          const size_t es = gt.size;
          const void* b = static_cast<const char*>(xb.data) + (w2 * r2 * xb.batch + i3 * xb.batch3) * es;
          float* c = out + ((i3 * b2 + w2 * r2) * m) * n + n0;
          gemm(ctx, gt, wa.direct ? wa.op : CUBLAS_OP_T, tn, r2 * m, k, a, lda, b, xb.ld, c, n);
          if (split)  // the low half of the activations, accumulated
            gemm(ctx, gt, wa.direct ? wa.op : CUBLAS_OP_T, tn, r2 * m, k, a, lda,
                 static_cast<const char*>(b) + x_elems * es, xb.ld, c, n, true);
          if (split_w)  // the low half of the weights against the high half of the activations
            gemm(ctx, gt, CUBLAS_OP_T, tn, r2 * m, k, w_lo, lda, b, xb.ld, c, n, true);
        }
      }
}

// Q8_0 weights under Precision::EXACT: the tensor-core kernel of matmul_q8_mma.cu, on x rounded
// to F16 and its residue in the first part of the cuBLAS path's workspace (the node reserves that
// layout at either precision: FAST keeps cuBLAS, one GEMM on F16-rounded weights, which is faster).
void mul_mat_q8_mma(const Ctx& ctx, const Tensor& w, const Tensor& x, Tensor& dst) {
  const CublasLayout l = cublas_layout(w, x);
  GL_ASSERT(dst.workspace != nullptr && !l.x_in_place, "cuda mul_mat: Q8_0 tensor-core path without its workspace");
  auto* hi = static_cast<const __half*>(activations(ctx, x, l, true, dst.workspace).data);
  mm::q8_mma_mul_mat(ctx, w, hi, hi + l.x_elems, dst);
}

bool fits_int(const Tensor& t) {
  for (int64_t ne : t.ne)
    if (ne > INT_MAX) return false;
  return true;
}

// Few activation rows, or a weight matrix of a few outputs read once per 8 rows from L2: an F32 one
// too narrow for matmul_f32.cu's tiles (the shared expert's gate [H, 1]: 13 us at pp512 against
// cuBLAS's 130), or a 16-bit / quantized one of up to kNarrowOutputs (the Gated DeltaNet's alpha
// and beta projections [4096, 32]: cuBLAS took 32 us each at pp512, converting the activations
// first; here no conversion).
constexpr int64_t kNarrowOutputs = 64;

bool gemv_path(const Tensor& w, const Tensor& x) {
  if (x.ne[1] <= mm::kGemvMaxRows) return true;
  if (nbytes(w) > mm::kF32TiledMaxBytes) return false;
  return w.type == DType::F32 ? w.ne[1] < mm::kF32TiledMinRows : w.ne[1] <= kNarrowOutputs;
}

}  // namespace

// The GEMV path (and mul_mat_chain, GEMV only) needs room for int8 activations (types with an int8
// GEMV, used under Precision::FAST, reserved at either precision); the cuBLAS path needs its
// conversion buffers.
size_t mul_mat_workspace(const Tensor& dst) {
  const Tensor& x = *dst.src[1];
  if (nelements(dst) == 0) return 0;
  if (gemv_path(*dst.src[0], x)) return mm::q8_act_bytes(dst.src[0]->type, x);
  if (mm::f32_tiled_supported(*dst.src[0], x, dst)) return 0;
  const CublasLayout l = cublas_layout(*dst.src[0], x);
  return l.x_bytes + l.w_bytes;
}

const Tensor* mul_mat_workspace_share(const Tensor& dst) {
  const Tensor& x = *dst.src[1];
  if (nelements(dst) == 0 || !gemv_path(*dst.src[0], x) || mm::q8_act_bytes(dst.src[0]->type, x) == 0) return nullptr;
  // Only a node's own output stays unchanged while its consumers run (not a leaf, not a view).
  if (x.op == Op::NONE || x.view_src || is_view_op(x.op)) return nullptr;
  return &x;
}

void mul_mat(const Ctx& ctx, Tensor& dst) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  if (nelements(dst) == 0) return;
  if (gemv_path(w, x)) return mm::gemv_mul_mat(ctx, w, x, dst);
  if (mm::f32_tiled_supported(w, x, dst)) return mm::f32_tiled_mul_mat(ctx, w, x, dst);
  if (ctx.precision == Precision::EXACT && mm::q8_mma_supported(w, x) && mm::q8_mma_fills(ctx, w, x))
    return mul_mat_q8_mma(ctx, w, x, dst);
  mul_mat_cublas(ctx, w, x, dst);
}

namespace {

// Whether the GEMV of product mm reads its workspace: int8 activations, under FAST only (the
// workspace is reserved at either precision).
bool reads_workspace(const Ctx& ctx, const Tensor& mm) {
  return mm.workspace && ctx.precision == Precision::FAST && mm::q8_gemv_type(mm.src[0]->type);
}

// The product's workspace (its int8 activations under FAST) is read throughout the launch, but the
// planner keeps it only up to the product's own node (or the last product sharing it): a later
// node's output may lie on it.
bool clear_of_workspace(const Ctx& ctx, const Tensor& out, const Tensor& mm) {
  const size_t ws = mm.op == Op::MUL_MAT_ID ? mul_mat_id_workspace(mm) : mul_mat_workspace(mm);
  return !reads_workspace(ctx, mm) || !bytes_overlap(out.data, nbytes(out), mm.workspace, ws);
}

// Step k of a GEMV's chain (node k, operand others[k - 1]) against the launch so far. Its output
// never touches the weights or activations (other blocks read them throughout) and meets an
// earlier output or an operand only as the very same elements (touched first by this thread, in
// node order); its operand is no result of the product or an earlier step.
bool chain_step_safe(const Ctx& ctx, std::span<Tensor* const> nodes, int k, std::span<const Tensor* const> others,
                     const Tensor& w, const Tensor& x) {
  const Tensor& out = *nodes[static_cast<size_t>(k)];
  if (!disjoint(out, w) || !disjoint(out, x) || !clear_of_workspace(ctx, out, *nodes[0])) return false;
  for (int j = 0; j < k; ++j) {
    if (!safe_to_fuse(out, *nodes[static_cast<size_t>(j)])) return false;
    if (others[static_cast<size_t>(j)] && !safe_to_fuse(out, *others[static_cast<size_t>(j)])) return false;
  }
  // The operands are fetched before the product is formed: none may be a result written before
  // its own step (swiglu's gate in the memory of swiglu's result is fine: read, then written).
  const Tensor* other = others[static_cast<size_t>(k) - 1];
  for (int j = 0; other && j < k; ++j)
    if (!disjoint(*nodes[static_cast<size_t>(j)], *other)) return false;
  return true;
}

// Whether nodes[0] is a product a GEMV can carry a chain behind: 2-D, the GEMV's rows.
bool chain_head(const Tensor& mm) {
  return mm.op == Op::MUL_MAT && mm.src[1]->ne[1] <= mm::kGemvMaxRows && mm.ne[2] == 1 && mm.ne[3] == 1 &&
         nelements(mm) > 0;
}

// The product nodes[0], then elementwise nodes of its shape each reading the one before: the
// steps into c and their operands into others; returns how many nodes the launch takes (1: no
// chain formed).
size_t gemv_chain(const Ctx& ctx, std::span<Tensor* const> nodes, Chain& c, const Tensor* (&others)[kMaxChain],
                  int max_steps = kMaxChain) {
  Tensor& mm = *nodes[0];
  c.n = 0;
  while (c.n < max_steps && static_cast<size_t>(c.n) + 1 < nodes.size()) {
    const Tensor& n = *nodes[static_cast<size_t>(c.n) + 1];
    if (!chainable(n) || !same_shape(n, mm)) break;
    if (!make_step(n, nodes[static_cast<size_t>(c.n)], c.step[c.n], others[c.n])) break;
    if (!chain_step_safe(ctx, nodes, c.n + 1, others, *mm.src[0], *mm.src[1])) break;
    ++c.n;
  }
  std::fill(others + c.n, others + kMaxChain, nullptr);  // a refused step may have set its operand
  return static_cast<size_t>(c.n) + 1;
}

// Whether the nodes of one launch's group g (a product and its chain's steps) leave alone what
// the other group h reads (its weights, x, its steps' operands, the int8 rows of x in the
// workspace of a, the product whose workspace the launch reads) and writes: the two groups'
// blocks run in no fixed order.
bool clear_of(const Ctx& ctx, std::span<Tensor* const> g, std::span<Tensor* const> h,
              const Tensor* const (&h_others)[kMaxChain], const Tensor& a) {
  for (const Tensor* out : g) {
    if (!disjoint(*out, *h[0]->src[0]) || !disjoint(*out, *h[0]->src[1])) return false;
    if (!clear_of_workspace(ctx, *out, a)) return false;
    for (const Tensor* o : h_others)
      if (o && !disjoint(*out, *o)) return false;
    for (const Tensor* t : h)
      if (!disjoint(*out, *t)) return false;
  }
  return true;
}

// Two narrow products of one input whose GEMVs run as a twin: weights of one type and layout,
// results of one shape, a few activation rows.
bool twinnable(const Tensor& a, const Tensor& b) {
  const Tensor& wa = *a.src[0];
  const Tensor& wb = *b.src[0];
  return b.src[1] == a.src[1] && wa.type == wb.type && wa.ne == wb.ne && wa.nb == wb.nb && same_shape(a, b) &&
         a.ne[0] <= kNarrowOutputs && a.src[1]->ne[1] <= mm::kTwinMaxRows;
}

int launch_twin(const Ctx& ctx, Tensor& a, Tensor& b, const Chain& ca, const Chain& cb, size_t nodes) {
  mm::gemv_mul_mat_twin(ctx, *a.src[0], *b.src[0], *a.src[1], a, b, ca, cb);
  return static_cast<int>(nodes);
}

}  // namespace

int mul_mat_chain(const Ctx& ctx, std::span<Tensor* const> nodes) {
  if (nodes.size() < 2 || !chain_head(*nodes[0])) return 0;
  Chain c;
  const Tensor* others[kMaxChain] = {};
  const size_t used = gemv_chain(ctx, nodes, c, others);
  if (c.n == 0) return 0;
  mm::gemv_mul_mat_chain(ctx, *nodes[0]->src[0], *nodes[0]->src[1], *nodes[0], c);
  return static_cast<int>(used);
}

int mul_mat_twin(const Ctx& ctx, std::span<Tensor* const> nodes) {
  if (nodes.size() < 2 || !chain_head(*nodes[0])) return 0;
  Chain ca, cb;
  const Tensor* oa[kMaxChain] = {};
  const Tensor* ob[kMaxChain] = {};
  const size_t na = gemv_chain(ctx, nodes, ca, oa);
  if (na >= nodes.size() || !chain_head(*nodes[na]) || !twinnable(*nodes[0], *nodes[na])) return 0;
  Tensor& a = *nodes[0];
  const auto ga = nodes.subspan(0, na);
  // b's chain as long as both groups stay clear of each other (a later node reading a's results,
  // as a sum of the two gates would, ends it there).
  for (int steps = kMaxChain; steps >= 0; --steps) {
    const size_t nb = gemv_chain(ctx, nodes.subspan(na), cb, ob, steps);
    const auto gb = nodes.subspan(na, nb);
    if (clear_of(ctx, ga, gb, ob, a) && clear_of(ctx, gb, ga, oa, a))
      return launch_twin(ctx, a, *nodes[na], ca, cb, na + nb);
    steps = std::min(steps, cb.n);  // the next try takes one step fewer than this one found
  }
  return 0;
}

namespace {

// Gate and up products whose GEMVs can run as one pair: the same activations (and ids), weights of
// one type and layout, dense F32 results of one shape, the GEMV path at either precision.
bool pairable(const Tensor& g, const Tensor& u) {
  if (g.op != u.op || (g.op != Op::MUL_MAT && g.op != Op::MUL_MAT_ID)) return false;
  const Tensor& wg = *g.src[0];
  const Tensor& wu = *u.src[0];
  const Tensor& x = *g.src[1];
  if (u.src[1] != &x || wg.type != wu.type || wg.ne != wu.ne || wg.nb != wu.nb || !same_shape(g, u)) return false;
  if (!supports_matmul(g) || !supports_matmul(u) || nelements(g) == 0) return false;
  if (g.op == Op::MUL_MAT_ID) return u.src[2] == g.src[2] && g.src[2]->ne[1] <= mm::kIdDirectMaxTokens;
  return x.ne[1] <= mm::kGemvMaxRows && g.ne[2] == 1 && g.ne[3] == 1;
}

}  // namespace

int mul_mat_pair(const Ctx& ctx, std::span<Tensor* const> nodes) {
  if (nodes.size() < 3) return 0;
  Tensor& g = *nodes[0];
  Tensor& u = *nodes[1];
  Tensor& a = *nodes[2];
  if (a.op != Op::SWIGLU || a.src[0] != &g || a.src[1] != &u || !pairable(g, u)) return 0;
  if (a.type != DType::F32 || !same_shape(a, g) || !is_contiguous(a)) return 0;
  const bool id = g.op == Op::MUL_MAT_ID;
  const Tensor& x = *g.src[1];
  // Every block reads x (ids), the weights and gate's workspace (its int8 rows under FAST) to the
  // end; an output is written by one thread, gate then up then act, so act may lie on gate or up
  // (the same elements) but on nothing read.
  for (const Tensor* out : {&u, &a}) {
    if (!clear_of_workspace(ctx, *out, g) || !disjoint(*out, x) || !disjoint(*out, *g.src[0]) ||
        !disjoint(*out, *u.src[0]))
      return 0;
    if (id && !disjoint(*out, *g.src[2])) return 0;
  }
  if (!disjoint(g, u) || !safe_to_fuse(a, g) || !safe_to_fuse(a, u)) return 0;
  if (id) {
    mm::gemv_mul_mat_id_pair(ctx, *g.src[0], *u.src[0], x, *g.src[2], g, u, a);
  } else {
    mm::gemv_mul_mat_pair(ctx, *g.src[0], *u.src[0], x, g, u, a);
  }
  return 3;
}

bool supports_matmul(const Tensor& node) {
  if (node.op != Op::MUL_MAT && node.op != Op::MUL_MAT_ID) return false;
  const Tensor& w = *node.src[0];
  const Tensor& x = *node.src[1];
  if (!cuda_type_kernels(w.type).mul_mat || !dtype_traits(x.type).is_float) return false;
  if (node.type != DType::F32 || !is_contiguous(node)) return false;
  if (!fits_int(w) || !fits_int(x) || x.ne[1] * x.ne[2] * x.ne[3] > INT_MAX) return false;
  if (node.op == Op::MUL_MAT_ID) return node.src[2]->type == DType::I32 && w.ne[2] <= mm::kMaxIdExperts;
  return true;
}

}  // namespace gl::cuda
