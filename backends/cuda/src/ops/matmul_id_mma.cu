// matmul_id_mma.cu - MUL_MAT_ID for prefill on tensor cores: each routed tile of matmul_id.cu (up
// to kMmaTileRows slots sent to one expert) times that expert's weights.
//
// Why: with many tokens the expert products are compute-bound, and the GEMV tiles of
// matmul_gemv.cu ran them on CUDA cores (35B-A3B Q8_0, pp512 on the H200: 2.0 ms per gate or up
// product, ~4 TFLOP/s). Here a block multiplies a kBM-slot x 64-weight-row output tile with WMMA
// 16x16x16 fragments, K in steps of 32 staged through shared memory:
//   * activations (F32) are rounded to the MMA type; under Precision::EXACT their rounding residue
//     is a second operand (hi + lo: ~22 significant bits), as in matmul.cu's cuBLAS path;
//   * F16 / BF16 weights are read as they are; a quantized type is decoded by its traits (Q::elem,
//     the reference dequantizer) to F16, with its residue as a third operand under EXACT.
// Accumulation is F32. Rows of the output tile past the tile's slot count are computed on zeros and
// never stored; an expert's tile never mixes in another expert's rows.
#include <mma.h>

#include <algorithm>
#include <type_traits>

#include "dtype_table.cuh"
#include "ggml-lite/diag.h"
#include "kernels.cuh"
#include "mm_utils.cuh"
#include "round_to.cuh"

