// gdr_chunked.cu - GATED_DELTA_RULE on CUDA in chunked (WY / UT) form, for prefill.
//
// Spec section 6.5 (the CPU runs the same recurrence token by token). Per value head j and chunk of
// C = 64 tokens (gamma_i the in-chunk cumulative log decay, D[i][m] = exp(gamma_i - gamma_m) for
// m <= i, P_i = exp(gamma_i), padded tokens zero with g = beta = 0):
//   A  = strictly lower (diag(beta) K K^T .* D)         M = lower-incl-diag (Q K^T .* D)
//   W  = (I + A)^-1 diag(beta P) K                       U = (I + A)^-1 diag(beta) V
//   V' = U - W S                                         O = diag(P) Q S + M V'
//   S  = P_last S + (diag(D[last]) K)^T V'
// Why three kernels: only V' and S depend on the state, so the recurrence across chunks is
// reduced to two small products per chunk, and everything else runs for all chunks at once.
//   1. prep  (chunk, head), 256 threads: gates, the two 64x64 Gram products (one 4x4 tile of each
//      per thread, whole warps skipping the zero upper triangle), and the unit-triangular solve by
//      forward substitution, one column of [K | V] per thread held in 64 registers. Writes W^T,
//      U, diag(P) Q, diag(D[last]) K and M^T to scratch.
//   2. scan  (16 Dv columns, head), 128 threads: the state tile [Dk][16] stays in shared memory
//      across chunks; per chunk V' = U - W S (the two halves of the block take alternate key
//      rows), then S = P_last S + Kd^T V'. Columns of S evolve independently, so 8 blocks share
//      a 128-wide head (two blocks per SM fit), and each records the chunk's incoming state for
//      kernel 3. This is the only sequential part: T / 64 steps instead of the recurrent T.
//   3. out   (32 Dv columns, chunk, head), 128 threads: O = (diag(P) Q) S_chunk + M V'.
// Every product is fp32 FMA on 4x4 register tiles read as float4 from shared memory, with the
// matrices stored so that a tile's row and column quads are contiguous (W, Q and M transposed)
// and the lanes laid out so that loads broadcast to lane pairs (pair_tile). Scratch reads are
// cp.async copies that overlap the products where the scan allows. Scratch (the node's planned
// workspace) is ~55 MB at the Qwen3.5-9B prefill shape (Dk = Dv = 128, Hv = 32, T = 512);
// longer inputs run in passes of kPassTokens. On the H200 at that shape (ncu, base clock) the
// three kernels take ~50 + 75 + 40 us against ~1.5 ms for the recurrent kernel.
#include <cuda_pipeline.h>

#include <algorithm>

#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

using mm::TView;

constexpr int kC = 64;       // chunk length
constexpr int kLd = kC + 4;  // row stride of the prep kernel's k/q tiles: float4 rows, fewer bank conflicts
constexpr int kPrepThreads = 256;
constexpr int kScanTv = 16;  // Dv columns per scan block
constexpr int kOutTv = 32;   // Dv columns per output block
// Scan: two halves of 4x4 tiles over C x Tv. Out: 4x4 tiles over C x Tv.
constexpr int kScanThreads = 2 * (kC / 4) * (kScanTv / 4);
constexpr int kOutThreads = (kC / 4) * (kOutTv / 4);
constexpr int64_t kPassTokens = 1024;  // tokens per pass (bounds the scratch)
static_assert(kPrepThreads % 32 == 0 && kC % (kPrepThreads / 32) == 0, "prep_load: whole warps, equal token rows");

struct ChunkArgs {
  TView q, k, v, g, beta, state;
  int dk, hk, dv, hv;
  int64_t n_tokens;
  int n_chunks;
  int dkp, dvp;  // Dk rounded up to 8, Dv rounded up to kOutTv; the padding is zero
  // Scratch, each per (head, chunk) hc = j * n_chunks + c:
  float* wt;     // [hc][dkp][C]  W^T
  float* kd;     // [hc][C][dkp]  rows D[last][i] k_i
  float* qt;     // [hc][dkp][C]  (diag(P) Q)^T
  float* mt;     // [hc][C][C]    M^T
  float* u;      // [hc][C][dvp]  U, overwritten with V' by the scan
  float* s0;     // [hc][dkp][dvp] state at the chunk's first token
  float* plast;  // [hc]          P of the chunk's last token
  float* o;      // o [Dv, Hv, T] from this pass's first token
  float* s_out;  // final state [Dv, Dk, Hv]
};

