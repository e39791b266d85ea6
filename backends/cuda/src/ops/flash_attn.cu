// flash_attn.cu - FLASH_ATTN: softmax(scale q.k + mask) v over a KV span in one pass, no score matrix.
//
// Why this shape: a decode or verify step has a handful of query rows against a long span, so the
// span is cut into fixed splits of kSplit keys, one block per (split, head, token); each warp runs
// an online softmax over its keys (running max, scaled sum and output, one lane per 32nd element),
// the block merges its warps, and a second kernel merges the splits in split order. The split size
// is fixed, so a row's arithmetic depends only on its own keys: a verify row equals the decode row
// bit for bit (batch invariance), and a longer span whose extra keys are masked changes nothing
// (masked keys are skipped, never added as zeros). Prefill rows (T > kSplitMaxRows) take one block
// per (head, token) over the whole span instead, which needs no scratch.
// Precision: float dot products and exponentials, like the unfused graph; NMSE ~1e-12 against the
// float64 reference for spans of thousands of keys.
#include <cmath>

#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "mm_utils.cuh"

namespace gl::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int64_t kSplit = 32;          // keys per split (decode and verify)
constexpr int64_t kSplitMaxRows = 8;    // query rows up to which the split path is taken
constexpr int64_t kMaxHead = 256;       // largest Dk / Dv (8 elements per lane)

struct AttnArgs {
  TensorArg q, k, v, mask, out;
  bool has_mask, causal;
  float scale;
  int64_t group;    // query heads per kv head
  int64_t n_split;  // splits per row (1: the block writes the result)
  float* part;      // n_split > 1: per (t, h, split) the max, the sum, then Dv partial outputs
};

// Running softmax state of one warp (or a merge of several): max, sum of exp(s - max), output.
template <int EPL>
struct Online {
  float m = -INFINITY, l = 0.0f;
  float o[EPL] = {};
};

// Merges b into a, both scaled to the larger max; an empty side (max -inf) adds nothing.
template <int EPL>
__device__ __forceinline__ void merge(Online<EPL>& a, float bm, float bl, const float (&bo)[EPL]) {
  if (bm == -INFINITY) return;
  if (a.m == -INFINITY) {
    a.m = bm, a.l = bl;
#pragma unroll
    for (int e = 0; e < EPL; ++e) a.o[e] = bo[e];
    return;
  }
  const float m = fmaxf(a.m, bm), ca = expf(a.m - m), cb = expf(bm - m);
  a.l = a.l * ca + bl * cb;
#pragma unroll
  for (int e = 0; e < EPL; ++e) a.o[e] = a.o[e] * ca + bo[e] * cb;
  a.m = m;
}

__device__ __forceinline__ float elem(const TensorArg& t, int64_t i0, int64_t i1, int64_t i2) {
  return load_plain(t.type, t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2]);
}

// Keys [j0, j1) of row (h, t), key j0 + warp + kWarps i to this warp; returns the block's merge in
// every thread of warp 0.
template <int EPL>
__device__ Online<EPL> attend(const AttnArgs& a, int64_t h, int64_t t, int64_t j0, int64_t j1) {
  __shared__ float sm[kWarps], sl[kWarps], so[kWarps][EPL * 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t dk = a.q.ne[0], dv = a.v.ne[0], kv = h / a.group, n_kv = a.k.ne[2];
  const int64_t last = a.causal ? t + n_kv - a.q.ne[2] : n_kv - 1;
  float q[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t i = lane + 32 * e;
    q[e] = i < dk ? elem(a.q, i, h, t) : 0.0f;
  }
  Online<EPL> st;
  for (int64_t j = j0 + warp; j < j1 && j <= last; j += kWarps) {
    float s = a.has_mask ? elem(a.mask, j, t, 0) : 0.0f;
    if (s == -INFINITY) continue;  // masked: skipped, not added as a zero
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int64_t i = lane + 32 * e;
      if (i < dk) dot = fmaf(q[e], elem(a.k, i, kv, j), dot);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(kFullMask, dot, off);
    s += dot * a.scale;
    float vv[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int64_t i = lane + 32 * e;
      vv[e] = i < dv ? elem(a.v, i, kv, j) : 0.0f;
    }
    merge(st, s, 1.0f, vv);
  }
  if (lane == 0) sm[warp] = st.m, sl[warp] = st.l;
#pragma unroll
  for (int e = 0; e < EPL; ++e) so[warp][lane + 32 * e] = st.o[e];
  __syncthreads();
  Online<EPL> all;
  for (int w = 0; w < kWarps; ++w) {  // fixed warp order
    float o[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) o[e] = so[w][lane + 32 * e];
    merge(all, sm[w], sl[w], o);
  }
  return all;
}

template <int EPL>
__device__ void write_out(const AttnArgs& a, const Online<EPL>& r, int64_t h, int64_t t) {
  const int lane = threadIdx.x % 32;
  const float inv = r.l > 0.0f ? 1.0f / r.l : 0.0f;  // every key masked: zeros
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t i = lane + 32 * e;
    if (i < a.v.ne[0]) store_plain(a.out.type, a.out.data + i * a.out.nb[0] + h * a.out.nb[1] + t * a.out.nb[2], r.o[e] * inv);
  }
}

