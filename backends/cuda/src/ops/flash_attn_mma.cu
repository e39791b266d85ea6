// flash_attn_mma.cu - FLASH_ATTN for prefill rows on tensor cores (mma.sync m16n8k16).
//
// Why: the CUDA-core kernel (flash_attn_rows.cu) spends ~22 ms a layer on a 512-token prefill
// at a 32k span; the products Q K^T and P V are what tensor cores are for.
// How: a block takes 64 query rows (token, head) of one kv head, the heads of its GQA group token
// after token. Tiles of 64 keys of the F16 cache go to shared memory with cp.async, the next tile
// in flight while this one is computed, with the mask's rows of the block's tokens beside them.
// Eight warps: warp w takes rows 16 (w % 4) .. + 15 and keys 32 (w / 4) .. + 31 of every tile, so
// two warps share each row (8 warps an SM hide more latency than 4; the 255 registers of a
// thread hold 16 rows x 256 outputs of its warp). Per tile a warp computes S = Q K^T (16 x 32)
// as MMAs, the online softmax on the accumulators in registers (a row lives in the 4 lanes of a
// quad), and O += P V with P taken from those registers as the A operand. At the end the two
// warps of a row merge their states (max, sum, outputs) through shared memory.
// Precision: Q and P are f32; the tensor cores take halves, so each is split as hi + lo (two
// halves, ~22 bits of mantissa, mma_sync.cuh) and multiplied twice: the products are those of
// f32 operands with the f16 cache to within f32 rounding, summed in f32. Under Precision::FAST
// only hi is used (Q and P rounded to f16: relative 2^-11, the bound in the op harness).
// A row's arithmetic depends only on its own keys: rows beside it do not change its bits. Keys
// past a row's span (causal end, or the -inf tail of its mask row) are skipped; they would add
// exact zeros.
// Decode and verify rows (flash_attn.cu) cut the span into splits of kMmaSplitKeys keys from key 0,
// a block each (grid z), and leave each split's max, sum and outputs to flash_attn.cu's merge: at a
// 32k span the 35B-A3B's two kv heads make 256 blocks instead of 2. A split's tiles start at its
// first key, so a row's splits and tiles, and with them its bits, do not depend on the span's
// length past the row's last key (a verify row equals its decode row).
#include <cmath>

#include "cuda_utils.cuh"
#include "flash_attn_mma.cuh"
#include "flash_attn_rows.cuh"
#include "ggml-lite/status.h"
#include "mm_utils.cuh"
#include "mma_sync.cuh"

namespace gl::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 64;          // query rows per block: 16 per warp, two warps a row
constexpr int kKeys = 64;          // keys per tile
constexpr int kWarpKeys = 32;      // keys of a tile per warp
constexpr int kMaxTokens = kRows;  // tokens of a block's rows (GQA group 1)
static_assert(kMmaSplitKeys % kKeys == 0, "a split is whole tiles");

struct MmaArgs {
  TensorArg q, k, v, mask, out;
  bool has_mask, causal, mask_vec;  // mask_vec: mask rows on 16-byte boundaries
  float scale;
  int group;        // query heads per kv head
  int64_t n_rows;   // T * group query rows per kv head
  int64_t n_split;  // blocks per row over the span (grid z), kMmaSplitKeys keys each; 1: the whole span
  float* part;      // n_split > 1: per (t, h, split) the max, the sum, then D outputs (flash_attn.cu's merge)
};

// Shared memory of head size D, in halves then floats: Q hi and lo [kRows][kStride], K and V two
// buffers each [kKeys][kStride], the mask tile [kMaxTokens][kKeys] and the tokens' span ends.
// After the last tile the K and V buffers hold the second warps' states for the merge: outputs
// [kRows][kStride] floats, then max and sum [kRows] each.
template <int D>
struct Layout {
  static constexpr int kStride = D + 8;  // 16 bytes of padding: ldmatrix rows fall in distinct banks
  static constexpr int kQ = kRows * kStride;
  static constexpr int kKv = kKeys * kStride;
  static constexpr int kHalves = 2 * kQ + 4 * kKv;
  static constexpr size_t kBytes =
      kHalves * sizeof(__half) + kMaxTokens * kKeys * sizeof(float) + kMaxTokens * sizeof(int64_t);
};