namespace gl::cuda::mm {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kBM = kMmaTileRows;  // slots per output tile
constexpr int kBN = 64;            // weight rows per output tile
constexpr int kBK = 32;            // K staged per step
constexpr int kLd = kBK + 8;       // padded smem row (elements): no bank conflicts on fragment loads
constexpr int kLdC = kBN + 4;      // padded F32 output row
constexpr int kThreads = 128;      // 4 warps, 2 x 2 over the tile
constexpr int kWM = kBM / 2;       // a warp's slots
constexpr int kWN = kBN / 2;       // a warp's weight rows
constexpr int kFM = kWM / 16;      // its 16 x 16 fragments along the slots
constexpr int kFN = kWN / 16;      // and along the weight rows
static_assert(kBM % 32 == 0 && kBM <= kThreads, "whole 16-row fragments a warp; a thread per slot's row offset");
static_assert(kBM * (kBK / 8) % kThreads == 0 && kBN * (kBK / 8) % kThreads == 0, "whole 16-byte pieces a thread");

// Element k of a weight row as float, through the type's traits (the reference dequantizer).
template <DType WT>
__device__ __forceinline__ float quant_value(const char* row, int64_t k) {
  using Q = QuantTraits<WT>;
  return Q::elem(row + (k / Q::kBlock) * int64_t{Q::kBlockBytes}, static_cast<int>(k % Q::kBlock));
}

struct MmaArgs {
  const char* w;  // experts [K, N, E]
  int64_t w_nb1, w_nb2, k, n;
  const void* xh;  // activations [K, x1, T] rounded to the MMA type, dense rows (then lo at xl)
  const void* xl;
  int64_t x1, n_used;
  float* dst;  // [N, U, T], slot s = t * U + u at row s
  IdTiles tiles;
  bool split_x;  // EXACT: the activations' residue as a second operand
  bool split_w;  // EXACT with a quantized type: the weights' residue as a third
};

constexpr int kRawWords = 17;  // 16-bit words of a Q8_0 block (34 bytes)
constexpr int kRawLd = 18;     // per staged row: decode's reads at most 2-way bank conflicts (3 at 17)

// The shared tiles of one K step, and the F32 output tile after the last (the same memory).
template <class T>
struct alignas(32) Smem {
  union {
    struct {
      T a[kBM * kLd], a_lo[kBM * kLd], b[kBN * kLd], b_lo[kBN * kLd];
      uint16_t raw[kBN * kRawLd];  // Q8_0: the step's blocks as read (Q8_0Stage)
    } in;
    float c[kBM * kLdC];
  };
  int64_t xrow[kBM];  // element offset of each slot's activation row
  int32_t slot[kBM];
};

// 16-byte pieces of a staged kBK-long row: 8 MMA elements each.
constexpr int kPieces = kBK / 8;
constexpr int kPiecesPerThread = kBM * kPieces / kThreads;   // of the activations
constexpr int kWPiecesPerThread = kBN * kPieces / kThreads;  // of F16 / BF16 weights

__device__ __forceinline__ uint4 load16(const void* p) { return *static_cast<const uint4*>(p); }
__device__ __forceinline__ void store16(void* p, uint4 v) { *static_cast<uint4*>(p) = v; }

// The activations of one step: each thread's pieces of the pre-rounded rows (and residues).
template <class T>
struct AStage {
  uint4 hi[kPiecesPerThread], lo[kPiecesPerThread];
  __device__ void load(const MmaArgs& p, const Smem<T>& s, int64_t k0, int count) {
#pragma unroll
    for (int j = 0; j < kPiecesPerThread; ++j) {
      const int q = static_cast<int>(threadIdx.x) + j * kThreads, r = q / kPieces;
      const int64_t k = k0 + 8 * (q % kPieces);
      const bool live = r < count && k < p.k;
      const int64_t at = s.xrow[r] + k;
      hi[j] = live ? load16(static_cast<const T*>(p.xh) + at) : make_uint4(0, 0, 0, 0);
      if (p.split_x) lo[j] = live ? load16(static_cast<const T*>(p.xl) + at) : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ void store(const MmaArgs& p, Smem<T>& s) const {
#pragma unroll
    for (int j = 0; j < kPiecesPerThread; ++j) {
      const int q = static_cast<int>(threadIdx.x) + j * kThreads, at = (q / kPieces) * kLd + 8 * (q % kPieces);
      store16(s.in.a + at, hi[j]);
      if (p.split_x) store16(s.in.a_lo + at, lo[j]);
    }
  }
};

// The weights of one step, by how the type is stored (BStage). F16 / BF16: 16-byte pieces as they are.
template <class T>
struct PlainStage {
  uint4 v[kWPiecesPerThread];
  __device__ void load(const MmaArgs& p, const char* wexp, int64_t n0, int64_t k0) {
#pragma unroll
    for (int j = 0; j < kWPiecesPerThread; ++j) {
      const int q = static_cast<int>(threadIdx.x) + j * kThreads, r = q / kPieces;
      const int64_t k = k0 + 8 * (q % kPieces);
      const bool live = n0 + r < p.n && k < p.k;
      v[j] = live ? load16(wexp + (n0 + r) * p.w_nb1 + k * int64_t{sizeof(T)}) : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ void store(const MmaArgs&, Smem<T>& s, uint16_t*) const {
#pragma unroll
    for (int j = 0; j < kWPiecesPerThread; ++j) {
      const int q = static_cast<int>(threadIdx.x) + j * kThreads;
      store16(s.in.b + (q / kPieces) * kLd + 8 * (q % kPieces), v[j]);
    }
  }
};

// 8 floats rounded to halves, one 16-byte piece.
__device__ __forceinline__ uint4 round8(const float (&v)[8]) {
  uint32_t h[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const __half2 x = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
    h[e] = *reinterpret_cast<const uint32_t*>(&x);
  }
  return make_uint4(h[0], h[1], h[2], h[3]);
}

// The residues of 8 floats after round8 gave hi, rounded to halves.
__device__ __forceinline__ uint4 residue8(const float (&v)[8], uint4 hi) {
  const uint32_t hw[4] = {hi.x, hi.y, hi.z, hi.w};
  uint32_t l[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const __half2 x = *reinterpret_cast<const __half2*>(&hw[e]);
    const __half2 y = __floats2half2_rn(v[2 * e] - __low2float(x), v[2 * e + 1] - __high2float(x));
    l[e] = *reinterpret_cast<const uint32_t*>(&y);
  }
  return make_uint4(l[0], l[1], l[2], l[3]);
}

// Eight decoded weights into the staged row at `at`, rounded to F16 (and their residues under
// split_w).
__device__ __forceinline__ void stage8(const MmaArgs& p, Smem<__half>& s, int at, const float (&v)[8]) {
  const uint4 hi = round8(v);
  store16(s.in.b + at, hi);
  if (p.split_w) store16(s.in.b_lo + at, residue8(v, hi));
}

// Whether the type's traits give 16 consecutive elements at once (Q::values16: the K-quants but
// Q2_K / Q3_K, the 32-element nibble blocks, IQ4_XS).
template <DType WT>
constexpr bool has_values16() {
  return requires(const char* blk, float(&v)[16]) { QuantTraits<WT>::values16(blk, 0, v); };
}

// Whether the traits decode 16 elements in half arithmetic (Q::halves16: Q4_K, Q5_K, Q6_K), which
// the raw-staged tiles take under Precision::FAST.
template <DType WT>
constexpr bool has_halves16() {
  return requires(const char* blk, uint32_t(&h)[8]) { QuantTraits<WT>::halves16(blk, 0, h); };
}

// A quantized type: each thread decodes 16 consecutive elements of one row (two threads a row)
// through the traits, then rounds them to F16 pieces. (Tried: 16 threads a row, a pair each, so
// that a warp reads two rows instead of 16: slower, 2.3 vs 1.6 ms per 35B-A3B gate product at
// pp512; the 16 elements of one block share their scale read.) Where the traits have values16,
// the 16 share one header decode too: element by element, a Q4_K element re-read and re-unpacked
// its sub-block's scale and min (35B-A3B Q4_K_M, pp512 on the H200: 1,594 tok/s, llama.cpp 5,253).
template <DType WT>
struct QuantStage {
  using Q = QuantTraits<WT>;
  static_assert(kBN * kBK / kThreads == 16, "two threads per weight row");
  static_assert(Q::kBlock % 16 == 0, "a thread's 16 elements (16-aligned) lie in one block");
  float v[16];
  __device__ void load(const MmaArgs& p, const char* wexp, int64_t n0, int64_t k0) {
    const int r = static_cast<int>(threadIdx.x) / 2;
    const int64_t k = k0 + 16 * (threadIdx.x % 2);
    const bool live = n0 + r < p.n && k < p.k;
    const char* row = wexp + (live ? n0 + r : 0) * p.w_nb1;
    if constexpr (has_halves16<WT>()) {
      if (!p.split_w) {  // FAST: as RawStage decodes (the same bits); v holds 8 half2
        uint32_t h[8] = {};
        if (live) Q::halves16(row + (k / Q::kBlock) * int64_t{Q::kBlockBytes}, static_cast<int>(k % Q::kBlock), h);
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = __uint_as_float(h[e]);
        return;
      }
    }
    if constexpr (has_values16<WT>()) {
      if (live) {
        Q::values16(row + (k / Q::kBlock) * int64_t{Q::kBlockBytes}, static_cast<int>(k % Q::kBlock), v);
      } else {
#pragma unroll
        for (int e = 0; e < 16; ++e) v[e] = 0.0f;
      }
    } else {
#pragma unroll
      for (int e = 0; e < 16; ++e) v[e] = live ? quant_value<WT>(row, k + e) : 0.0f;
    }
  }
  __device__ void store(const MmaArgs& p, Smem<__half>& s, uint16_t*) const {
    const int at = (static_cast<int>(threadIdx.x) / 2) * kLd + 16 * (threadIdx.x % 2);
    if constexpr (has_halves16<WT>()) {
      if (!p.split_w) {
        const auto b = [&](int e) { return __float_as_uint(v[e]); };
        store16(s.in.b + at, make_uint4(b(0), b(1), b(2), b(3)));
        store16(s.in.b + at + 8, make_uint4(b(4), b(5), b(6), b(7)));
        return;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) stage8(p, s, at + 8 * h, reinterpret_cast<const float(&)[8]>(v[8 * h]));
  }
};

// Q8_0 in two phases. Loading, the block's threads read the step's 64 blocks (one per weight row,
// 34 bytes) as 16-bit words in order, so that a warp's read covers two rows, not 16; staging, the
// words go to shared memory, and after a barrier (decode) each thread decodes half a block of one
// row: the traits' values (d * q is exact in F32), rounded as QuantStage rounds them. Reads spread
// over 16 rows a warp kept the L1 busy (bench/s16.md).
struct Q8_0Stage {
  using Q = QuantTraits<DType::Q8_0>;
  static constexpr bool kDecode = true;
  static constexpr int kWords = kBN * kRawWords;
  static constexpr int kPerThread = (kWords + kThreads - 1) / kThreads;
  static_assert(kBK == Q::kBlock && Q::kBlockBytes == 2 * kRawWords && kBN * kBK / kThreads == 16,
                "a step is one block a row, half a block a thread");
  uint32_t w[kPerThread];
  __device__ void load(const MmaArgs& p, const char* wexp, int64_t n0, int64_t k0) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int j = static_cast<int>(threadIdx.x) + i * kThreads, r = min(j, kWords - 1) / kRawWords;
      const bool live = n0 + r < p.n && k0 < p.k;  // else row 0's first block, for outputs never stored
      const char* blk = wexp + (live ? n0 + r : 0) * p.w_nb1 + (live ? k0 / Q::kBlock : 0) * Q::kBlockBytes;
      w[i] = reinterpret_cast<const uint16_t*>(blk)[min(j, kWords - 1) % kRawWords];
    }
  }
  __device__ void store(const MmaArgs&, Smem<__half>& s, uint16_t*) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int j = static_cast<int>(threadIdx.x) + i * kThreads;
      if (j < kWords) s.in.raw[(j / kRawWords) * kRawLd + j % kRawWords] = static_cast<uint16_t>(w[i]);
    }
  }
  __device__ static void decode(const MmaArgs& p, Smem<__half>& s, const uint16_t*, int64_t) {
    const int r = static_cast<int>(threadIdx.x) / 2, h = static_cast<int>(threadIdx.x) % 2;
    const uint16_t* blk = s.in.raw + r * kRawLd;
    const int at = r * kLd + 16 * h;
    if (!p.split_w) {  // in half arithmetic: q exact (the bytes made unsigned), d * q rounded once (the same bits)
      const __half2 d2 = __half2half2(__ushort_as_half(blk[0]));
      uint32_t v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v[j] = qio::h2_bits(__hmul2(qio::level_pair_h2<128>(blk[1 + 8 * h + j] ^ 0x8080u, 0), d2));
      store16(s.in.b + at, make_uint4(v[0], v[1], v[2], v[3]));
      store16(s.in.b + at + 8, make_uint4(v[4], v[5], v[6], v[7]));
      return;
    }
    const float d = __half2float(__ushort_as_half(blk[0]));
#pragma unroll
    for (int g = 0; g < 2; ++g) {
      float v[8];
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        const uint16_t u = blk[1 + 8 * h + 4 * g + e / 2];
        v[e] = d * static_cast<float>(static_cast<int8_t>(u & 0xffu));
        v[e + 1] = d * static_cast<float>(static_cast<int8_t>(u >> 8));
      }
      stage8(p, s, at + 8 * g, v);
    }
  }
};

// The quantized types with values16 and blocks of whole 16-bit words (all but MXFP4, Q2_K, Q3_K),
// staged as read. QuantStage's two threads a row read their 16 elements' bytes from 16 rows a warp:
// ncu on the 35B-A3B Q4_K_M prefill (H100) had those tiles limited by the L1 (77% busy, 31%
// occupancy, half the prefill's time). Here the block's threads copy each weight row's current
// block (16 to 210 bytes) into shared memory as 16-bit words in row order, a warp reading one or
// two rows' contiguous bytes, and decode their 16 elements from there (decode, after a barrier).
// Two buffers: a 256-element K-quant block serves 8 K steps, during which the next block arrives
// an eighth at a time (1 slice a step; a 32-element block is one slice, one step ahead).
template <DType WT>
struct RawStage {
  using Q = QuantTraits<WT>;
  static constexpr bool kDecode = true;
  static constexpr int kSlices = Q::kBlock / kBK;  // K steps a block serves
  static constexpr int kWords = Q::kBlockBytes / 2;
  // Row stride in 16-bit words: even (4-byte reads stay aligned) with an odd count of 32-bit words
  // (the same field of 16 rows falls in 16 banks).
  static constexpr int kLdW = kWords % 4 == 2 ? kWords : kWords + (kWords % 4 == 0 ? 2 : kWords % 4 == 1 ? 1 : 3);
  static constexpr int kBufWords = kBN * kLdW;
  static constexpr int kRawWords = 2 * kBufWords;  // the kernel's shared buffer (raw_words)
  static constexpr int kSliceWords = (kBN * kWords + kSlices - 1) / kSlices;
  static constexpr int kPerThread = (kSliceWords + kThreads - 1) / kThreads;
  static_assert(Q::kBlock % kBK == 0 && Q::kBlockBytes % 2 == 0 && kLdW % 4 == 2, "whole steps a block, whole words");

