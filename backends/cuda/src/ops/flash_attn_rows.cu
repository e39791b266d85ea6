// flash_attn_rows.cu - FLASH_ATTN for many query rows (prefill): 32 rows of one kv head per block.
//
// Why: flash_attn.cu gives a prefill row a block of its own that walks the span 32 keys at a
// time with lanes splitting the head dimension, so every score costs a warp reduction and every
// K/V tile serves 4 query rows; at a 32k span that was 0.1x llama.cpp. Here a block takes 32 query
// rows (token, head) of one kv head (the heads of its GQA group, token after token) and stages
// each tile of 32 keys in shared memory once for all of them. A lane owns a key while scoring
// (a full dot product over the head dimension against rows read from shared memory: no
// reduction), each warp keeps 8 rows' online softmax (running max and sum, replicated in its lanes),
// and a lane owns output elements lane, lane + 32, ... of those 8 rows while summing V rows.
// Precision: float dot products in dimension order, float exponentials and sums in key order, as
// the per-row kernel; a row's arithmetic depends only on its own keys, not on the rows beside it.
#include <cmath>

#include "cuda_utils.cuh"
#include "flash_attn_rows.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 8;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kKeys = 32;                     // keys per tile: one per lane while scoring
constexpr int kMaxHead = 256;
constexpr int kPerLane = kMaxHead / 32;  // output elements per lane

struct RowsArgs {
  TensorArg q, k, v, mask, out;
  bool has_mask, causal;
  float scale;
  int group;        // query heads per kv head
  int dk, dkp, dv;  // head sizes; dkp: Dk rounded up to 4, plus 4 (shared-memory row stride)
  int64_t n_rows;   // T * group query rows per kv head
  int f16_shift;    // dense F16 K and V rows of 2^s 16-byte vectors (Dk == Dv): read so; else -1
};

// Shared memory (floats): q [kRows][dkp], k [kKeys][dkp], v [kKeys][dv], p [kRows][kKeys].
int64_t smem_floats(int dkp, int dv) {
  return int64_t{kRows} * dkp + int64_t{kKeys} * dkp + int64_t{kKeys} * dv + int64_t{kRows} * kKeys;
}

__device__ __forceinline__ int64_t row_end(const RowsArgs& a, int64_t t) {
  const int64_t n_kv = a.k.ne[2], n_q = a.q.ne[2];
  return a.causal ? min(n_kv, t + n_kv - n_q + 1) : n_kv;
}

// One 16-byte vector (8 halves) of a dense F16 row, as floats at dst (16-byte aligned): two
// 16-byte shared stores.
__device__ __forceinline__ void put_halves(const uint4 w, float* dst) {
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&w.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&w.y));
  const float2 c = __half22float2(*reinterpret_cast<const __half2*>(&w.z));
  const float2 d = __half22float2(*reinterpret_cast<const __half2*>(&w.w));
  reinterpret_cast<float4*>(dst)[0] = make_float4(a.x, a.y, b.x, b.y);
  reinterpret_cast<float4*>(dst)[1] = make_float4(c.x, c.y, d.x, d.y);
}

// A tile of dense F16 K and V rows held in registers: 16-byte vectors u * kThreads + thread of
// the tile's kKeys rows, so the next tile's loads are in flight while this one is computed.
constexpr int kTileVecs = kKeys * (kMaxHead / 8) / kThreads;
struct TileRegs {
  uint4 k[kTileVecs], v[kTileVecs];
};

__device__ __forceinline__ void load_tile_f16(const RowsArgs& a, int64_t kv, int64_t j0, TileRegs& r) {
  const int per_row = 1 << a.f16_shift;
#pragma unroll
  for (int u = 0; u < kTileVecs; ++u) {
    const int idx = static_cast<int>(threadIdx.x) + u * kThreads;
    const int j = idx >> a.f16_shift, c = idx & (per_row - 1);
    const int64_t key = j0 + j;
    const bool in = j < kKeys && key < a.k.ne[2];
    r.k[u] = in ? *reinterpret_cast<const uint4*>(a.k.data + kv * a.k.nb[1] + key * a.k.nb[2] + 16 * c) : uint4{};
    r.v[u] = in ? *reinterpret_cast<const uint4*>(a.v.data + kv * a.v.nb[1] + key * a.v.nb[2] + 16 * c) : uint4{};
  }
}

