// gemv_kernel.cuh - the GEMV kernel behind MUL_MAT / MUL_MAT_ID for a few activation rows (decode,
// MTP verify): one pass over the weights. Instantiated by matmul_gemv.cu (float activations) and
// matmul_gemv_q8.cu (int8 activations under Precision::FAST: the Act policy, F32Act or Q8Act).
//
// Why by hand: with <= 8 activation rows the time is the weight read, and the result of a row must
// not depend on how many rows came with it (a verify of 4 rows must reproduce 4 decode steps bit for
// bit). cuBLAS promises neither. Layout of the work:
//   * a block owns R consecutive weight rows of one weight matrix and up to M activation rows
//     (blockIdx.y picks the batch / expert group); every activation row is dotted with the R weight
//     rows while they stream past once, in 16-byte vector loads (F32/F16/BF16) or the chunks a
//     quantized type's traits define (Q8_0: quarter blocks of 8 quants; the packed llama.cpp types:
//     16 or 32 elements whose quant bytes no other thread reads) per thread; activations
//     stay F32 (read through L1, each reused R times), or under Precision::FAST for the K-quants
//     int8 per block of 32 with one float scale (Q8Act: quantized once per row, dp4a products);
//   * accumulation is float with explicit fmaf, then a warp shuffle tree and a fixed-order sum over
//     the block's warps.
// Batch invariance: the reduction order of output (n, m) depends only on K, the weight dtype (chunk
// size E) and the thread count, which is chosen from K and E alone: thread t sums chunks t, t+T,
// t+2T, ... element by element into its own accumulator, lane 0's xor tree and warps 0..W-1 follow.
// M, R, the group's row count and whether loads are vectorised (alignment) change which registers
// hold what, never the sequence of float operations of one output.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <type_traits>

#include "chain.cuh"
#include "mm_utils.cuh"

namespace gl::cuda::mm {

// 128 threads (256 measured slower on the H200: 37.5 vs 31.9 us for BF16 4096 x 12288).
inline constexpr int kMaxThreads = 128;

// Weight rows [0, n) of length k, row stride nb1, element stride nb0 (plain types).
struct WDesc {
  int64_t k, n, nb0, nb1;
  bool vec;               // rows dense, 16-byte aligned and k % E == 0: one 16-byte load per chunk
                          // (quantized types: data and row strides 16-byte aligned)
  int64_t row_bytes = 0;  // bytes of one dense row (0: strided rows, not prefetched)
  bool early = false;     // no kernel writes the weights: they may be prefetched before pdl_wait
                          // (WrittenWeights; kEarlyWeights kernels only)
};

struct XDesc {
  int64_t nb0;
  DType type;
  bool vec;  // F32, dense and every row 16-byte aligned
};

// ---- row groups: which weight matrix, activation rows and output rows a block works on ---------

// Up to M activation rows; rows past count repeat row 0 (read, never written).
template <int M>
struct Group {
  const char* w;
  const char* x[M];
  float* out[M];
  int64_t row0;  // MUL_MAT: the first activation row (the epilogue's i1)
  int count;
  bool bad_expert;  // mul_mat_id with an id outside [0, E): the rows are filled with NaN
};

// MUL_MAT: group g = (row group, x batch i2, i3); w batch (i2 / r2, i3 / r3).
struct MulMatRows {
  const char* w;
  int64_t w_nb2, w_nb3, r2, r3;
  const char* x;
  int64_t x_nb1, x_nb2, x_nb3;
  float* dst;
  int64_t n, m, b2, b3, m_groups;

  __host__ __device__ int64_t count() const { return m_groups * b2 * b3; }

  template <int M>
  __device__ bool resolve(int64_t g, Group<M>& grp) const {
    const int64_t mg = g % m_groups, b = g / m_groups;
    const int64_t i2 = b % b2, i3 = b / b2;
    const int64_t m0 = mg * M;
    grp.w = w + (i2 / r2) * w_nb2 + (i3 / r3) * w_nb3;
    grp.count = static_cast<int>(m - m0 < M ? m - m0 : M);
    grp.row0 = m0;
    grp.bad_expert = false;
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const int64_t row = m0 + (i < grp.count ? i : 0);
      grp.x[i] = x + row * x_nb1 + i2 * x_nb2 + i3 * x_nb3;
      grp.out[i] = dst + ((i3 * b2 + i2) * m + row) * n;
    }
    return true;
  }
};