  uint32_t w[kPerThread];
  int buf = 0, slice = 0;
  bool any = false;  // a next block exists

  // Words [slice * kSliceWords, + kSliceWords) of the rows' block `blk` (rows past n read row 0's).
  __device__ static uint32_t word(const MmaArgs& p, const char* wexp, int64_t n0, int64_t blk, int f) {
    const int r = f / kWords;
    const int64_t row = n0 + r < p.n ? n0 + r : 0;
    return __ldg(reinterpret_cast<const uint16_t*>(wexp + row * p.w_nb1 + blk * Q::kBlockBytes) + f % kWords);
  }
  // The whole first block, before the first step (the barrier before decode orders it).
  __device__ static void prime(const MmaArgs& p, const char* wexp, int64_t n0, uint16_t* raw) {
    for (int f = static_cast<int>(threadIdx.x); f < kBN * kWords; f += kThreads)
      raw[(f / kWords) * kLdW + f % kWords] = static_cast<uint16_t>(word(p, wexp, n0, 0, f));
  }
  // For step k0: this step's slice of the next block (the block after the one k0 decodes).
  __device__ void load(const MmaArgs& p, const char* wexp, int64_t n0, int64_t k0) {
    const int64_t blk = k0 / Q::kBlock + 1;
    slice = static_cast<int>((k0 / kBK) % kSlices);
    buf = static_cast<int>(blk % 2);
    any = blk * Q::kBlock < p.k;
    if (!any) return;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int f = slice * kSliceWords + static_cast<int>(threadIdx.x) + i * kThreads;
      w[i] = f < kBN * kWords && f < (slice + 1) * kSliceWords ? word(p, wexp, n0, blk, f) : 0u;
    }
  }
  __device__ void store(const MmaArgs&, Smem<__half>&, uint16_t* raw) const {
    if (!any) return;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int f = slice * kSliceWords + static_cast<int>(threadIdx.x) + i * kThreads;
      if (f < kBN * kWords && f < (slice + 1) * kSliceWords)
        raw[buf * kBufWords + (f / kWords) * kLdW + f % kWords] = static_cast<uint16_t>(w[i]);
    }
  }
  // Each thread: 16 elements of one row (two threads a row), from the block step k0 lies in.
  __device__ static void decode(const MmaArgs& p, Smem<__half>& s, const uint16_t* raw, int64_t k0) {
    const int r = static_cast<int>(threadIdx.x) / 2, h = static_cast<int>(threadIdx.x) % 2;
    const auto* blk = reinterpret_cast<const char*>(raw + ((k0 / Q::kBlock) % 2) * kBufWords + r * kLdW);
    const int i = static_cast<int>(k0 % Q::kBlock) + 16 * h, at = r * kLd + 16 * h;
    if constexpr (has_halves16<WT>()) {
      if (!p.split_w) {  // FAST: decoded in half arithmetic (the traits' halves16 bound)
        uint32_t v[8];
        Q::template halves16<qio::FromShared>(blk, i, v);
        store16(s.in.b + at, make_uint4(v[0], v[1], v[2], v[3]));
        store16(s.in.b + at + 8, make_uint4(v[4], v[5], v[6], v[7]));
        return;
      }
    }
    float v[16];
    Q::template values16<qio::FromShared>(blk, i, v);
#pragma unroll
    for (int g = 0; g < 2; ++g) stage8(p, s, at + 8 * g, reinterpret_cast<const float(&)[8]>(v[8 * g]));
  }
};