__device__ __forceinline__ int64_t causal_end(const MmaArgs& a, int64_t t) {
  const int64_t n_kv = a.k.ne[2], n_q = a.q.ne[2];
  return a.causal ? max(int64_t{0}, min(n_kv, t + n_kv - n_q + 1)) : n_kv;
}

// Where token t's span ends within keys [lo, hi): its causal end (at most hi), less the mask row's
// -inf tail (a warp walks it back 32 keys at a time, down to lo; lo when no key there is live).
// A long span: the tail is a decode bucket's at most.
__device__ int64_t span_end(const MmaArgs& a, int64_t t, int lane, int64_t lo, int64_t hi) {
  int64_t e = min(causal_end(a, t), hi);
  if (!a.has_mask) return max(e, lo);
  const char* row = a.mask.data + t * a.mask.nb[1];
  while (e > lo) {
    const int64_t key = e - 1 - lane;
    const bool live = key >= lo && *reinterpret_cast<const float*>(row + key * 4) != -INFINITY;
    const unsigned hit = __ballot_sync(kFullMask, live);
    if (hit != 0) return e - __ffs(hit) + 1;  // the lowest lane holds the highest live key
    e -= 32;
  }
  return lo;
}

// The same for tokens t0 .. t0 + nt - 1 of a range of at most kThreads keys (a split, a short span)
// into ends[]: a thread a key, every key looked at once (a decode step's bucket has up to 255
// masked keys past its row, eight dependent steps of the walk).
__device__ void span_ends_at_once(const MmaArgs& a, int64_t t0, int nt, int64_t lo, int64_t hi, int64_t* ends) {
  for (int i = threadIdx.x; i < nt; i += kThreads) ends[i] = lo;
  __syncthreads();
  const int64_t key = lo + threadIdx.x;
  if (key >= hi) return;
  for (int i = 0; i < nt; ++i) {
    const int64_t t = t0 + i;
    const bool live =
        key < causal_end(a, t) &&
        (!a.has_mask || *reinterpret_cast<const float*>(a.mask.data + t * a.mask.nb[1] + key * 4) != -INFINITY);
    if (live) atomicMax(reinterpret_cast<unsigned long long*>(ends + i), static_cast<unsigned long long>(key + 1));
  }
}

// Each token's span end within [lo, hi) into ends[]: a range of at most kThreads keys at once, a
// longer one a warp a token.
__device__ void span_ends(const MmaArgs& a, int64_t t0, int nt, int64_t lo, int64_t hi, int64_t* ends) {
  if (hi - lo <= kThreads) return span_ends_at_once(a, t0, nt, lo, hi, ends);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int i = warp; i < nt; i += kWarps) {
    const int64_t e = span_end(a, t0 + i, lane, lo, hi);
    if (lane == 0) ends[i] = e;
  }
}

// The block's query rows as hi and lo halves. Rows past the last are left as they are: they score
// only their own rows of S, which softmax_tile masks (their span is empty), so a decode block of 8
// rows reads 8 rows, not 64.
template <int D>
__device__ void load_q(const MmaArgs& a, int64_t kv, int64_t r0, __half* qh, __half* ql) {
  constexpr int kStride = Layout<D>::kStride;
  const int n = static_cast<int>(min(int64_t{kRows}, a.n_rows - r0)) * D;
  for (int idx = threadIdx.x; idx < n; idx += kThreads) {
    const int r = idx / D, i = idx % D;
    const int64_t row = r0 + r;
    const float x = load_plain(
        a.q.type, a.q.data + i * a.q.nb[0] + (kv * a.group + row % a.group) * a.q.nb[1] + (row / a.group) * a.q.nb[2]);
    const __half hi = __float2half_rn(x);
    qh[r * kStride + i] = hi;
    ql[r * kStride + i] = __float2half_rn(x - __half2float(hi));
  }
}

// Keys [j0, j0 + kKeys) of kv head kv: K and V rows into ks, vs (zeros past the span).
template <int D>
__device__ void issue_kv(const MmaArgs& a, int64_t kv, int64_t j0, __half* ks, __half* vs) {
  constexpr int kVecs = D / 8, kStride = Layout<D>::kStride;
  for (int idx = threadIdx.x; idx < kKeys * kVecs; idx += kThreads) {
    const int j = idx / kVecs, c = idx % kVecs;
    const int64_t key = j0 + j;
    const bool in = key < a.k.ne[2];
    const int64_t kk = in ? key : 0;
    cp_async16(ks + j * kStride + 8 * c, a.k.data + kv * a.k.nb[1] + kk * a.k.nb[2] + 16 * c, in ? 16 : 0);
    cp_async16(vs + j * kStride + 8 * c, a.v.data + kv * a.v.nb[1] + kk * a.v.nb[2] + 16 * c, in ? 16 : 0);
  }
}