// grid (n_split, H, T): block (s, h, t) attends keys [s kSplit, (s + 1) kSplit); with one split it
// writes the row, else its partial state.
template <int EPL>
__global__ void __launch_bounds__(kThreads) split_kernel(AttnArgs a) {
  const int64_t s = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
  const Online<EPL> r = attend<EPL>(a, h, t, s * kSplit, (s + 1) * kSplit);
  if (threadIdx.x >= 32) return;
  if (a.n_split == 1) return write_out(a, r, h, t);
  const int64_t dv = a.v.ne[0];
  float* p = a.part + ((t * a.q.ne[1] + h) * a.n_split + s) * (dv + 2);
  const int lane = threadIdx.x;
  if (lane == 0) p[0] = r.m, p[1] = r.l;
#pragma unroll
  for (int e = 0; e < EPL; ++e)
    if (lane + 32 * e < dv) p[2 + lane + 32 * e] = r.o[e];
}

// grid (H, T), one warp: merges the row's splits in split order.
template <int EPL>
__global__ void __launch_bounds__(32) merge_kernel(AttnArgs a) {
  const int64_t h = blockIdx.x, t = blockIdx.y, dv = a.v.ne[0];
  const int lane = threadIdx.x;
  Online<EPL> r;
  for (int64_t s = 0; s < a.n_split; ++s) {
    const float* p = a.part + ((t * a.q.ne[1] + h) * a.n_split + s) * (dv + 2);
    float o[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e) o[e] = lane + 32 * e < dv ? p[2 + lane + 32 * e] : 0.0f;
    merge(r, p[0], p[1], o);
  }
  write_out(a, r, h, t);
}

// grid (H, T): the whole span per block (prefill).
template <int EPL>
__global__ void __launch_bounds__(kThreads) row_kernel(AttnArgs a) {
  const int64_t h = blockIdx.x, t = blockIdx.y;
  const Online<EPL> r = attend<EPL>(a, h, t, 0, a.k.ne[2]);
  if (threadIdx.x < 32) write_out(a, r, h, t);
}

template <int EPL>
void launch(const Ctx& ctx, AttnArgs a) {
  const int64_t h = a.q.ne[1], t = a.q.ne[2], n_kv = a.k.ne[2];
  if (t > kSplitMaxRows) {
    a.n_split = 1;
    row_kernel<EPL><<<dim3(static_cast<unsigned>(h), static_cast<unsigned>(t)), kThreads, 0, ctx.stream>>>(a);
    return;
  }
  a.n_split = mm::ceil_div<int64_t>(n_kv, kSplit);
  mm::Scratch part(ctx.stream, a.n_split > 1 ? static_cast<size_t>(t * h * a.n_split * (a.v.ne[0] + 2)) * 4 : 0);
  a.part = part.as<float>();
  const dim3 grid(static_cast<unsigned>(a.n_split), static_cast<unsigned>(h), static_cast<unsigned>(t));
  split_kernel<EPL><<<grid, kThreads, 0, ctx.stream>>>(a);
  if (a.n_split > 1)
    merge_kernel<EPL><<<dim3(static_cast<unsigned>(h), static_cast<unsigned>(t)), 32, 0, ctx.stream>>>(a);
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
  AttnArgs a{arg(q), arg(k), arg(v), mask ? arg(*mask) : TensorArg{}, arg(dst), mask != nullptr, p.causal, p.scale,
             q.ne[1] / k.ne[1], 1, nullptr};
  const int64_t d = std::max(q.ne[0], v.ne[0]);
  if (d <= 32) return launch<1>(ctx, a);
  if (d <= 64) return launch<2>(ctx, a);
  if (d <= 128) return launch<4>(ctx, a);
  launch<8>(ctx, a);
}

bool supports_flash_attn(const Tensor& node) {
  const Tensor& q = *node.src[0];
  const Tensor& k = *node.src[1];
  const Tensor& v = *node.src[2];
  for (const Tensor* t : {&q, &k, &v})
    if (!is_float_type(t->type)) return false;
  if (node.src[3] && node.src[3]->type != DType::F32) return false;
  return node.type == DType::F32 && q.ne[0] <= kMaxHead && v.ne[0] <= kMaxHead && q.ne[1] <= 65535 &&
         q.ne[2] <= 65535 && mm::ceil_div<int64_t>(k.ne[2], kSplit) <= INT32_MAX;
}

}  // namespace gl::cuda