__device__ __forceinline__ const char* elem(const TView& t, int64_t i0, int64_t i1, int64_t i2) {
  return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2];
}
// q, k, v, g and beta are F32 here (gated_delta_rule checks); the state may be any plain float type.
__device__ __forceinline__ float at(const TView& t, int64_t i0, int64_t i1, int64_t i2) {
  return *reinterpret_cast<const float*>(elem(t, i0, i1, i2));
}

// Element (i0, i1, token t0 + i) with padding (i0 >= n0 or i >= len) read as 0. The load is
// clamped to the last element and masked by a multiply, not skipped: a select or branch lets the
// compiler put each load under a branch that consumes it at once, so a thread's loads wait for
// one another instead of being in flight together.
__device__ __forceinline__ float at_or_zero(const TView& t, int i0, int n0, int64_t i1, int64_t t0, int i, int len) {
  const float in = i0 < n0 && i < len ? 1.0f : 0.0f;
  return in * at(t, min(i0, n0 - 1), i1, t0 + min(i, len - 1));
}

__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st4(float* p, float4 x) { *reinterpret_cast<float4*>(p) = x; }

// acc[r][c] += a[r] * b[c]
template <int R>
__device__ __forceinline__ void outer(float (&acc)[R][4], const float (&a)[R], float4 b) {
  const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = fmaf(a[r], bv[c], acc[r][c]);
}

__device__ __forceinline__ void outer4(float (&acc)[4][4], float4 a, float4 b) {
  const float av[4] = {a.x, a.y, a.z, a.w};
  outer<4>(acc, av, b);
}

// Shared memory returns one register per lane per cycle, so a float4 load costs a warp 4 cycles,
// or 2 when lanes t and t^1 (or t and t^2) read the same address. Tile (row, col) of thread tile t
// in a grid of kColTiles (even) tile columns: lanes t and t^1 share the row, t and t^2 the column,
// so both operands of a 4x4 tile product cost 2 cycles each (4 per 16 FMAs, the FMA rate).
template <int kColTiles>
__device__ __forceinline__ void pair_tile(int t, int& row, int& col) {
  static_assert(kColTiles % 2 == 0, "pair_tile: even number of tile columns");
  constexpr int kHalf = kColTiles / 2;
  col = (t & 1) | (((t >> 2) % kHalf) << 1);
  row = ((t >> 1) & 1) | (((t >> 2) / kHalf) << 1);
}

// Scratch reads go to shared memory asynchronously (cp.async): every load of a block is in flight
// at once instead of one load-store round trip per float4. wait_copies() completes them.
// n floats from src (n % 4 == 0, both 16-byte aligned):
template <int kThreads>
__device__ __forceinline__ void copy_async(float* dst, const float* src, int n) {
  for (int e = 4 * static_cast<int>(threadIdx.x); e < n; e += 4 * kThreads)
    __pipeline_memcpy_async(dst + e, src + e, 16);
}

// rows x kWidth floats of a row-major matrix with row stride ld, packed into dst.
template <int kThreads, int kWidth>
__device__ __forceinline__ void copy_tile_async(float* dst, const float* src, int rows, int64_t ld) {
  constexpr int kQuads = kWidth / 4;
  for (int e = static_cast<int>(threadIdx.x); e < rows * kQuads; e += kThreads) {
    const int r = e / kQuads, c4 = 4 * (e % kQuads);
    __pipeline_memcpy_async(dst + r * kWidth + c4, src + r * ld + c4, 16);
  }
}

__device__ __forceinline__ void wait_copies() {
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
}

// ---- 1. prep ---------------------------------------------------------------

