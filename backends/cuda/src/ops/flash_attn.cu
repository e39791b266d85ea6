// flash_attn.cu - FLASH_ATTN: softmax(scale q.k + mask) v over a KV span in one pass, no score matrix.
//
// Why this shape: a block takes the query heads of one kv head (up to 4, GQA) for one token, so
// each K/V row it loads serves all of them, and walks the span in tiles of 32 keys: the 8 warps
// score the tile (lanes split the head dimension, 4 keys per warp in flight), one warp per head
// turns the scores into probabilities against the running max, then each thread accumulates one
// output element over the tile's V rows. Decode and verify rows (T <= 8) give every split of
// kSplitTiles tiles its own block and merge the splits' states in a second kernel (its warps take
// the splits in turn, then add their sums in warp order); over an F16 cache the splits are
// kMmaSplitKeys keys on the tensor cores (flash_attn_mma.cu) and the same merge follows. Prefill
// rows over an F16 cache go to the tensor cores, others to flash_attn_rows.cu (32 rows of a kv
// head per block), or where both decline walk every tile in one block. Tiles and
// splits start at fixed multiples from key 0, and a key that is masked (or a tile
// with no unmasked key) changes nothing, so a row's arithmetic depends only on its own keys: a
// verify row equals the decode row bit for bit (batch invariance) whatever the span.
// Precision: float dot products, exponentials and sums, like the unfused graph.
#include <algorithm>
#include <cmath>

#include "cuda_utils.cuh"
#include "flash_attn_mma.cuh"
#include "flash_attn_rows.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 32;  // keys per tile: one score per lane in the softmax step
constexpr int kKeysPerWarp = kTile / kWarps;
constexpr int64_t kSplitMaxRows = 8;  // query rows up to which a block takes one split (split path)
// Tiles per split: at a 32k span, 256 splits per row to merge (one tile each made the merge, a
// loop over 1,024 splits in 16 blocks, cost more than the attention itself), while a span of a few
// hundred keys still spreads over a few blocks per head group.
constexpr int64_t kSplitTiles = 4;
constexpr int64_t kMaxHead = 256;  // largest Dk / Dv: 8 elements per lane, one per thread

struct AttnArgs {
  TensorArg q, k, v, mask, out;
  bool has_mask, causal;
  float scale;
  int64_t group;    // query heads per kv head
  int64_t n_split;  // splits per row taken by separate blocks (1: one block walks the whole span)
  float* part;      // n_split > 1: per (t, h, split) the max, the sum, then Dv partial outputs
};

__device__ __forceinline__ float elem(const TensorArg& t, int64_t i0, int64_t i1, int64_t i2) {
  return load_plain(t.type, t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2]);
}

// How K and V rows are read: element by element through their type, or dense F32 / F16 rows a
// vector of four at a time (float4, or four halves in 8 bytes) for K.
enum KvRead : int { kAnyType = 0, kF32Rows = 1, kF16Rows = 2 };

// Head-dimension element e (of EPL) of a lane: lanes interleaved element by element, or (kVec:
// dense K rows read four at a time) four adjacent elements per lane per 128.
template <bool kVec>
__device__ __forceinline__ int64_t dim_of(int lane, int e) {
  return kVec ? 4 * lane + 128 * (e / 4) + e % 4 : lane + 32 * e;
}

// Shared state of a block: scores, then probabilities, of the current tile per head; the running
// max and sum per head, and each tile's rescale factor.
template <int G>
struct Smem {
  float p[G][kTile];
  float m[G], l[G], corr[G];
  bool skip[G];
  int live;  // live_tiles: tiles up to the last with an unmasked key
};

// Scores of the tile's keys [j0, j0 + kTile) for heads h0 .. h0 + G - 1 (one kv head): warp w takes
// keys w, w + kWarps, ...; lanes split the head dimension; masked keys and keys past the span (or
// the causal cut) score -inf.
template <int EPL, int G, int kKv>
__device__ void tile_scores(const AttnArgs& a, const float (&q)[G][EPL], int64_t kv, int64_t t, int64_t j0, int64_t end,
                            Smem<G>& sm) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t dk = a.q.ne[0];
  const char* kbase = a.k.data + kv * a.k.nb[1];
  float kr[kKeysPerWarp][EPL];