// MUL_MAT_ID: group g = slot (u, t) (direct), or tile g of slots sharing an expert (tiles).
struct IdRows {
  const char* w;
  int64_t w_nb2, n_experts;
  const char* x;
  int64_t x_nb1, x_nb2, x1;
  const char* ids;
  int64_t ids_nb0, ids_nb1, n_used, n_tokens;
  float* dst;
  int64_t n;
  IdTiles tiles;

  __host__ __device__ int64_t count() const { return tiles.slots ? tiles.max_tiles : n_used * n_tokens; }

  __device__ void slot_rows(int64_t slot, const char*& xr, float*& out) const {
    const int64_t u = slot % n_used, t = slot / n_used;
    xr = x + (u % x1) * x_nb1 + t * x_nb2;
    out = dst + slot * n;
  }

  template <int M>
  __device__ bool resolve(int64_t g, Group<M>& grp) const {
    int64_t expert;
    int64_t first;
    if (tiles.slots) {
      if (g >= *tiles.n_tiles) return false;
      expert = tiles.tile_expert[g];
      first = tiles.tile_begin[g];
      grp.count = tiles.tile_count[g];
    } else {
      const int64_t u = g % n_used, t = g / n_used;
      expert = *reinterpret_cast<const int32_t*>(ids + u * ids_nb0 + t * ids_nb1);
      first = g;
      grp.count = 1;
    }
    grp.row0 = 0;
    grp.bad_expert = expert < 0 || expert >= n_experts;
    grp.w = w + (grp.bad_expert ? 0 : expert) * w_nb2;
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const int64_t j = i < grp.count ? i : 0;
      slot_rows(tiles.slots ? tiles.slots[first + j] : first, grp.x[i], grp.out[i]);
    }
    return true;
  }
};

// Two products of the same activations that one SWIGLU combines (an FFN's gate and up
// projections), as one launch (gemv_mul_mat_pair, gemv_mul_mat_id_pair): a block takes R / 2 rows
// of each weight matrix. Each row is reduced exactly as in a launch of its own (same bits); the
// writer of output (n, m) stores gate, up and silu(gate) * up (act).
template <class Rows>
struct PairRows {
  Rows gate, up, act;  // the same groups and activations; the weights (up) and outputs differ
  __host__ __device__ int64_t count() const { return gate.count(); }
};

template <class Rows>
inline constexpr bool kPaired = false;
template <class Rows>
inline constexpr bool kPaired<PairRows<Rows>> = true;

// The rows that say which weights, activations and outputs a group has (a pair's: its gate's).
template <class Rows>
__host__ __device__ const auto& lead_rows(const Rows& rows) {
  if constexpr (kPaired<Rows>) {
    return rows.gate;
  } else {
    return rows;
  }
}

// Two products of the same activations, weights of one type and shape, each with its own
// epilogue chain (TwinChain), as one launch (gemv_mul_mat_twin: the Gated DeltaNet's two narrow
// gate projections): the grid's first half of blocks takes a, the second half b. Each row is
// reduced exactly as in a launch of its own (same bits).
struct TwinRows {
  MulMatRows a, b;
  __host__ __device__ int64_t count() const { return a.count(); }
  template <int M>
  __device__ bool resolve(int64_t g, Group<M>& grp) const {
    return (blockIdx.x >= gridDim.x / 2 ? b : a).template resolve<M>(g, grp);
  }
};

struct TwinChain {
  Chain a, b;
};

template <class Rows>
inline constexpr bool kTwin = std::is_same_v<Rows, TwinRows>;

__device__ __forceinline__ void chain_fetch(const TwinChain& c, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                                            float (&others)[kMaxChain]) {
  chain_fetch(blockIdx.x >= gridDim.x / 2 ? c.b : c.a, i0, i1, i2, i3, others);
}

__device__ __forceinline__ void chain_run(const TwinChain& c, float v, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                                          const float (&others)[kMaxChain]) {
  chain_run(blockIdx.x >= gridDim.x / 2 ? c.b : c.a, v, i0, i1, i2, i3, others);
}

// grp.out[i] for a runtime i, by selects (keeps grp in registers).
template <int M>
__device__ __forceinline__ float* pick_out(const Group<M>& grp, int i) {
  float* out = grp.out[0];
#pragma unroll
  for (int j = 1; j < M; ++j)
    if (j == i) out = grp.out[j];
  return out;
}