// x <- (I + A)^-1 x for one column, ats[m][i] = A[i][m] (strictly lower A). Same order as the
// CPU: row i subtracts A[i][m] x_m for m ascending.
__device__ __forceinline__ void forward_substitute(const float* ats, float (&x)[kC]) {
#pragma unroll
  for (int m = 0; m < kC - 1; ++m) {
#pragma unroll
    for (int i4 = (m + 1) / 4; i4 < kC / 4; ++i4) {
      const float4 a4 = ld4(ats + m * kC + 4 * i4);
      const float av[4] = {a4.x, a4.y, a4.z, a4.w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (4 * i4 + e > m) x[4 * i4 + e] = fmaf(-av[e], x[m], x[4 * i4 + e]);
    }
  }
}

struct PrepSmem {
  float *kts, *qts, *ats, *gs, *gam, *bet, *pc, *dl;
};

__host__ __device__ constexpr int64_t prep_smem_floats(int dkp) { return 2 * int64_t{dkp} * kLd + kC * kC + 5 * kC; }

// Gates (cumulative log decay gamma, P_i, D[last][i]) and the k, q rows of the chunk.
__device__ void prep_load(const ChunkArgs& a, const PrepSmem& s, int64_t j, int64_t hc, int64_t t0, int len) {
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < kC) {
    const int i = min(tid, len - 1);
    const float g = at(a.g, j, t0 + i, 0), beta = at(a.beta, j, t0 + i, 0);
    s.gs[tid] = tid < len ? g : 0.0f;
    s.bet[tid] = tid < len ? beta : 0.0f;
  }
  __syncthreads();
  if (tid < kC) {
    float gamma = 0.0f;
    for (int m = 0; m <= tid; ++m) gamma += s.gs[m];
    s.gam[tid] = gamma;
    s.pc[tid] = expf(gamma);
  }
  __syncthreads();
  if (tid < kC) s.dl[tid] = expf(s.gam[kC - 1] - s.gam[tid]);  // padded g = 0: gam[C-1] = gam[len-1]
  if (tid == 0) a.plast[hc] = s.pc[kC - 1];
  __syncthreads();
  // Lanes run along the key dim (coalesced reads of the possibly strided rows, and of the kd rows
  // written); warp w takes tokens w, w + 8, ... Each lane's loads are issued before its stores,
  // which could alias them as far as the compiler knows.
  constexpr int kWarps = kPrepThreads / 32, kRows = kC / kWarps;
  const int lane = tid % 32, warp = tid / 32;
  const int64_t jk = j % a.hk;  // value head j reads key head j % Hk
  float* kd = a.kd + hc * kC * a.dkp;
  for (int ik = lane; ik < a.dkp; ik += 32) {
    float kv[kRows], qv[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int i = warp + r * kWarps;
      kv[r] = at_or_zero(a.k, ik, a.dk, jk, t0, i, len);
      qv[r] = at_or_zero(a.q, ik, a.dk, jk, t0, i, len);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int i = warp + r * kWarps;
      s.kts[ik * kLd + i] = kv[r];
      s.qts[ik * kLd + i] = qv[r];
      kd[int64_t{i} * a.dkp + ik] = s.dl[i] * kv[r];
    }
  }
  __syncthreads();
}

// Row and column of entry n of a lower triangle enumerated row by row: (0,0), (1,0), (1,1), ...
__device__ __forceinline__ void lower_entry(int n, int& row, int& col) {
  row = 0;
  while ((row + 1) * (row + 2) / 2 <= n) ++row;
  col = n - row * (row + 1) / 2;
}