__device__ __forceinline__ void store_tile_f16(const RowsArgs& a, const TileRegs& r, float* ks, float* vs) {
  const int per_row = 1 << a.f16_shift;
#pragma unroll
  for (int u = 0; u < kTileVecs; ++u) {
    const int idx = static_cast<int>(threadIdx.x) + u * kThreads;
    const int j = idx >> a.f16_shift, c = idx & (per_row - 1);
    if (j >= kKeys) break;
    put_halves(r.k[u], ks + j * a.dkp + 8 * c);
    put_halves(r.v[u], vs + j * a.dv + 8 * c);
  }
}

// Keys [j0, j0 + kKeys) of kv head kv into shared memory as floats (zeros past the span), element
// by element (rows that are not dense F16).
__device__ void stage_tile(const RowsArgs& a, int64_t kv, int64_t j0, float* ks, float* vs) {
  const int64_t n_kv = a.k.ne[2];
  for (int idx = threadIdx.x; idx < kKeys * a.dk; idx += kThreads) {
    const int j = idx / a.dk, i = idx % a.dk;
    const int64_t key = j0 + j;
    ks[j * a.dkp + i] =
        key < n_kv ? load_plain(a.k.type, a.k.data + i * a.k.nb[0] + kv * a.k.nb[1] + key * a.k.nb[2]) : 0.0f;
  }
  for (int idx = threadIdx.x; idx < kKeys * a.dv; idx += kThreads) {
    const int j = idx / a.dv, i = idx % a.dv;
    const int64_t key = j0 + j;
    vs[j * a.dv + i] =
        key < n_kv ? load_plain(a.v.type, a.v.data + i * a.v.nb[0] + kv * a.v.nb[1] + key * a.v.nb[2]) : 0.0f;
  }
}

// grid (ceil(n_rows / kRows), Hkv), kThreads threads; row r of kv head kv is token r / group,
// head kv * group + r % group.
__global__ void __launch_bounds__(kThreads) attn_rows_kernel(RowsArgs a) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* ks = qs + kRows * a.dkp;
  float* vs = ks + kKeys * a.dkp;
  float* ps = vs + kKeys * a.dv;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t kv = blockIdx.y, r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  // The block's query rows, zeros past the last one.
  for (int idx = threadIdx.x; idx < kRows * a.dk; idx += kThreads) {
    const int r = idx / a.dk, i = idx % a.dk;
    const int64_t row = r0 + r;
    qs[r * a.dkp + i] =
        row < a.n_rows ? load_plain(a.q.type, a.q.data + i * a.q.nb[0] + (kv * a.group + row % a.group) * a.q.nb[1] +
                                                  (row / a.group) * a.q.nb[2])
                       : 0.0f;
  }
  // This warp's rows: token, end of span (0 past the last row).
  int64_t tok[kRowsPerWarp], end[kRowsPerWarp];
  int64_t block_end = 0;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t row = r0 + warp * kRowsPerWarp + r;
    tok[r] = row < a.n_rows ? row / a.group : 0;
    end[r] = row < a.n_rows ? row_end(a, tok[r]) : 0;
  }
  for (int r = 0; r < kRows; ++r) {
    const int64_t row = r0 + r;
    if (row < a.n_rows) block_end = max(block_end, row_end(a, row / a.group));
  }
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY, l[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[r][e] = 0.0f;
  }
  float* pw = ps + warp * kRowsPerWarp * kKeys;
  const bool f16 = a.f16_shift >= 0;
  TileRegs next;
  if (f16 && block_end > 0) load_tile_f16(a, kv, 0, next);
  for (int64_t j0 = 0; j0 < block_end; j0 += kKeys) {
    __syncthreads();  // the previous tile is consumed (and the query rows are in place)
    if (f16) {
      store_tile_f16(a, next, ks, vs);
    } else {
      stage_tile(a, kv, j0, ks, vs);
    }
    __syncthreads();
    if (f16 && j0 + kKeys < block_end) load_tile_f16(a, kv, j0 + kKeys, next);  // in flight meanwhile
    // Scores: lane = key; a full dot product per row, in dimension order.
    const int64_t key = j0 + lane;
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.0f;
    const float* kr = ks + lane * a.dkp;
    const float* qw = qs + warp * kRowsPerWarp * a.dkp;
    for (int i = 0; i < a.dk; i += 4) {
      const float4 kk = *reinterpret_cast<const float4*>(kr + i);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qq = *reinterpret_cast<const float4*>(qw + r * a.dkp + i);
        s[r] = fmaf(qq.x, kk.x, s[r]);
        s[r] = fmaf(qq.y, kk.y, s[r]);
        s[r] = fmaf(qq.z, kk.z, s[r]);
        s[r] = fmaf(qq.w, kk.w, s[r]);
      }
    }
    // Online softmax per row; a tile with no key for a row changes nothing.
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const bool live = key < end[r];
      const float mk =
          live && a.has_mask ? load_plain(a.mask.type, a.mask.data + key * a.mask.nb[0] + tok[r] * a.mask.nb[1]) : 0.0f;
      const float x = live ? s[r] * a.scale + mk : -INFINITY;
      float tm = x;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) tm = fmaxf(tm, __shfl_xor_sync(kFullMask, tm, off));
      const float mn = fmaxf(m[r], tm);
      const float p = tm == -INFINITY ? 0.0f : expf(x - mn);
      float ts = p;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) ts += __shfl_xor_sync(kFullMask, ts, off);
      pw[r * kKeys + lane] = p;
      if (tm != -INFINITY) {
        const float corr = m[r] == -INFINITY ? 0.0f : expf(m[r] - mn);
        l[r] = l[r] * corr + ts;
        m[r] = mn;
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) acc[r][e] *= corr;
      }
    }
    __syncwarp();
    // Weighted V rows in key order: lane owns output elements lane + 32 e.
    for (int j = 0; j < kKeys; ++j) {
      float vv[kPerLane];
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) vv[e] = lane + 32 * e < a.dv ? vs[j * a.dv + lane + 32 * e] : 0.0f;
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float p = pw[r * kKeys + j];
#pragma unroll
        for (int e = 0; e < kPerLane; ++e) acc[r][e] = fmaf(p, vv[e], acc[r][e]);
      }
    }
    __syncwarp();
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t row = r0 + warp * kRowsPerWarp + r;
    if (row >= a.n_rows) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // no unmasked key: zeros
    const int64_t h = kv * a.group + row % a.group;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int d = lane + 32 * e;
      if (d < a.dv)
        store_plain(a.out.type, a.out.data + d * a.out.nb[0] + h * a.out.nb[1] + tok[r] * a.out.nb[2], acc[r][e] * inv);
    }
  }
}