#pragma unroll
  for (int u = 0; u < kKeysPerWarp; ++u) {
    const int64_t j = j0 + warp + kWarps * u;
    if constexpr (kKv == kF32Rows) {
      const float4* row = reinterpret_cast<const float4*>(kbase + j * a.k.nb[2]);
#pragma unroll
      for (int c = 0; c < EPL / 4; ++c) {
        const float4 f = j < end ? row[lane + 32 * c] : float4{};
        kr[u][4 * c] = f.x, kr[u][4 * c + 1] = f.y, kr[u][4 * c + 2] = f.z, kr[u][4 * c + 3] = f.w;
      }
    } else if constexpr (kKv == kF16Rows) {
      const uint2* row = reinterpret_cast<const uint2*>(kbase + j * a.k.nb[2]);
#pragma unroll
      for (int c = 0; c < EPL / 4; ++c) {
        const uint2 w = j < end ? row[lane + 32 * c] : uint2{};
        const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&w.x));
        const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&w.y));
        kr[u][4 * c] = lo.x, kr[u][4 * c + 1] = lo.y, kr[u][4 * c + 2] = hi.x, kr[u][4 * c + 3] = hi.y;
      }
    } else {
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        const int64_t i = lane + 32 * e;
        kr[u][e] = j < end && i < dk ? load_plain(a.k.type, kbase + i * a.k.nb[0] + j * a.k.nb[2]) : 0.0f;
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kKeysPerWarp; ++u) {
    const int64_t j = j0 + warp + kWarps * u;
    const float m = j < end && a.has_mask ? elem(a.mask, j, t, 0) : 0.0f;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float dot = 0.0f;
#pragma unroll
      for (int e = 0; e < EPL; ++e) dot = fmaf(q[g][e], kr[u][e], dot);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(kFullMask, dot, off);
      if (lane == 0) sm.p[g][warp + kWarps * u] = j < end ? dot * a.scale + m : -INFINITY;
    }
  }
}

// Warp g turns head g's scores into probabilities against the new running max (fixed xor trees).
template <int G>
__device__ void tile_softmax(Smem<G>& sm) {
  const int lane = threadIdx.x % 32, g = threadIdx.x / 32;
  if (g >= G) return;
  const float s = sm.p[g][lane];
  float tm = s;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) tm = fmaxf(tm, __shfl_xor_sync(kFullMask, tm, off));
  const float m_old = sm.m[g], m = fmaxf(m_old, tm);
  const bool skip = tm == -INFINITY;  // every key masked: the tile changes nothing
  float p = skip ? 0.0f : expf(s - m);
  float tl = p;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) tl += __shfl_xor_sync(kFullMask, tl, off);
  __syncwarp();
  sm.p[g][lane] = p;
  if (lane == 0) {
    const float corr = skip || m_old == -INFINITY ? (skip ? 1.0f : 0.0f) : expf(m_old - m);
    sm.skip[g] = skip;
    sm.corr[g] = corr;
    if (!skip) sm.m[g] = m, sm.l[g] = sm.l[g] * corr + tl;
  }
}

// The tiles of [tile0, tile1) up to the last one with an unmasked key of row t (thread i reads key
// tile0 kTile + i; the range is at most kThreads keys). A masked key changes nothing, so the tiles
// after it are skipped without changing a bit: a decode row's -inf tail up to its bucketed span,
// which at a short context was most of the step's attention time (ncu: 33 us a layer at 10 keys).
template <int G>
__device__ int64_t live_tiles(const AttnArgs& a, int64_t t, int64_t tile0, int64_t tile1, int64_t end, Smem<G>& sm) {
  if (threadIdx.x == 0) sm.live = 0;
  __syncthreads();
  const int64_t j = tile0 * kTile + threadIdx.x;
  if (j < tile1 * kTile && j < end && elem(a.mask, j, t, 0) != -INFINITY)
    atomicMax(&sm.live, static_cast<int>(threadIdx.x) / kTile + 1);
  __syncthreads();
  return tile0 + sm.live;
}