// Mask entries of keys [j0, j0 + kKeys) for tokens t0 .. t0 + nt - 1 into ms[token][key] (zeros
// past the mask's row).
__device__ void issue_mask(const MmaArgs& a, int64_t t0, int nt, int64_t j0, float* ms) {
  const int64_t n = a.mask.ne[0];
  if (a.mask_vec) {
    for (int idx = threadIdx.x; idx < nt * (kKeys / 4); idx += kThreads) {
      const int t = idx / (kKeys / 4), c = idx % (kKeys / 4);
      const int64_t key = j0 + 4 * c;
      const int bytes = static_cast<int>(max(int64_t{0}, min(int64_t{4}, n - key))) * 4;
      const char* src = a.mask.data + (t0 + t) * a.mask.nb[1] + (bytes > 0 ? key * 4 : 0);
      cp_async16(ms + t * kKeys + 4 * c, src, bytes);
    }
    return;
  }
  for (int idx = threadIdx.x; idx < nt * kKeys; idx += kThreads) {
    const int t = idx / kKeys, j = idx % kKeys;
    const int64_t key = j0 + j;
    const char* src = a.mask.data + (t0 + t) * a.mask.nb[1] + (key < n ? key * 4 : 0);
    cp_async4(ms + t * kKeys + j, src, key < n ? 4 : 0);
  }
}

constexpr int kNt = kWarpKeys / 8;  // n-tiles of 8 keys per warp and tile

// A warp's 16 rows: S = Q K^T for its kWarpKeys keys of the tile (ks: their first row), Q as hi
// (+ lo) halves.
template <int D, bool kSplit>
__device__ __forceinline__ void scores(const __half* qh, const __half* ql, const __half* ks, float (&s)[kNt][4]) {
  constexpr int kStride = Layout<D>::kStride;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kNt; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
  const int qoff = (lane % 16) * kStride + (lane / 16) * 8;
  const int koff = ((lane % 8) + (lane / 16) * 8) * kStride + ((lane / 8) % 2) * 8;
#pragma unroll 4
  for (int k0 = 0; k0 < D; k0 += 16) {
    uint32_t ah[4], al[4];
    ldsm_x4(ah, qh + qoff + k0);
    if constexpr (kSplit) ldsm_x4(al, ql + qoff + k0);
#pragma unroll
    for (int np = 0; np < kNt / 2; ++np) {
      uint32_t b[4];
      ldsm_x4(b, ks + np * 16 * kStride + koff + k0);
      mma_f16(s[2 * np], ah, b[0], b[1]);
      mma_f16(s[2 * np + 1], ah, b[2], b[3]);
      if constexpr (kSplit) {
        mma_f16(s[2 * np], al, b[0], b[1]);
        mma_f16(s[2 * np + 1], al, b[2], b[3]);
      }
    }
  }
}

// A warp's rows g and g + 8 (lane = 4 g + t) over its keys: running max, sum and outputs.
template <int D>
struct RowState {
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};
  float o[D / 8][4] = {};
};

// Online softmax of the warp's scores, in place: s becomes P (0 where masked or past the span).
// k0: the tile's first key of this warp; mrow[r] + kk: the mask entry of key k0 + kk of row r.
template <int D>
__device__ __forceinline__ void softmax_tile(const MmaArgs& a, int64_t k0, const int64_t (&end)[2],
                                             const float* const (&mrow)[2], float (&s)[kNt][4], RowState<D>& st) {
  const int t = threadIdx.x % 4;
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < kNt; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int r = c / 2, kk = 8 * j + 2 * t + c % 2;
      const bool live = k0 + kk < end[r];
      const float x = live ? s[j][c] * a.scale + (a.has_mask ? mrow[r][kk] : 0.0f) : -INFINITY;
      s[j][c] = x;
      mx[r] = fmaxf(mx[r], x);
    }
  float corr[2], mn[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(kFullMask, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(kFullMask, mx[r], 2));
    mn[r] = fmaxf(st.m[r], mx[r]);
    corr[r] = mn[r] == -INFINITY || st.m[r] == mn[r] ? 1.0f : (st.m[r] == -INFINITY ? 0.0f : expf(st.m[r] - mn[r]));
  }