// ats = A^T and mt = M^T, one 4x4 tile of both per thread, in 2x2 groups of tiles laid out as
// pair_tile does. The 36 groups on or below the diagonal go to threads 0..143 and the 28 zero
// groups above it to the rest, so that whole warps skip the products rather than single lanes.
__device__ void prep_gram(const ChunkArgs& a, const PrepSmem& s, int64_t hc) {
  constexpr int kGroups = kC / 8, kLowerThreads = 4 * kGroups * (kGroups + 1) / 2;
  static_assert(kPrepThreads == 4 * kGroups * kGroups, "one 4x4 Gram tile per prep thread");
  const int tid = static_cast<int>(threadIdx.x);
  int gi, gm;
  if (tid < kLowerThreads) {
    lower_entry(tid / 4, gi, gm);
  } else {
    lower_entry((tid - kLowerThreads) / 4, gm, gi);  // (gm - 1, gi) runs over the strict upper triangle
    ++gm;
  }
  const int i0 = 8 * gi + 4 * ((tid >> 1) & 1), m0 = 8 * gm + 4 * (tid & 1);
  float kk[4][4] = {}, qk[4][4] = {};
  if (i0 >= m0) {
    for (int ik = 0; ik < a.dk; ++ik) {
      const float4 km = ld4(s.kts + ik * kLd + m0);
      outer4(kk, ld4(s.kts + ik * kLd + i0), km);
      outer4(qk, ld4(s.qts + ik * kLd + i0), km);
    }
  }
  float* mt = a.mt + hc * kC * kC;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int m = m0 + c;
    float ac[4], mc[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = i0 + r;
      const float d = m <= i ? expf(s.gam[i] - s.gam[m]) : 0.0f;
      ac[r] = m < i ? s.bet[i] * d * kk[r][c] : 0.0f;
      mc[r] = d * qk[r][c];
    }
    st4(s.ats + m * kC + i0, make_float4(ac[0], ac[1], ac[2], ac[3]));
    st4(mt + m * kC + i0, make_float4(mc[0], mc[1], mc[2], mc[3]));
  }
}

// Columns of [diag(beta P) K | diag(beta) V] through the solve: W^T rows and U columns.
__device__ void prep_solve(const ChunkArgs& a, const PrepSmem& s, int64_t j, int64_t hc, int64_t t0, int len) {
  for (int col = static_cast<int>(threadIdx.x); col < a.dkp + a.dvp; col += kPrepThreads) {
    float x[kC];
    const bool is_w = col < a.dkp;
    const int iv = col - a.dkp;
    if (is_w) {
#pragma unroll
      for (int i = 0; i < kC; ++i) x[i] = s.bet[i] * s.pc[i] * s.kts[col * kLd + i];
    } else {
      // v[iv, j, t0 + i] as at_or_zero reads it (beta is 0 on padded tokens), row pointer formed once.
      const char* v = elem(a.v, min(iv, a.dv - 1), j, t0);
      const int64_t nb = a.v.nb[2];
      const float in = iv < a.dv ? 1.0f : 0.0f;
#pragma unroll
      for (int i = 0; i < kC; ++i) x[i] = in * s.bet[i] * *reinterpret_cast<const float*>(v + min(i, len - 1) * nb);
    }
    forward_substitute(s.ats, x);
    if (is_w) {
      float* w = a.wt + (hc * a.dkp + col) * kC;
#pragma unroll
      for (int i = 0; i < kC; i += 4) st4(w + i, make_float4(x[i], x[i + 1], x[i + 2], x[i + 3]));
    } else {
      float* u = a.u + hc * kC * a.dvp + iv;
#pragma unroll
      for (int i = 0; i < kC; ++i) u[int64_t{i} * a.dvp] = x[i];
    }
  }
}