// The rows of dst = w^T x, x grouped rows_per_group activation rows at a time.
inline MulMatRows mul_mat_rows(const Tensor& w, const Tensor& x, const Tensor& dst, int rows_per_group) {
  const int64_t m = x.ne[1];
  return {static_cast<const char*>(w.data),
          static_cast<int64_t>(w.nb[2]),
          static_cast<int64_t>(w.nb[3]),
          x.ne[2] / w.ne[2],
          x.ne[3] / w.ne[3],
          static_cast<const char*>(x.data),
          static_cast<int64_t>(x.nb[1]),
          static_cast<int64_t>(x.nb[2]),
          static_cast<int64_t>(x.nb[3]),
          static_cast<float*>(dst.data),
          w.ne[1],
          m,
          x.ne[2],
          x.ne[3],
          ceil_div<int64_t>(m, rows_per_group)};
}

// The rows of dst = mul_mat_id(experts, x, ids): a slot each (tiles == nullptr), or routed tiles.
inline IdRows id_rows(const Tensor& experts, const Tensor& x, const Tensor& ids, const Tensor& dst,
                      const IdTiles* tiles) {
  return {static_cast<const char*>(experts.data),
          static_cast<int64_t>(experts.nb[2]),
          experts.ne[2],
          static_cast<const char*>(x.data),
          static_cast<int64_t>(x.nb[1]),
          static_cast<int64_t>(x.nb[2]),
          x.ne[1],
          static_cast<const char*>(ids.data),
          static_cast<int64_t>(ids.nb[0]),
          static_cast<int64_t>(ids.nb[1]),
          ids.ne[0],
          ids.ne[1],
          static_cast<float*>(dst.data),
          experts.ne[1],
          tiles ? *tiles : IdTiles{}};
}

// ---- the kernel ----------------------------------------------------------------------------------

// What happens to a finished output besides its store: nothing, or an elementwise chain over the
// [N, M] product (mul_mat_chain: sigmoid, softplus gates, swiglu), element (n, m) by its writer.
struct NoEpilogue {};

// Threads per block from K and the chunk size only (part of the fixed reduction order).
inline int gemv_threads(int64_t k, int e) {
  const int64_t n_chunks = ceil_div<int64_t>(k, e);
  int threads = kWarp;
  while (threads < kMaxThreads && threads < n_chunks) threads *= 2;
  return threads;
}

inline bool aligned16(const void* p, std::initializer_list<int64_t> strides) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p);
  for (int64_t s : strides) bits |= static_cast<uint64_t>(s);
  return bits % 16 == 0;
}

inline WDesc weight_desc(const Tensor& w, std::initializer_list<int64_t> batch_strides) {
  WDesc d{w.ne[0], w.ne[1], static_cast<int64_t>(w.nb[0]), static_cast<int64_t>(w.nb[1]), false};
  const auto& tr = dtype_traits(w.type);
  if (!tr.is_quant) {
    const int e = w.type == DType::F32 ? 4 : 8;
    d.vec = w.nb[0] == tr.block_bytes && w.ne[0] % e == 0 && aligned16(w.data, batch_strides) &&
            static_cast<int64_t>(w.nb[1]) % 16 == 0;
  } else {
    d.vec = aligned16(w.data, batch_strides) && static_cast<int64_t>(w.nb[1]) % 16 == 0;
  }
  if (w.nb[0] == tr.block_bytes) d.row_bytes = static_cast<int64_t>(row_bytes(w.type, w.ne[0]));
  return d;
}

inline XDesc act_desc(const Tensor& x, std::initializer_list<int64_t> row_strides) {
  return {static_cast<int64_t>(x.nb[0]), x.type,
          x.type == DType::F32 && x.nb[0] == sizeof(float) && aligned16(x.data, row_strides)};
}

// Weight rows per block: each activation load feeds this many rows. Measured on the H200 in whole
// 9B BF16 decode steps (bench tg128): 8 rows 136.9 tok/s vs 4 rows 129.6 with F32 weight chunks,
// 141.2 vs 142.6 with raw 16-bit chunks; in a standalone GEMV 4 beat 2 by ~20% and tied 8. A
// design staging x in shared memory per K tile was slower.
constexpr int kRowsPerBlock = 8;

// ---- weight chunks: E elements of one row, as floats ----------------------------------------------