#pragma unroll
  for (int j = 0; j < kNt; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int r = c / 2;
      const float p = s[j][c] == -INFINITY ? 0.0f : expf(s[j][c] - mn[r]);
      s[j][c] = p;
      sum[r] += p;
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sum[r] += __shfl_xor_sync(kFullMask, sum[r], 1);
    sum[r] += __shfl_xor_sync(kFullMask, sum[r], 2);
    st.l[r] = st.l[r] * corr[r] + sum[r];
    st.m[r] = mn[r];
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    st.o[n][0] *= corr[0], st.o[n][1] *= corr[0];
    st.o[n][2] *= corr[1], st.o[n][3] *= corr[1];
  }
}

// O += P V over the warp's keys (vs: their first V row): P from the score registers (two n-tiles
// make one A operand), V as the B operand through transposing ldmatrix.
template <int D, bool kSplit>
__device__ __forceinline__ void accumulate_pv(const float (&p)[kNt][4], const __half* vs, RowState<D>& st) {
  constexpr int kStride = Layout<D>::kStride;
  const int lane = threadIdx.x % 32;
  const int voff = ((lane % 8) + ((lane / 8) % 2) * 8) * kStride + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < kNt / 2; ++kk) {
    uint32_t ah[4], al[4];
    split_half2(p[2 * kk][0], p[2 * kk][1], ah[0], al[0]);
    split_half2(p[2 * kk][2], p[2 * kk][3], ah[1], al[1]);
    split_half2(p[2 * kk + 1][0], p[2 * kk + 1][1], ah[2], al[2]);
    split_half2(p[2 * kk + 1][2], p[2 * kk + 1][3], ah[3], al[3]);
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t b[4];
      ldsm_x4_trans(b, vs + kk * 16 * kStride + voff + np * 16);
      mma_f16(st.o[2 * np], ah, b[0], b[1]);
      mma_f16(st.o[2 * np + 1], ah, b[2], b[3]);
      if constexpr (kSplit) {
        mma_f16(st.o[2 * np], al, b[0], b[1]);
        mma_f16(st.o[2 * np + 1], al, b[2], b[3]);
      }
    }
  }
}

// The second warp of each row (half 1) leaves its state in shared memory (xo, xm, xl at block row
// lr[r]); the first (half 0) takes it into its own: the two online softmax states as one.
template <int D>
__device__ void merge_halves(int half, const int (&lr)[2], float* xo, float* xm, float* xl, RowState<D>& st) {
  constexpr int kStride = Layout<D>::kStride;
  const int t = threadIdx.x % 4;
  if (half == 1) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<float2*>(xo + lr[r] * kStride + 8 * n + 2 * t) =
            make_float2(st.o[n][2 * r], st.o[n][2 * r + 1]);
      if (t == 0) xm[lr[r]] = st.m[r], xl[lr[r]] = st.l[r];
    }
  }
  __syncthreads();
  if (half == 1) return;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m1 = xm[lr[r]], m = fmaxf(st.m[r], m1);
    const float c0 = st.m[r] == -INFINITY ? 0.0f : expf(st.m[r] - m);
    const float c1 = m1 == -INFINITY ? 0.0f : expf(m1 - m);
    st.l[r] = st.l[r] * c0 + xl[lr[r]] * c1;
    st.m[r] = m;  // a split's state goes on to flash_attn.cu's merge with its max
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const float2 o1 = *reinterpret_cast<const float2*>(xo + lr[r] * kStride + 8 * n + 2 * t);
      st.o[n][2 * r] = st.o[n][2 * r] * c0 + o1.x * c1;
      st.o[n][2 * r + 1] = st.o[n][2 * r + 1] * c0 + o1.y * c1;
    }
  }
}

// O / l of rows g and g + 8 to out; rows with no live key get zeros.
template <int D>
__device__ void store_rows(const MmaArgs& a, int64_t kv, const int64_t (&row)[2], const RowState<D>& st) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= a.n_rows) continue;
    const float inv = st.l[r] > 0.0f ? 1.0f / st.l[r] : 0.0f;
    char* base = a.out.data + (kv * a.group + row[r] % a.group) * a.out.nb[1] + (row[r] / a.group) * a.out.nb[2];
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        store_plain(a.out.type, base + (8 * n + 2 * t + c) * a.out.nb[0], st.o[n][2 * r + c] * inv);
  }
}