// s when K and V are dense F16 rows of Dk == Dv == 8 * 2^s halves on 16-byte boundaries, else -1.
int f16_shift(const Tensor& k, const Tensor& v) {
  if (k.type != DType::F16 || v.type != DType::F16 || k.nb[0] != 2 || v.nb[0] != 2 || k.ne[0] != v.ne[0]) return -1;
  if (!rows_on_16_bytes(k) || !rows_on_16_bytes(v) || k.ne[0] % 8 != 0) return -1;
  const int64_t vecs = k.ne[0] / 8;
  if ((vecs & (vecs - 1)) != 0) return -1;
  int s = 0;
  while ((int64_t{1} << s) < vecs) ++s;
  return s;
}

}  // namespace

bool flash_attn_rows_fits(const Tensor& dst) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  return q.ne[0] <= kMaxHead && v.ne[0] <= kMaxHead && q.ne[0] % 4 == 0 && q.ne[1] % k.ne[1] == 0 && q.ne[3] == 1 &&
         k.ne[1] <= 65535 && mm::ceil_div<int64_t>(q.ne[2] * (q.ne[1] / k.ne[1]), kRows) <= INT32_MAX;
}

void flash_attn_rows(const Ctx& ctx, Tensor& dst) {
  const Tensor &q = *dst.src[0], &k = *dst.src[1], &v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  const SoftmaxParams p = dst.p<SoftmaxParams>();
  const int dk = static_cast<int>(q.ne[0]), dv = static_cast<int>(v.ne[0]);
  const int group = static_cast<int>(q.ne[1] / k.ne[1]);
  const RowsArgs a{arg(q),          arg(k),
                   arg(v),          mask ? arg(*mask) : TensorArg{},
                   arg(dst),        mask != nullptr,
                   p.causal,        p.scale,
                   group,           dk,
                   dk + 4,          dv,
                   q.ne[2] * group, f16_shift(k, v)};
  const dim3 grid(static_cast<unsigned>(mm::ceil_div<int64_t>(a.n_rows, kRows)), static_cast<unsigned>(k.ne[1]));
  const int bytes = static_cast<int>(smem_floats(a.dkp, dv) * static_cast<int64_t>(sizeof(float)));
  GL_CUDA_CHECK(cudaFuncSetAttribute(attn_rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  attn_rows_kernel<<<grid, kThreads, bytes, ctx.stream>>>(a);
  GL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gl::cuda