// A chunk's E elements lie in kRuns runs of E / kRuns adjacent elements; run r of chunk c starts at
// element run_start(c, r) (a multiple of 4). The plain types and Q8_0 have one run (c * E); the
// packed types pair the elements that share quant bytes (a byte's two nibbles lie 16 or 32
// elements apart), so each weight byte is read once, by one thread.

// Quantized types: the chunk their traits define (quants/<type>.cuh); rows are always dense. The
// plain types specialise WChunk below.
template <DType WT>
struct WChunk {
  using Q = QuantTraits<WT>;
  static constexpr int E = Q::kChunk;
  static constexpr int kRuns = Q::kRuns;
  __device__ static int64_t run_start(int64_t c, int r) { return Q::run_start(c, r); }
  using Chunk = typename Q::Chunk;
  // Types whose chunk reads 16 bytes at once take whether the rows are 16-byte aligned (w.vec).
  __device__ static void load(const char* row, int64_t c, const WDesc& w, Chunk& out) {
    if constexpr (requires { Q::load_chunk(row, c, out, true); }) {
      Q::load_chunk(row, c, out, w.vec);
    } else {
      Q::load_chunk(row, c, out);
    }
  }
  __device__ static float dot(const Chunk& w, const float (&x)[E], float acc) { return Q::dot_chunk(w, x, acc); }
  // The same chunk from a copy of the row in shared memory (16-byte aligned), for the types
  // whose loads take a source (gemv_stream.cuh).
  __device__ static void load_staged(const char* row, int64_t c, Chunk& out) requires requires {
    Q::template load_chunk<qio::FromShared>(row, c, out, true);
  }
  { Q::template load_chunk<qio::FromShared>(row, c, out, true); }
};

template <int E>
__device__ __forceinline__ void load_plain(DType t, const char* row, int64_t c, const WDesc& w, float (&v)[E]) {
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int64_t i = c * E + e;
    v[e] = i < w.k ? load_scalar(t, row + i * w.nb0) : 0.0f;
  }
}

template <int E>
__device__ __forceinline__ float dot_plain(const float (&w)[E], const float (&x)[E], float acc) {
#pragma unroll
  for (int e = 0; e < E; ++e) acc = fmaf(w[e], x[e], acc);
  return acc;
}

template <>
struct WChunk<DType::F32> {
  static constexpr int E = 4;
  static constexpr int kRuns = 1;
  __device__ static int64_t run_start(int64_t c, int) { return c * E; }
  struct Chunk {
    float v[E];
  };
  __device__ static void load(const char* row, int64_t c, const WDesc& w, Chunk& out) {
    if (w.vec) {
      const float4 u = __ldg(reinterpret_cast<const float4*>(row) + c);
      out.v[0] = u.x, out.v[1] = u.y, out.v[2] = u.z, out.v[3] = u.w;
    } else {
      load_plain<E>(DType::F32, row, c, w, out.v);
    }
  }
  __device__ static float dot(const Chunk& w, const float (&x)[E], float acc) { return dot_plain<E>(w.v, x, acc); }
};

// F16 and BF16: 8 elements per 16 bytes, kept as raw 16-bit words until the dot (half the registers
// of floats, so two chunks per row can be in flight).
template <DType WT>
struct WChunk16 {
  static constexpr int E = 8;
  static constexpr int kRuns = 1;
  __device__ static int64_t run_start(int64_t c, int) { return c * E; }
  struct Chunk {
    uint32_t w[4];  // element 2i in the low half of w[i], 2i+1 in the high half
  };
  __device__ static float bits(uint16_t h) {
    if constexpr (WT == DType::F16) {
      return half_bits_to_f32(h);
    } else {
      return bf16_bits_to_f32(h);
    }
  }
  __device__ static void load(const char* row, int64_t c, const WDesc& w, Chunk& out) {
    if (w.vec) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(row) + c);
      out.w[0] = u.x, out.w[1] = u.y, out.w[2] = u.z, out.w[3] = u.w;
      return;
    }
    uint16_t h[E];  // past the row end: 0, which is +0 in both formats
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int64_t i = c * E + e;
      h[e] = i < w.k ? __ldg(reinterpret_cast<const uint16_t*>(row + i * w.nb0)) : uint16_t{0};
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) out.w[i] = uint32_t{h[2 * i]} | (uint32_t{h[2 * i + 1]} << 16);
  }
  __device__ static float dot(const Chunk& w, const float (&x)[E], float acc) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      acc = fmaf(bits(static_cast<uint16_t>(w.w[i] & 0xffffu)), x[2 * i], acc);
      acc = fmaf(bits(static_cast<uint16_t>(w.w[i] >> 16)), x[2 * i + 1], acc);
    }
    return acc;
  }
};