// A split's state of rows g and g + 8, unnormalised, where flash_attn.cu's merge reads it.
template <int D>
__device__ void store_partial(const MmaArgs& a, int64_t kv, int64_t split, const int64_t (&row)[2],
                              const RowState<D>& st) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= a.n_rows) continue;
    const int64_t h = kv * a.group + row[r] % a.group, tok = row[r] / a.group;
    float* p = a.part + ((tok * a.q.ne[1] + h) * a.n_split + split) * (D + 2);
    if (t == 0) p[0] = st.m[r], p[1] = st.l[r];
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      *reinterpret_cast<float2*>(p + 2 + 8 * n + 2 * t) = make_float2(st.o[n][2 * r], st.o[n][2 * r + 1]);
  }
}

// grid (ceil(n_rows / kRows), Hkv, n_split), kThreads threads.
template <int D, bool kSplit>
__global__ void __launch_bounds__(kThreads, 1) attn_mma_kernel(MmaArgs a) {
  using L = Layout<D>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __half* qh = reinterpret_cast<__half*>(smem_raw);
  __half* ql = qh + L::kQ;
  __half* kbuf = ql + L::kQ;         // [2][kKeys][kStride]
  __half* vbuf = kbuf + 2 * L::kKv;  // [2][kKeys][kStride]
  float* ms = reinterpret_cast<float*>(qh + L::kHalves);
  int64_t* tok_end = reinterpret_cast<int64_t*>(ms + kMaxTokens * kKeys);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int quarter = warp % 4, half = warp / 4;  // rows 16 quarter .. + 15, keys 32 half .. + 31 of a tile
  const int64_t kv = blockIdx.y, r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t t0 = r0 / a.group;
  const int nt = static_cast<int>((min(r0 + kRows, a.n_rows) - 1) / a.group - t0 + 1);
  const int64_t n_kv = a.k.ne[2];
  const int64_t lo = a.n_split > 1 ? blockIdx.z * kMmaSplitKeys : 0;  // this block's keys [lo, hi)
  const int64_t hi = a.n_split > 1 ? min(n_kv, lo + kMmaSplitKeys) : n_kv;
  // The first tile is in flight while the spans and Q are read (a span that ends before it only
  // leaves the loads unread).
  if (lo < hi) {
    issue_kv<D>(a, kv, lo, kbuf, vbuf);
    if (a.has_mask) issue_mask(a, t0, nt, lo, ms);
    cp_async_commit();
  }
  span_ends(a, t0, nt, lo, hi, tok_end);
  load_q<D>(a, kv, r0, qh, ql);
  __syncthreads();
  int64_t block_end = lo;
  for (int i = 0; i < nt; ++i) block_end = max(block_end, tok_end[i]);
  // This thread's rows g and g + 8 of its warp's 16.
  const int g = lane / 4;
  int lr[2];
  int64_t row[2], end[2];
  const float* mrow[2];
  for (int r = 0; r < 2; ++r) {
    lr[r] = quarter * 16 + g + 8 * r;
    row[r] = r0 + lr[r];
    const int ti = static_cast<int>(min(row[r], a.n_rows - 1) / a.group - t0);
    end[r] = row[r] < a.n_rows ? tok_end[ti] : 0;
    mrow[r] = ms + ti * kKeys + half * kWarpKeys;
  }
  int64_t warp_end = max(end[0], end[1]);
  for (int off = 16; off > 0; off >>= 1) warp_end = max(warp_end, __shfl_xor_sync(kFullMask, warp_end, off));
  const __half* qw_h = qh + quarter * 16 * L::kStride;
  const __half* qw_l = ql + quarter * 16 * L::kStride;
  const int kv_off = half * kWarpKeys * L::kStride;  // this warp's first K / V row of a tile
  RowState<D> st;
  for (int64_t j0 = lo, i = 0; j0 < block_end; j0 += kKeys, ++i) {
    cp_async_wait_all();
    __syncthreads();  // tile i (and its mask) in place; tile i - 1's buffers free
    const int b = static_cast<int>(i % 2);
    if (j0 + kKeys < block_end) {
      issue_kv<D>(a, kv, j0 + kKeys, kbuf + (1 - b) * L::kKv, vbuf + (1 - b) * L::kKv);
      cp_async_commit();
    }
    const int64_t k0 = j0 + half * kWarpKeys;
    const bool live = k0 < warp_end;  // warp-uniform: keys past all of the warp's spans add nothing
    float s[kNt][4];
    if (live) {
      scores<D, kSplit>(qw_h, qw_l, kbuf + b * L::kKv + kv_off, s);
      softmax_tile<D>(a, k0, end, mrow, s, st);
    }
    __syncthreads();  // the mask tile is read
    if (a.has_mask && j0 + kKeys < block_end) {
      issue_mask(a, t0, nt, j0 + kKeys, ms);
      cp_async_commit();
    }
    if (live) accumulate_pv<D, kSplit>(s, vbuf + b * L::kKv + kv_off, st);
  }
  cp_async_wait_all();  // the first tile's copies, when no tile was walked
  __syncthreads();      // the last tile is consumed: its buffers take the merge
  float* xo = reinterpret_cast<float*>(kbuf);
  merge_halves<D>(half, lr, xo, xo + kRows * L::kStride, xo + kRows * L::kStride + kRows, st);
  if (half != 0) return;
  if (a.n_split > 1) {
    store_partial<D>(a, kv, blockIdx.z, row, st);
  } else {
    store_rows<D>(a, kv, row, st);
  }
}