// Whether the weight stage decodes from shared memory after a barrier.
template <class B>
constexpr bool decodes() {
  if constexpr (requires { B::kDecode; }) return B::kDecode;
  return false;
}

// Whether a quantized type's weights are staged as read (RawStage).
template <DType WT>
constexpr bool raw_staged() {
  if constexpr (WT == DType::F16 || WT == DType::BF16 || WT == DType::Q8_0) {
    return false;
  } else {
    return has_values16<WT>() && QuantTraits<WT>::kBlockBytes % 2 == 0;
  }
}

// The weight stage of a type (raw: RawStage where the type has it, GL_CUDA_RAW_STAGE=0 turns it off).
template <DType WT, class T, bool kRaw>
using BStage =
    std::conditional_t<WT == DType::F16 || WT == DType::BF16, PlainStage<T>,
                       std::conditional_t<WT == DType::Q8_0, Q8_0Stage,
                                          std::conditional_t<kRaw && raw_staged<WT>(), RawStage<WT>, QuantStage<WT>>>>;

// The 16-bit words of shared memory a stage keeps its raw blocks in (RawStage), else 2 (unused).
template <class B>
constexpr int raw_words() {
  if constexpr (requires { B::kRawWords; }) return B::kRawWords;
  return 2;
}

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// The warp's kWM x kWN share of the output tile over one staged K step.
template <class T>
__device__ void mma_step(const MmaArgs& p, const Smem<T>& s, int wm, int wn, Acc (&acc)[kFM][kFN]) {
#pragma unroll
  for (int ks = 0; ks < kBK; ks += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[kFM], a_lo[kFM];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[kFN], b_lo[kFN];
#pragma unroll
    for (int i = 0; i < kFM; ++i) {
      wmma::load_matrix_sync(a[i], s.in.a + (wm * kWM + i * 16) * kLd + ks, kLd);
      if (p.split_x) wmma::load_matrix_sync(a_lo[i], s.in.a_lo + (wm * kWM + i * 16) * kLd + ks, kLd);
    }
#pragma unroll
    for (int j = 0; j < kFN; ++j) {
      wmma::load_matrix_sync(b[j], s.in.b + (wn * kWN + j * 16) * kLd + ks, kLd);
      if (p.split_w) wmma::load_matrix_sync(b_lo[j], s.in.b_lo + (wn * kWN + j * 16) * kLd + ks, kLd);
    }
#pragma unroll
    for (int i = 0; i < kFM; ++i)
#pragma unroll
      for (int j = 0; j < kFN; ++j) {
        wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        if (p.split_x) wmma::mma_sync(acc[i][j], a_lo[i], b[j], acc[i][j]);
        if (p.split_w) wmma::mma_sync(acc[i][j], a[i], b_lo[j], acc[i][j]);
      }
  }
}