__global__ void __launch_bounds__(kPrepThreads, 2) gdr_prep_kernel(ChunkArgs a) {
  extern __shared__ float4 smem_prep[];
  float* base = reinterpret_cast<float*>(smem_prep);
  PrepSmem s;
  s.kts = base;                 // [dkp][kLd] k of the chunk, key dim major
  s.qts = s.kts + a.dkp * kLd;  // [dkp][kLd] q
  s.ats = s.qts + a.dkp * kLd;  // [C][C] ats[m][i] = A[i][m]
  s.gs = s.ats + kC * kC;       // [C] g
  s.gam = s.gs + kC;            // [C] gamma
  s.bet = s.gam + kC;           // [C] beta
  s.pc = s.bet + kC;            // [C] P
  s.dl = s.pc + kC;             // [C] D[last][i]
  const int c = static_cast<int>(blockIdx.x);
  const int64_t j = blockIdx.y, hc = j * a.n_chunks + c, t0 = int64_t{c} * kC;
  const int len = static_cast<int>(min(int64_t{kC}, a.n_tokens - t0));
  prep_load(a, s, j, hc, t0, len);
  prep_gram(a, s, hc);
  float* qt = a.qt + hc * a.dkp * kC;  // scaled q, transposed: read from qts, written coalesced
  for (int e = static_cast<int>(threadIdx.x); e < a.dkp * kC; e += kPrepThreads)
    qt[e] = s.pc[e % kC] * s.qts[(e / kC) * kLd + e % kC];
  __syncthreads();
  prep_solve(a, s, j, hc, t0, len);
}

// ---- 2. scan ---------------------------------------------------------------

__host__ __device__ constexpr int64_t scan_smem_floats(int dkp) {
  return int64_t{dkp} * kScanTv + 2 * int64_t{dkp} * kC + 2 * kC * kScanTv;
}

// V' = U - W S for the block's columns, written back to shared memory (for the state update)
// and to a.u (for the output kernel). One 4x4 tile per thread of each half of the block; the
// halves take the even and the odd key rows and meet in red.
__device__ void scan_new_values(const ChunkArgs& a, const float* ss, const float* wts, float* vps, float* red,
                                float* u) {
  constexpr int kHalf = kScanThreads / 2;
  const int tid = static_cast<int>(threadIdx.x), half = tid / kHalf;
  int ti, tc;
  pair_tile<kScanTv / 4>(tid % kHalf, ti, tc);
  const int i0 = 4 * ti, c0 = 4 * tc;
  float acc[4][4] = {};
  for (int ik = half; ik < a.dk; ik += 2) outer4(acc, ld4(wts + ik * kC + i0), ld4(ss + ik * kScanTv + c0));
  if (half == 1) {
#pragma unroll
    for (int r = 0; r < 4; ++r)
      st4(red + (i0 + r) * kScanTv + c0, make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
  }
  __pipeline_wait_prior(0);  // U (in vps) and kd, copied while W S was computed
  __syncthreads();
  if (half == 1) return;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    float* vp = vps + (i0 + r) * kScanTv + c0;
    const float4 x = ld4(vp), o = ld4(red + (i0 + r) * kScanTv + c0);
    const float4 y =
        make_float4(x.x - (acc[r][0] + o.x), x.y - (acc[r][1] + o.y), x.z - (acc[r][2] + o.z), x.w - (acc[r][3] + o.w));
    st4(vp, y);
    st4(u + int64_t{i0 + r} * a.dvp + c0, y);
  }
}

// S = P_last S + Kd^T V' over the chunk's len tokens, 4x4 state tiles (dkp / 4 is even).
__device__ void scan_update_state(const ChunkArgs& a, float* ss, const float* kds, const float* vps, float p, int len) {
  constexpr int kColTiles = kScanTv / 4;
  for (int tile = static_cast<int>(threadIdx.x); tile < (a.dkp / 4) * kColTiles; tile += kScanThreads) {
    int tk, tc;
    pair_tile<kColTiles>(tile, tk, tc);
    const int k0 = 4 * tk, c0 = 4 * tc;
    float acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float4 x = ld4(ss + (k0 + r) * kScanTv + c0);
      acc[r][0] = p * x.x, acc[r][1] = p * x.y, acc[r][2] = p * x.z, acc[r][3] = p * x.w;
    }
    for (int i = 0; i < len; ++i) outer4(acc, ld4(kds + i * a.dkp + k0), ld4(vps + i * kScanTv + c0));
#pragma unroll
    for (int r = 0; r < 4; ++r)
      st4(ss + (k0 + r) * kScanTv + c0, make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
  }
}