template <>
struct WChunk<DType::F16> : WChunk16<DType::F16> {};
template <>
struct WChunk<DType::BF16> : WChunk16<DType::BF16> {};

// The chunk a weight type takes against int8 activations (Q8Act): its traits' Q8Wide where they
// have one (the K-quants of quants/k4.cuh: 64 elements), else the float path's chunk.
template <DType WT>
struct WChunkQ8 : WChunk<WT> {};

template <DType WT>
requires requires { typename QuantTraits<WT>::Q8Wide; }
struct WChunkQ8<WT> {
  using Q = typename QuantTraits<WT>::Q8Wide;
  static constexpr int E = Q::kChunk;
  static constexpr int kRuns = Q::kRuns;
  __device__ static int64_t run_start(int64_t c, int r) { return Q::run_start(c, r); }
  using Chunk = typename Q::Chunk;
  __device__ static void load(const char* row, int64_t c, const WDesc& w, Chunk& out) {
    Q::load_chunk(row, c, out, w.vec);
  }
  __device__ static void load_staged(const char* row, int64_t c, Chunk& out) {
    Q::template load_chunk<qio::FromShared>(row, c, out, true);
  }
  // What the chunk derives from its loaded bytes (K-quants: the header's factors), where the
  // traits defer it from load_chunk.
  __device__ static void ready(Chunk& out) {
    if constexpr (requires { Q::ready(out); }) Q::ready(out);
  }
};

// C::ready on a loaded chunk, for the chunk types that have it.
template <class C>
__device__ __forceinline__ void chunk_ready(typename C::Chunk& c) {
  if constexpr (requires { C::ready(c); }) C::ready(c);
}

// The activations of chunk c of weight chunk type C, run by run (v[r * L + e] is element
// run_start(c, r) + e).
template <class C>
__device__ __forceinline__ void load_x(const char* row, int64_t c, int64_t k, const XDesc& x, float (&v)[C::E]) {
  constexpr int L = C::E / C::kRuns;
  static_assert(L % 4 == 0, "runs are whole float4s");
#pragma unroll
  for (int r = 0; r < C::kRuns; ++r) {
    const int64_t s = C::run_start(c, r);
    if (x.vec) {
      // One run (plain types, Q8_0): the float4 index exactly as before runs existed.
      const int64_t f4 = C::kRuns == 1 ? c * (C::E / 4) : s / 4;
      const float4* p = reinterpret_cast<const float4*>(row) + f4;
#pragma unroll
      for (int i = 0; i < L / 4; ++i) {
        const float4 u = __ldg(p + i);
        float* o = v + r * L + 4 * i;
        o[0] = u.x, o[1] = u.y, o[2] = u.z, o[3] = u.w;
      }
    } else {
#pragma unroll
      for (int e = 0; e < L; ++e) {
        const int64_t i = s + e;
        v[r * L + e] = i < k ? load_scalar(x.type, row + i * x.nb0) : 0.0f;
      }
    }
  }
}

// ---- activations: how a block reads the x side of chunk c and dots it with a weight chunk ------

// Float activations (any float dtype and stride), converted to f32 on load.
struct F32Act {
  XDesc x;
  template <class C>
  struct Vals {
    float v[C::E];
  };
  template <class C>
  __device__ void load(const char* row, int64_t c, int64_t k, Vals<C>& out) const {
    load_x<C>(row, c, k, x, out.v);
  }
  template <class C>
  __device__ static float dot(const typename C::Chunk& w, const Vals<C>& xv, float acc) {
    return C::dot(w, xv.v, acc);
  }
};