// Tiles [tile0, tile1) of row t for heads h0 .. h0 + G - 1; thread d accumulates output element d
// of every head. Leaves the running max and sum in sm and returns the thread's outputs.
template <int EPL, int G, int kKv>
__device__ void attend(const AttnArgs& a, int64_t h0, int64_t t, int64_t tile0, int64_t tile1, Smem<G>& sm,
                       float (&acc)[G]) {
  const int lane = threadIdx.x % 32;
  const int64_t dk = a.q.ne[0], dv = a.v.ne[0], kv = h0 / a.group, n_kv = a.k.ne[2];
  const int64_t end = a.causal ? min(n_kv, t + n_kv - a.q.ne[2] + 1) : n_kv;
  float q[G][EPL];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int64_t i = dim_of<kKv != kAnyType>(lane, e);
      q[g][e] = i < dk ? elem(a.q, i, h0 + g, t) : 0.0f;
    }
  if (threadIdx.x < G) sm.m[threadIdx.x] = -INFINITY, sm.l[threadIdx.x] = 0.0f;
#pragma unroll
  for (int g = 0; g < G; ++g) acc[g] = 0.0f;
  const int64_t d = threadIdx.x;
  const char* vbase = a.v.data + d * a.v.nb[0] + kv * a.v.nb[1];
  if (a.has_mask && (tile1 - tile0) * kTile <= kThreads) tile1 = live_tiles<G>(a, t, tile0, tile1, end, sm);
  for (int64_t tile = tile0; tile < tile1; ++tile) {
    const int64_t j0 = tile * kTile;
    if (j0 >= end) break;
    // This thread's V elements of the tile, loaded before the scores so that their latency
    // overlaps the K loads, the dot products and the softmax.
    float vv[kTile];
    const char* vrow = vbase + j0 * a.v.nb[2];
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const char* p = vrow + j * a.v.nb[2];
      vv[j] = 0.0f;
      if (d < dv && j0 + j < end) {
        if constexpr (kKv == kF32Rows) {
          vv[j] = *reinterpret_cast<const float*>(p);
        } else if constexpr (kKv == kF16Rows) {
          vv[j] = half_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
        } else {
          vv[j] = load_plain(a.v.type, p);
        }
      }
    }
    __syncthreads();  // the previous tile's probabilities are consumed
    tile_scores<EPL, G, kKv>(a, q, kv, t, j0, end, sm);
    __syncthreads();
    tile_softmax<G>(sm);
    __syncthreads();
    if (d >= dv) continue;
    float o[G];
#pragma unroll
    for (int g = 0; g < G; ++g) o[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < kTile; ++j)
#pragma unroll
      for (int g = 0; g < G; ++g) o[g] = fmaf(sm.p[g][j], vv[j], o[g]);
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (!sm.skip[g]) acc[g] = fmaf(acc[g], sm.corr[g], o[g]);
  }
  __syncthreads();  // the running max and sum are final
}

// grid (n_split, H / G, T): block (s, hg, t) takes heads hg G .. + G - 1 of token t over split s
// (split path: partial state, or the row when n_split == 1 and the tile is the span) or over
// every tile (n_split == 1).
template <int EPL, int G, int kKv>
__global__ void __launch_bounds__(kThreads) attn_kernel(AttnArgs a) {
  pdl_trigger();
  __shared__ Smem<G> sm;
  const int64_t s = blockIdx.x, h0 = static_cast<int64_t>(blockIdx.y) * G, t = blockIdx.z;
  const int64_t n_tiles = (a.k.ne[2] + kTile - 1) / kTile;
  float acc[G];
  if (a.n_split > 1) {
    attend<EPL, G, kKv>(a, h0, t, s * kSplitTiles, min(n_tiles, (s + 1) * kSplitTiles), sm, acc);
  } else {
    attend<EPL, G, kKv>(a, h0, t, 0, n_tiles, sm, acc);
  }
  const int64_t d = threadIdx.x, dv = a.v.ne[0];
  if (d >= dv) return;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const int64_t h = h0 + g;
    if (a.n_split == 1) {
      const float inv = sm.l[g] > 0.0f ? 1.0f / sm.l[g] : 0.0f;  // no unmasked key: zeros
      store_plain(a.out.type, a.out.data + d * a.out.nb[0] + h * a.out.nb[1] + t * a.out.nb[2], acc[g] * inv);
      continue;
    }
    float* p = a.part + ((t * a.q.ne[1] + h) * a.n_split + s) * (dv + 2);
    if (d == 0) p[0] = sm.m[g], p[1] = sm.l[g];
    p[2 + d] = acc[g];
  }
}