__global__ void __launch_bounds__(kScanThreads) gdr_scan_kernel(ChunkArgs a) {
  extern __shared__ float4 smem_scan[];
  float* ss = reinterpret_cast<float*>(smem_scan);  // [dkp][Tv] state tile
  float* wts = ss + a.dkp * kScanTv;                // [dkp][C] W^T
  float* kds = wts + a.dkp * kC;                    // [C][dkp] decayed k rows
  float* vps = kds + kC * a.dkp;                    // [C][Tv] U, then V'
  float* red = vps + kC * kScanTv;                  // [C][Tv] half of W S
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t j = blockIdx.y;
  const int col0 = static_cast<int>(blockIdx.x) * kScanTv;
  constexpr int kColQuads = kScanTv / 4;
  const auto u_of = [&](int64_t hc) { return a.u + hc * kC * a.dvp + col0; };
  for (int e = tid; e < a.dkp * kScanTv; e += kScanThreads) {
    const int ik = e / kScanTv, iv = col0 + e % kScanTv;
    ss[e] = ik < a.dk && iv < a.dv ? mm::load_scalar(a.state.type, elem(a.state, iv, ik, j)) : 0.0f;
  }
  // Copies overlap the products: chunk c + 1's W^T loads while chunk c updates the state, chunk
  // c's kd and U while it computes W S. Two cp.async groups are in flight at the top of a chunk.
  copy_async<kScanThreads>(wts, a.wt + j * a.n_chunks * a.dkp * kC, a.dkp * kC);
  __pipeline_commit();
  for (int c = 0; c < a.n_chunks; ++c) {
    const int64_t hc = j * a.n_chunks + c;
    const int len = static_cast<int>(min(int64_t{kC}, a.n_tokens - int64_t{c} * kC));
    copy_async<kScanThreads>(kds, a.kd + hc * kC * a.dkp, kC * a.dkp);
    copy_tile_async<kScanThreads, kScanTv>(vps, u_of(hc), kC, a.dvp);
    __pipeline_commit();
    __pipeline_wait_prior(1);  // W^T of chunk c
    __syncthreads();           // also: the previous chunk has written ss
    float* s0 = a.s0 + hc * a.dkp * a.dvp + col0;
    for (int e = tid; e < a.dkp * kColQuads; e += kScanThreads) {
      const int ik = e / kColQuads, c4 = 4 * (e % kColQuads);
      st4(s0 + int64_t{ik} * a.dvp + c4, ld4(ss + ik * kScanTv + c4));
    }
    scan_new_values(a, ss, wts, vps, red, u_of(hc));
    __syncthreads();
    if (c + 1 < a.n_chunks) copy_async<kScanThreads>(wts, a.wt + (hc + 1) * a.dkp * kC, a.dkp * kC);
    __pipeline_commit();
    scan_update_state(a, ss, kds, vps, a.plast[hc], len);
    __syncthreads();  // kds and vps are free for the next chunk's copies
  }
  float* snap = a.s_out + j * a.dk * a.dv;  // [Dk][Dv] of head j
  for (int e = tid; e < a.dk * kScanTv; e += kScanThreads) {
    const int ik = e / kScanTv, iv = col0 + e % kScanTv;
    if (iv < a.dv) snap[int64_t{ik} * a.dv + iv] = ss[ik * kScanTv + e % kScanTv];
  }
}

// ---- 3. out ----------------------------------------------------------------

__host__ __device__ constexpr int64_t out_smem_floats(int dkp) {
  return int64_t{dkp} * kC + int64_t{dkp} * kOutTv + kC * kC + kC * kOutTv;
}