// The output tile through shared memory to its slots' rows (a warp stores 32 adjacent outputs).
template <class T>
__device__ void store_tile(const MmaArgs& p, Smem<T>& s, int wm, int wn, Acc (&acc)[kFM][kFN], int64_t n0, int count) {
#pragma unroll
  for (int i = 0; i < kFM; ++i)
#pragma unroll
    for (int j = 0; j < kFN; ++j)
      wmma::store_matrix_sync(s.c + (wm * kWM + i * 16) * kLdC + wn * kWN + j * 16, acc[i][j], kLdC,
                              wmma::mem_row_major);
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < kBM * kBN; e += kThreads) {
    const int r = e / kBN, c = e % kBN;
    if (r < count && n0 + c < p.n) p.dst[static_cast<int64_t>(s.slot[r]) * p.n + n0 + c] = s.c[r * kLdC + c];
  }
}

// Block (x, y): weight rows [64 x, + 64) of routed tile y. The operands of step k + 1 are loaded
// into registers while the tensor cores work on step k.
template <DType WT, class T, class B>
__global__ void __launch_bounds__(kThreads) moe_mma_kernel(MmaArgs p) {
  __shared__ Smem<T> s;
  __shared__ alignas(16) uint16_t raw[raw_words<B>()];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / kWarp;
  const int wm = warp / 2, wn = warp % 2;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  for (int64_t g = blockIdx.y; g < p.tiles.max_tiles; g += gridDim.y) {
    if (g >= *p.tiles.n_tiles) return;  // tiles past the routed count are empty
    const int count = p.tiles.tile_count[g];
    const char* wexp = p.w + static_cast<int64_t>(p.tiles.tile_expert[g]) * p.w_nb2;
    if (tid < kBM) {
      const int32_t slot = tid < count ? p.tiles.slots[p.tiles.tile_begin[g] + tid] : 0;
      const int64_t u = slot % p.n_used, t = slot / p.n_used;
      s.slot[tid] = slot;
      s.xrow[tid] = (t * p.x1 + u % p.x1) * p.k;
    }
    __syncthreads();

    Acc acc[kFM][kFN];
#pragma unroll
    for (int i = 0; i < kFM; ++i)
#pragma unroll
      for (int j = 0; j < kFN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    AStage<T> a;
    B b;
    if constexpr (std::is_same_v<B, RawStage<WT>>) B::prime(p, wexp, n0, raw);
    a.load(p, s, 0, count);
    b.load(p, wexp, n0, 0);
    for (int64_t k0 = 0; k0 < p.k; k0 += kBK) {
      a.store(p, s);
      b.store(p, s, raw);
      if constexpr (decodes<B>()) {
        __syncthreads();
        B::decode(p, s, raw, k0);
      }
      __syncthreads();
      if (k0 + kBK < p.k) {
        a.load(p, s, k0 + kBK, count);
        b.load(p, wexp, n0, k0 + kBK);
      }
      mma_step(p, s, wm, wn, acc);
      __syncthreads();
    }
    store_tile(p, s, wm, wn, acc, n0, count);
    __syncthreads();
  }
}

// x [K, x1, T] (F32, any row strides) -> dense rows rounded to T, and their residues when lo.
template <class T>
__global__ void round_rows_kernel(const char* x, int64_t nb1, int64_t nb2, int64_t k, int64_t x1, int64_t n, T* hi,
                                  T* lo) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / k, u = row % x1, t = row / x1;
    const float v = *reinterpret_cast<const float*>(x + u * nb1 + t * nb2 + (i % k) * 4);
    const T h = from_f32<T>(v);
    hi[i] = h;
    if (lo) lo[i] = from_f32<T>(v - static_cast<float>(h));
  }
}