// Int8 activations (Precision::FAST, matmul_gemv_q8.cu): rows as quantize_rows_q8 writes them, k
// int8 quants then one float scale per 32 elements. A run (16 or 8 adjacent elements) lies in one
// 32-element block, so it has one scale; the weight traits' dot_q8 does the rest.
struct Q8Act {
  template <class C>
  struct Vals {
    int q[C::E / 4];  // run r's quants in words r * L / 4 ..
    float d[C::kRuns];
  };
  template <class C>
  __device__ void load(const char* row, int64_t c, int64_t k, Vals<C>& out) const {
    constexpr int L = C::E / C::kRuns;
    static_assert(L == 32 || L == 16 || L == 8, "runs are 8, 16 or 32 quants");
#pragma unroll
    for (int r = 0; r < C::kRuns; ++r) {
      const int64_t s = C::run_start(c, r);
      if constexpr (L == 32) {
        const int4 u = __ldg(reinterpret_cast<const int4*>(row + s));
        const int4 v = __ldg(reinterpret_cast<const int4*>(row + s) + 1);
        out.q[8 * r] = u.x, out.q[8 * r + 1] = u.y, out.q[8 * r + 2] = u.z, out.q[8 * r + 3] = u.w;
        out.q[8 * r + 4] = v.x, out.q[8 * r + 5] = v.y, out.q[8 * r + 6] = v.z, out.q[8 * r + 7] = v.w;
      } else if constexpr (L == 16) {
        const int4 u = __ldg(reinterpret_cast<const int4*>(row + s));
        out.q[4 * r] = u.x, out.q[4 * r + 1] = u.y, out.q[4 * r + 2] = u.z, out.q[4 * r + 3] = u.w;
      } else {
        const int2 u = __ldg(reinterpret_cast<const int2*>(row + s));
        out.q[2 * r] = u.x, out.q[2 * r + 1] = u.y;
      }
      out.d[r] = __ldg(reinterpret_cast<const float*>(row + k) + s / 32);
    }
  }
  template <class C>
  __device__ static float dot(const typename C::Chunk& w, const Vals<C>& xv, float acc) {
    return C::Q::dot_q8(w, xv.q, xv.d, acc);
  }
};

template <DType WT>
constexpr int kChunkUnroll = is_weight_only_quant(WT) ? 1 : 2;

// Chunks per thread: int8 activations leave registers for two chunks in flight, and the thread
// count halves so that a 4096-long row still gives each thread two (ncu: the one-chunk Q4_K GEMVs
// were latency-bound at 35% occupancy).
// The weight chunk type of the kernel: WChunkQ8 against int8 activations, else WChunk.
template <DType WT, class Act>
using ActChunk = std::conditional_t<std::is_same_v<Act, Q8Act>, WChunkQ8<WT>, WChunk<WT>>;

template <DType WT, class Act>
constexpr int kChunksInFlight = std::is_same_v<Act, Q8Act> ? 2 : kChunkUnroll<WT>;
// (The 64-element int8 chunks keep the 32-element ones' thread count: one chunk each per 64.)
template <DType WT, class Act>
constexpr int kThreadChunks = std::is_same_v<Act, Q8Act>&& ActChunk<WT, Act>::E < 64 ? 2 : 1;

// The int8 GEMV of a plain product asks L2 for the block's weight rows before pdl_wait when the
// weights are fixed (WDesc::early): the product's weight reads then overlap the kernel before it,
// and the loop finds them in L2. A prefetch holds no registers: loading a thread's chunks into
// registers early instead doubled the kernel's (64 -> 128 at 2 rows), even as a branch of its own.
// (MUL_MAT_ID's experts come from ids an earlier kernel writes. Measured slower on the 9B BF16
// decode step, whose GEMVs follow GEMVs: prefetching the block's weight rows into L2 before the
// wait, 135-140 vs 151 tok/s; loading the first weight chunks into registers before it, 167 vs 171
// tok/s and verify 1.89x vs 1.71x a decode step: 128 registers instead of 96.)
template <class Act, class Rows>
constexpr bool kEarlyWeights = std::is_same_v<Act, Q8Act> &&
                               (std::is_same_v<Rows, MulMatRows> || std::is_same_v<Rows, PairRows<MulMatRows>>);

// Row r of the block's R weight rows (past the matrix: its last row, read and never stored).
template <int R>
__device__ __forceinline__ void block_rows(const char* w0, int64_t n0, const WDesc& w, const char* (&wrow)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = w0 + (n0 + r < w.n ? n0 + r : w.n - 1) * w.nb1;
}