__global__ void __launch_bounds__(kOutThreads) gdr_out_kernel(ChunkArgs a) {
  extern __shared__ float4 smem_out[];
  float* qts = reinterpret_cast<float*>(smem_out);  // [dkp][C] (diag(P) Q)^T
  float* ss = qts + a.dkp * kC;                     // [dkp][Tv] incoming state
  float* mts = ss + a.dkp * kOutTv;                 // [C][C] M^T
  float* vps = mts + kC * kC;                       // [C][Tv] V'
  const int tid = static_cast<int>(threadIdx.x);
  const int col0 = static_cast<int>(blockIdx.x) * kOutTv;
  const int c = static_cast<int>(blockIdx.y);
  const int64_t j = blockIdx.z, hc = j * a.n_chunks + c, t0 = int64_t{c} * kC;
  const int len = static_cast<int>(min(int64_t{kC}, a.n_tokens - t0));
  constexpr int kColQuads = kOutTv / 4;
  copy_async<kOutThreads>(qts, a.qt + hc * a.dkp * kC, a.dkp * kC);
  copy_async<kOutThreads>(mts, a.mt + hc * kC * kC, kC * kC);
  copy_tile_async<kOutThreads, kOutTv>(ss, a.s0 + hc * a.dkp * a.dvp + col0, a.dkp, a.dvp);
  copy_tile_async<kOutThreads, kOutTv>(vps, a.u + hc * kC * a.dvp + col0, kC, a.dvp);
  wait_copies();
  int ti, tc;
  pair_tile<kColQuads>(tid, ti, tc);
  const int i0 = 4 * ti, c0 = 4 * tc;
  float acc[4][4] = {};
  for (int ik = 0; ik < a.dk; ++ik) outer4(acc, ld4(qts + ik * kC + i0), ld4(ss + ik * kOutTv + c0));
  const int m_end = min(len, i0 + 4);  // M is lower triangular
  for (int m = 0; m < m_end; ++m) outer4(acc, ld4(mts + m * kC + i0), ld4(vps + m * kOutTv + c0));
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    if (i0 + r >= len) break;
    float* o = a.o + ((t0 + i0 + r) * a.hv + j) * a.dv;
#pragma unroll
    for (int cc = 0; cc < 4; ++cc)
      if (col0 + c0 + cc < a.dv) o[col0 + c0 + cc] = acc[r][cc];
  }
}

template <class Kernel>
void launch(Kernel kernel, dim3 grid, int threads, int64_t smem_floats, const Ctx& ctx, const ChunkArgs& a) {
  const int bytes = static_cast<int>(smem_floats * static_cast<int64_t>(sizeof(float)));
  GL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  kernel<<<grid, threads, bytes, ctx.stream>>>(a);
  GL_CUDA_CHECK(cudaGetLastError());
}

int round_up(int64_t x, int64_t m) { return static_cast<int>(mm::ceil_div(x, m) * m); }

// Scratch floats for n_chunks chunks per head.
int64_t scratch_floats(const ChunkArgs& a, int64_t n_chunks) {
  const int64_t per_chunk = 3 * int64_t{a.dkp} * kC + kC * kC + int64_t{kC} * a.dvp + int64_t{a.dkp} * a.dvp + 1;
  return a.hv * n_chunks * per_chunk;
}

// The final state as an F32 [Dv, Dk, Hv] view: the next pass's initial state.
TView written_state(const ChunkArgs& a) {
  TView t{};
  t.data = reinterpret_cast<const char*>(a.s_out);
  const int64_t ne[4] = {a.dv, a.dk, a.hv, 1};
  int64_t nb = sizeof(float);
  for (int i = 0; i < 4; ++i) {
    t.ne[i] = ne[i];
    t.nb[i] = nb;
    nb *= ne[i];
  }
  t.type = DType::F32;
  return t;
}

// Points the scratch parts of a at buf, sized for a.n_chunks chunks per head.
void place_scratch(ChunkArgs& a, float* buf) {
  const int64_t n_hc = int64_t{a.hv} * a.n_chunks;
  const int64_t sizes[] = {n_hc * a.dkp * kC,
                           n_hc * kC * a.dkp,
                           n_hc * a.dkp * kC,
                           n_hc * kC * kC,
                           n_hc * kC * a.dvp,
                           n_hc * a.dkp * a.dvp,
                           n_hc};
  float** parts[] = {&a.wt, &a.kd, &a.qt, &a.mt, &a.u, &a.s0, &a.plast};
  for (int i = 0; i < 7; ++i) {  // every part but the last is a multiple of 4 floats (16 bytes)
    *parts[i] = buf;
    buf += sizes[i];
  }
}