// grid (H, T, ceil(Dv / 32)), kThreads threads: merges the row's splits, all scaled to the largest
// max, for output elements 32 z .. 32 z + 31 (lane: element 32 z + lane). Warp w takes splits w,
// w + kWarps, ..., then the warps' sums are added in warp order: a fixed order for a given span,
// the same for every element. (One block per row merged 256 splits at a 32k span on 16 SMs.) A
// split with every key masked (max -inf, sum and outputs 0) adds nothing.
__global__ void __launch_bounds__(kThreads) merge_kernel(AttnArgs a) {
  pdl_trigger();
  __shared__ float part_o[kWarps][32];
  __shared__ float part_l[kWarps], warp_max[kWarps];
  const int64_t h = blockIdx.x, t = blockIdx.y, dv = a.v.ne[0];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t e = static_cast<int64_t>(blockIdx.z) * 32 + lane;  // this lane's output element
  const float* row = a.part + (t * a.q.ne[1] + h) * a.n_split * (dv + 2);
  float m = -INFINITY;
  for (int64_t s = threadIdx.x; s < a.n_split; s += kThreads) m = fmaxf(m, row[s * (dv + 2)]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, off));
  if (lane == 0) warp_max[warp] = m;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kWarps; ++w) m = fmaxf(m, warp_max[w]);
  float o = 0.0f, l = 0.0f;
  if (m != -INFINITY) {
#pragma unroll 4
    for (int64_t s = warp; s < a.n_split; s += kWarps) {
      const float* p = row + s * (dv + 2);
      const float c = p[0] == -INFINITY ? 0.0f : expf(p[0] - m);
      l = fmaf(p[1], c, l);
      if (e < dv) o = fmaf(p[2 + e], c, o);
    }
  }
  part_o[warp][lane] = o;
  if (lane == 0) part_l[warp] = l;
  __syncthreads();
  if (warp != 0 || e >= dv) return;
  float od = 0.0f, ld = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) od += part_o[w][lane], ld += part_l[w];
  const float inv = ld > 0.0f ? 1.0f / ld : 0.0f;
  store_plain(a.out.type, a.out.data + e * a.out.nb[0] + h * a.out.nb[1] + t * a.out.nb[2], od * inv);
}

// Blocks per query row: one per split of kSplitTiles tiles for a few rows (decode, verify), else one.
int64_t n_split_of(const Tensor& q, const Tensor& k) {
  return q.ne[2] <= kSplitMaxRows ? mm::ceil_div<int64_t>(k.ne[2], kTile * kSplitTiles) : 1;
}

// The splits' states in a.part into the output rows.
void launch_merge(const Ctx& ctx, const AttnArgs& a) {
  merge_kernel<<<dim3(static_cast<unsigned>(a.q.ne[1]), static_cast<unsigned>(a.q.ne[2]),
                      static_cast<unsigned>(mm::ceil_div<int64_t>(a.v.ne[0], 32))),
                 kThreads, 0, ctx.stream>>>(a);
}

template <int EPL, int G, int kKv>
void launch(const Ctx& ctx, const AttnArgs& a) {
  const int64_t h = a.q.ne[1], t = a.q.ne[2];
  GL_ASSERT(a.n_split == 1 || a.part != nullptr, "cuda flash_attn: split path without its planned workspace");
  const dim3 grid(static_cast<unsigned>(a.n_split), static_cast<unsigned>(h / G), static_cast<unsigned>(t));
  attn_kernel<EPL, G, kKv><<<grid, kThreads, 0, ctx.stream>>>(a);
  if (a.n_split > 1) launch_merge(ctx, a);
}

// Decode and verify rows over an F16 cache on the tensor cores, in splits of kMmaSplitKeys keys
// (fewer than n_split_of's, so the planned workspace holds them; an empty span is one split that
// writes zeros). False: nothing launched.
static_assert(kTile * kSplitTiles <= kMmaSplitKeys, "the workspace (n_split_of) holds the tensor-core splits");
bool split_mma(const Ctx& ctx, Tensor& dst, AttnArgs a) {
  if (a.q.ne[2] > kSplitMaxRows || !flash_attn_mma_fits(dst)) return false;
  a.n_split = std::max<int64_t>(1, mm::ceil_div<int64_t>(a.k.ne[2], kMmaSplitKeys));
  if (a.n_split > 65535 || !flash_attn_mma(ctx, dst, a.n_split, a.part)) return false;  // grid z
  if (a.n_split > 1) launch_merge(ctx, a);
  return true;
}