// Dense F16 rows on 16-byte boundaries.
bool dense_f16_rows(const Tensor& t) { return t.type == DType::F16 && t.nb[0] == 2 && rows_on_16_bytes(t); }

template <int D, bool kSplit>
bool launch(const Ctx& ctx, const MmaArgs& a) {
  static_assert(Layout<D>::kBytes % 16 == 0);
  static_assert(kRows * (Layout<D>::kStride + 2) * sizeof(float) <= 4 * Layout<D>::kKv * sizeof(__half));
  constexpr int kBytes = static_cast<int>(Layout<D>::kBytes);
  int optin = 0;
  GL_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.device));
  if (kBytes > optin) return false;
  GL_CUDA_CHECK(cudaFuncSetAttribute(attn_mma_kernel<D, kSplit>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
  const dim3 grid(static_cast<unsigned>(mm::ceil_div<int64_t>(a.n_rows, kRows)), static_cast<unsigned>(a.k.ne[1]),
                  static_cast<unsigned>(a.n_split));
  attn_mma_kernel<D, kSplit><<<grid, kThreads, kBytes, ctx.stream>>>(a);
  GL_CUDA_CHECK(cudaGetLastError());
  return true;
}

template <int D>
bool launch_precision(const Ctx& ctx, const MmaArgs& a) {
  return ctx.precision == Precision::FAST ? launch<D, false>(ctx, a) : launch<D, true>(ctx, a);
}

}  // namespace

bool flash_attn_mma_fits(const Tensor& dst) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  const int64_t d = q.ne[0];
  if (d != 64 && d != 128 && d != 256) return false;
  if (k.ne[0] != d || v.ne[0] != d || !dense_f16_rows(k) || !dense_f16_rows(v)) return false;
  if (mask && (mask->type != DType::F32 || mask->nb[0] != 4)) return false;
  return dst.type == DType::F32 && q.ne[1] % k.ne[1] == 0 && q.ne[3] == 1 && k.ne[1] <= 65535 &&
         mm::ceil_div<int64_t>(q.ne[2] * (q.ne[1] / k.ne[1]), kRows) <= INT32_MAX;
}

bool flash_attn_mma(const Ctx& ctx, Tensor& dst, int64_t n_split, float* part) {
  GL_ASSERT(n_split >= 1 && n_split <= 65535 && (n_split == 1 || part != nullptr),
            "cuda flash_attn: key splits without their workspace");
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  const SoftmaxParams p = dst.p<SoftmaxParams>();
  const int group = static_cast<int>(q.ne[1] / k.ne[1]);
  MmaArgs a{};
  a.q = arg(q), a.k = arg(k), a.v = arg(v), a.out = arg(dst);
  a.mask = mask ? arg(*mask) : TensorArg{};
  a.has_mask = mask != nullptr;
  a.causal = p.causal;
  a.mask_vec = mask && (reinterpret_cast<uintptr_t>(mask->data) | mask->nb[1]) % 16 == 0;
  a.scale = p.scale;
  a.group = group;
  a.n_rows = q.ne[2] * group;
  a.n_split = n_split;
  a.part = part;
  switch (q.ne[0]) {
    case 64: return launch_precision<64>(ctx, a);
    case 128: return launch_precision<128>(ctx, a);
    default: return launch_precision<256>(ctx, a);
  }
}

}  // namespace gl::cuda