// The tokens [t_begin, t_begin + n) of a: input views advanced, outputs from row t_begin on.
ChunkArgs pass_args(const ChunkArgs& a, int64_t t_begin, int64_t n) {
  ChunkArgs p = a;
  for (TView* t : {&p.q, &p.k, &p.v}) t->data += t_begin * t->nb[2];
  for (TView* t : {&p.g, &p.beta}) t->data += t_begin * t->nb[1];
  p.n_tokens = n;
  p.n_chunks = static_cast<int>(mm::ceil_div<int64_t>(n, kC));
  p.o = a.o + t_begin * a.hv * a.dv;
  return p;
}

}  // namespace

size_t gated_delta_rule_chunked_workspace(const Tensor& dst) {
  ChunkArgs a{};
  a.dkp = round_up(dst.src[0]->ne[0], 8);
  a.dvp = round_up(dst.src[2]->ne[0], kOutTv);
  a.hv = static_cast<int>(dst.src[2]->ne[1]);
  const int64_t pass_chunks = mm::ceil_div<int64_t>(std::min(dst.src[0]->ne[2], kPassTokens), kC);
  return sizeof(float) * static_cast<size_t>(scratch_floats(a, pass_chunks));
}

void gated_delta_rule_chunked(const Ctx& ctx, Tensor& dst) {
  const Tensor& q = *dst.src[0];
  const Tensor& v = *dst.src[2];
  GL_ASSERT(dst.p<GdrParams>().n_states == 1, "[gated_delta_rule] the chunked form emits only the final state");
  GL_ASSERT(q.ne[0] <= mm::kMaxGdrDk, "[gated_delta_rule] Dk above kMaxGdrDk (supports_ssm)");
  for (int i = 0; i < 5; ++i)
    GL_ASSERT(dst.src[i]->type == DType::F32, "[gated_delta_rule] the chunked form reads F32 q, k, v, g, beta");
  ChunkArgs a{};
  a.q = mm::view_of(q);
  a.k = mm::view_of(*dst.src[1]);
  a.v = mm::view_of(v);
  a.g = mm::view_of(*dst.src[3]);
  a.beta = mm::view_of(*dst.src[4]);
  a.state = mm::view_of(*dst.src[5]);
  a.dk = static_cast<int>(q.ne[0]);
  a.hk = static_cast<int>(q.ne[1]);
  a.dv = static_cast<int>(v.ne[0]);
  a.hv = static_cast<int>(v.ne[1]);
  a.dkp = round_up(a.dk, 8);
  a.dvp = round_up(a.dv, kOutTv);
  GL_ASSERT(dst.workspace != nullptr, "[gated_delta_rule] chunked form without its planned workspace");
  a.o = static_cast<float*>(dst.data);
  a.s_out = a.o + q.ne[2] * a.hv * a.dv;

  // Long inputs go in passes of kPassTokens, each starting from the state the last one wrote
  // (same block, same columns), so the scratch stays bounded (~100 MB at Qwen3.5-9B's shape).
  const int64_t n_tokens = q.ne[2];
  for (int64_t t_begin = 0; t_begin < n_tokens; t_begin += kPassTokens) {
    ChunkArgs p = pass_args(a, t_begin, std::min(kPassTokens, n_tokens - t_begin));
    if (t_begin > 0) p.state = written_state(a);
    place_scratch(p, static_cast<float*>(dst.workspace));
    const auto hv = static_cast<unsigned>(p.hv), nc = static_cast<unsigned>(p.n_chunks);
    launch(gdr_prep_kernel, dim3(nc, hv), kPrepThreads, prep_smem_floats(p.dkp), ctx, p);
    launch(gdr_scan_kernel, dim3(static_cast<unsigned>(p.dvp / kScanTv), hv), kScanThreads, scan_smem_floats(p.dkp),
           ctx, p);
    launch(gdr_out_kernel, dim3(static_cast<unsigned>(p.dvp / kOutTv), nc, hv), kOutThreads, out_smem_floats(p.dkp),
           ctx, p);
  }
}

}  // namespace gl::cuda