// The R weight rows a block takes from row n0: R of wg, or for a pair (kPair) R / 2 of wg (gate)
// then R / 2 of wu (up).
template <int R, bool kPair>
__device__ __forceinline__ void group_rows(const char* wg, const char* wu, int64_t n0, const WDesc& w,
                                           const char* (&wrow)[R]) {
  if constexpr (kPair) {
    constexpr int RO = R / 2;
    const char* g[RO];
    const char* u[RO];
    block_rows<RO>(wg, n0, w, g);
    block_rows<RO>(wu, n0, w, u);
#pragma unroll
    for (int r = 0; r < RO; ++r) wrow[r] = g[r], wrow[RO + r] = u[r];
  } else {
    block_rows<R>(wg, n0, w, wrow);
  }
}

// The bytes of the block's dense weight rows n0 .. n0 + R - 1 into L2, a 128-byte line per thread
// at a time.
template <int M, int R>
__device__ __forceinline__ void prefetch_rows(const MulMatRows& rows, const WDesc& w, int64_t n0) {
  if (!w.early || w.row_bytes == 0 || blockIdx.y >= rows.count()) return;
  Group<M> grp;  // MulMatRows::resolve reads its parameters only
  rows.template resolve<M>(blockIdx.y, grp);
  const int64_t n_rows = n0 + R < w.n ? R : w.n - n0;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= n_rows) break;
    const char* row = grp.w + (n0 + r) * w.nb1;
    for (int64_t off = int64_t{threadIdx.x} * 128; off < w.row_bytes; off += int64_t{blockDim.x} * 128)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(row + off));
  }
}

// A pair's: R / 2 rows of each weight matrix.
template <int M, int R>
__device__ __forceinline__ void prefetch_rows(const PairRows<MulMatRows>& rows, const WDesc& w, int64_t n0) {
  prefetch_rows<M, R / 2>(rows.gate, w, n0);
  prefetch_rows<M, R / 2>(rows.up, w, n0);
}

template <DType WT, int M, int R, class Act, class Rows, class Epi>
__global__ void __launch_bounds__(kMaxThreads) gemv_kernel(WDesc w, Act x, Rows rows, Epi epi) {
  using C = ActChunk<WT, Act>;
  constexpr bool kPair = kPaired<Rows>;
  constexpr int RO = kPair ? R / 2 : R;  // output rows of each weight matrix
  static_assert(!kPair || (R % 2 == 0 && std::is_same_v<Epi, NoEpilogue>), "a pair: R / 2 rows of each");
  __shared__ float red[kMaxThreads / kWarp][R * M];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarp, warp = tid / kWarp;
  const int n_warps = static_cast<int>(blockDim.x) / kWarp;
  const int64_t n_chunks = ceil_div<int64_t>(w.k, C::E);
  const int64_t n0 = static_cast<int64_t>(kTwin<Rows> ? blockIdx.x % (gridDim.x / 2) : blockIdx.x) * RO;

  // Launched as a programmatic dependent (launch_rows): the block is resident and set up while the
  // previous kernel finishes, and waits here before reading anything an earlier kernel wrote.
  pdl_trigger();
  if constexpr (kEarlyWeights<Act, Rows>) prefetch_rows<M, R>(rows, w, n0);
  pdl_wait();

  for (int64_t g = blockIdx.y; g < rows.count(); g += gridDim.y) {
    Group<M> grp;
    if (!lead_rows(rows).template resolve<M>(g, grp)) continue;  // uniform across the block
    [[maybe_unused]] Group<M> up, act;
    if constexpr (kPair) {
      rows.up.template resolve<M>(g, up);
      rows.act.template resolve<M>(g, act);
    }
    // Thread tid < RO * M finishes output (weight row n0 + tid / M, activation row tid % M).
    const int out_r = tid / M, out_i = tid % M;
    float* out = pick_out(grp, out_i);
    const bool writes = tid < RO * M && n0 + out_r < w.n && out_i < grp.count;
    [[maybe_unused]] float epi_in[kMaxChain];  // the epilogue's operands, fetched while the weights stream
    if constexpr (!std::is_same_v<Epi, NoEpilogue>)
      if (writes) chain_fetch(epi, n0 + out_r, grp.row0 + out_i, 0, 0, epi_in);
    if (grp.bad_expert) {
      if (writes) {
        out[n0 + out_r] = __int_as_float(0x7fc00000);
        if constexpr (kPair) {  // as the unfused kernels: up NaN, and swiglu's NaN of the two
          pick_out(up, out_i)[n0 + out_r] = out[n0 + out_r];
          pick_out(act, out_i)[n0 + out_r] = apply_binary<BinaryOp::SWIGLU>(out[n0 + out_r], out[n0 + out_r]);
        }
      }
      continue;
    }
    const char* wrow[R];
    if constexpr (kPair) {
      group_rows<R, true>(grp.w, up.w, n0, w, wrow);
    } else {
      group_rows<R, false>(grp.w, nullptr, n0, w, wrow);
    }

    float acc[R][M];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < M; ++i) acc[r][i] = 0.0f;

        // Two chunks in flight per thread for the plain types; one for the weight-only quantized
        // types, whose 32-element chunks carry enough loads (and registers) on their own.
#pragma unroll(kChunksInFlight <WT, Act>)
    for (int64_t c = tid; c < n_chunks; c += blockDim.x) {
      typename C::Chunk wc[R];
#pragma unroll
      for (int r = 0; r < R; ++r) C::load(wrow[r], c, w, wc[r]);
#pragma unroll
      for (int r = 0; r < R; ++r) chunk_ready<C>(wc[r]);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        typename Act::template Vals<C> xv;
        x.template load<C>(grp.x[i], c, w.k, xv);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r][i] = Act::template dot<C>(wc[r], xv, acc[r][i]);
      }
    }