template <DType WT, class T>
void launch_mma(const Ctx& ctx, const Tensor& x, const MmaArgs& p) {
  const int64_t n = nelements(x);
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div<int64_t>(n, 256), 65535));
  round_rows_kernel<T><<<blocks, 256, 0, ctx.stream>>>(
      static_cast<const char*>(x.data), static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2]), x.ne[0], x.ne[1],
      n, static_cast<T*>(const_cast<void*>(p.xh)), p.split_x ? static_cast<T*>(const_cast<void*>(p.xl)) : nullptr);
  GL_CUDA_CHECK(cudaGetLastError());
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(p.n, kBN)),
                  static_cast<unsigned>(p.tiles.max_tiles < kMaxGridY ? p.tiles.max_tiles : kMaxGridY));
  static const bool raw = !diag_env(Diag::CUDA_RAW_STAGE_OFF);
  if (raw) {
    moe_mma_kernel<WT, T, BStage<WT, T, true>><<<grid, kThreads, 0, ctx.stream>>>(p);
  } else {
    moe_mma_kernel<WT, T, BStage<WT, T, false>><<<grid, kThreads, 0, ctx.stream>>>(p);
  }
  GL_CUDA_CHECK(cudaGetLastError());
}

bool aligned16(const void* p, int64_t a, int64_t b) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && a % 16 == 0 && b % 16 == 0;
}

}  // namespace