template <int EPL, int kKv>
void launch_group(const Ctx& ctx, const AttnArgs& a) {
  if (a.group % 4 == 0) return launch<EPL, 4, kKv>(ctx, a);
  if (a.group % 2 == 0) return launch<EPL, 2, kKv>(ctx, a);
  launch<EPL, 1, kKv>(ctx, a);
}

// Dense F32 or F16 K and V (the model's KV cache) whose K rows the kernel reads four elements at a
// time; anything else element by element.
KvRead kv_read(const Tensor& k, const Tensor& v) {
  if (k.type != v.type || k.ne[0] % 128 != 0 || !rows_on_16_bytes(k)) return kAnyType;
  if (k.type == DType::F32 && k.nb[0] == 4 && v.nb[0] == 4) return kF32Rows;
  if (k.type == DType::F16 && k.nb[0] == 2 && v.nb[0] == 2) return kF16Rows;
  return kAnyType;
}

}  // namespace

void flash_attn(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::FLASH_ATTN, "cuda flash_attn: not a FLASH_ATTN node");
  const Tensor& q = *dst.src[0];
  const Tensor& k = *dst.src[1];
  const Tensor& v = *dst.src[2];
  const Tensor* mask = dst.src[3];
  const SoftmaxParams p = dst.p<SoftmaxParams>();
  if (nelements(dst) == 0) return;
  if (q.ne[2] > kSplitMaxRows) {
    if (flash_attn_mma_fits(dst) && flash_attn_mma(ctx, dst)) return;
    if (flash_attn_rows_fits(dst)) return flash_attn_rows(ctx, dst);
  }
  AttnArgs a{arg(q),
             arg(k),
             arg(v),
             mask ? arg(*mask) : TensorArg{},
             arg(dst),
             mask != nullptr,
             p.causal,
             p.scale,
             q.ne[1] / k.ne[1],
             n_split_of(q, k),
             static_cast<float*>(dst.workspace)};
  if (split_mma(ctx, dst, a)) return;
  const KvRead rows = kv_read(k, v);
  if (q.ne[0] <= 32) return launch_group<1, kAnyType>(ctx, a);
  if (q.ne[0] <= 64) return launch_group<2, kAnyType>(ctx, a);
  if (q.ne[0] <= 128) {
    if (rows == kF32Rows) return launch_group<4, kF32Rows>(ctx, a);
    if (rows == kF16Rows) return launch_group<4, kF16Rows>(ctx, a);
    return launch_group<4, kAnyType>(ctx, a);
  }
  if (rows == kF32Rows) return launch_group<8, kF32Rows>(ctx, a);
  if (rows == kF16Rows) return launch_group<8, kF16Rows>(ctx, a);
  launch_group<8, kAnyType>(ctx, a);
}

size_t flash_attn_workspace(const Tensor& dst) {
  const Tensor& q = *dst.src[0];
  const int64_t n_split = n_split_of(q, *dst.src[1]);
  if (n_split == 1 || nelements(dst) == 0) return 0;
  return static_cast<size_t>(q.ne[2] * q.ne[1] * n_split * (dst.src[2]->ne[0] + 2)) * sizeof(float);
}

bool supports_flash_attn(const Tensor& node) {
  const Tensor& q = *node.src[0];
  const Tensor& k = *node.src[1];
  const Tensor& v = *node.src[2];
  for (const Tensor* t : {&q, &k, &v})
    if (!is_float_type(t->type)) return false;
  if (node.src[3] && node.src[3]->type != DType::F32) return false;
  return node.type == DType::F32 && q.ne[0] <= kMaxHead && v.ne[0] <= kMaxHead && q.ne[1] <= 65535 &&
         q.ne[2] <= 65535 && mm::ceil_div<int64_t>(k.ne[2], kTile) <= INT32_MAX;
}

}  // namespace gl::cuda