#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const float s = warp_sum(acc[r][i]);
        if (lane == 0) red[warp][r * M + i] = s;
      }
    __syncthreads();
    if (writes) {
      float s = red[0][tid];
      for (int v = 1; v < n_warps; ++v) s += red[v][tid];
      out[n0 + out_r] = s;
      if constexpr (kPair) {  // the up row's sum in the same order, then the swiglu as its kernel has it
        float u = red[0][tid + RO * M];
        for (int v = 1; v < n_warps; ++v) u += red[v][tid + RO * M];
        pick_out(up, out_i)[n0 + out_r] = u;
        pick_out(act, out_i)[n0 + out_r] = apply_binary<BinaryOp::SWIGLU>(s, u);
      }
      if constexpr (!std::is_same_v<Epi, NoEpilogue>) chain_run(epi, s, n0 + out_r, grp.row0 + out_i, 0, 0, epi_in);
    }
    __syncthreads();
  }
}

template <DType WT, class Act>
int gemv_block_threads(int64_t k) {
  return gemv_threads(k, ActChunk<WT, Act>::E * kThreadChunks<WT, Act>);
}

// Blocks of `kernel` at `threads` a block (and `smem` bytes of dynamic shared memory) the whole
// device holds at once (at least 1).
template <class... KArgs>
int64_t device_slots(const Ctx& ctx, void (*kernel)(KArgs...), int threads, size_t smem = 0) {
  int per_sm = 0, sms = 0;
  GL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  GL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device));
  return std::max<int64_t>(int64_t{per_sm} * sms, 1);
}

// GEMVs are launched as programmatic dependents (common.cuh): resident while the previous kernel
// finishes, they wait (pdl_wait) before reading activations or writing anything.
template <DType WT, int M, int R, class Act, class Rows, class Epi>
void launch_rows(const Ctx& ctx, const WDesc& w, const Act& x, const Rows& rows, const Epi& epi) {
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(w.n, kPaired<Rows> ? R / 2 : R) * (kTwin<Rows> ? 2 : 1)),
                  static_cast<unsigned>(rows.count() < kMaxGridY ? rows.count() : kMaxGridY));
  const dim3 block(static_cast<unsigned>(gemv_block_threads<WT, Act>(w.k)));
  launch_pdl(gemv_kernel<WT, M, R, Act, Rows, Epi>, grid, block, ctx.stream, w, x, rows, epi);
  GL_CUDA_CHECK(cudaGetLastError());
}

// Blocks of this instantiation at this block size the whole device holds at once.
template <DType WT, int M, int R, class Act, class Rows, class Epi>
int64_t gemv_slots(const Ctx& ctx, int threads) {
  return device_slots(ctx, gemv_kernel<WT, M, R, Act, Rows, Epi>, threads);
}

// How evenly `blocks` fill whole waves of `slots`: 1 when the last wave is full.
inline double wave_fill(int64_t blocks, int64_t slots) {
  return static_cast<double>(blocks) / static_cast<double>(ceil_div(blocks, slots) * slots);
}

}  // namespace gl::cuda::mm