// F16 / BF16 experts are read in 16-byte pieces, so their rows must be aligned; rows of K % 8 == 0
// elements keep the rounded activations' pieces aligned.
bool mma_id_supported(const Tensor& experts, const Tensor& x) {
  const DType wt = experts.type;
  const bool plain = wt == DType::F16 || wt == DType::BF16;
  const bool w_ok = dtype_traits(wt).is_quant ||
                    (plain && experts.nb[0] == dtype_traits(wt).block_bytes &&
                     aligned16(experts.data, static_cast<int64_t>(experts.nb[1]), static_cast<int64_t>(experts.nb[2])));
  return w_ok && x.type == DType::F32 && x.nb[0] == sizeof(float) && x.ne[3] == 1 && experts.ne[0] % 8 == 0;
}

size_t mma_id_act_bytes(const Tensor& x) { return 2 * ceil_div<size_t>(nelements(x) * 2, 256) * 256; }

void mma_mul_mat_id(const Ctx& ctx, const Tensor& experts, const Tensor& x, Tensor& dst, const IdTiles& tiles,
                    void* act) {
  check_quant_alignment(experts);
  const bool exact = ctx.precision == Precision::EXACT;
  MmaArgs p{static_cast<const char*>(experts.data),
            static_cast<int64_t>(experts.nb[1]),
            static_cast<int64_t>(experts.nb[2]),
            experts.ne[0],
            experts.ne[1],
            act,
            static_cast<char*>(act) + mma_id_act_bytes(x) / 2,
            x.ne[1],
            dst.ne[1],
            static_cast<float*>(dst.data),
            tiles,
            exact,
            exact && dtype_traits(experts.type).is_quant};
  if (experts.type == DType::F16) return launch_mma<DType::F16, __half>(ctx, x, p);
  if (experts.type == DType::BF16) return launch_mma<DType::BF16, __nv_bfloat16>(ctx, x, p);
  with_weight_quant_host(experts.type, [&](auto q) { launch_mma<decltype(q)::kType, __half>(ctx, x, p); });
}

}  // namespace gl::cuda::mm
