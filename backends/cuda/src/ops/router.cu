// router.cu - the MoE router's small nodes, fused (a decode step launches them once per layer).
//
// softmax_top_k: SOFTMAX (no mask, not causal) and the TOP_K that reads its result, one kernel
// writing both. The probabilities follow softmax_kernel's arithmetic with its launch geometry
// (so the same reduction order and the same bits); the picks follow top_k's total order, which
// does not depend on the geometry. expert_weights: GET_ROWS of the picked probabilities, SUM_ROWS
// of them and the DIV that renormalises them: one warp per token, the double sum in sum_rows'
// shuffle order (one warp for k <= 32), so again the unfused bits. Every node's result is written:
// later readers (the weights' reshape, the experts' ids) find them where the plan put them.
#include <cmath>

#include "cuda_utils.cuh"
#include "kernels.cuh"
#include "weighted_rows.cuh"

namespace gl::cuda {
namespace {

constexpr int32_t kNoPick = INT32_MAX;  // ranks after every real element of equal value

// Rows up to this long are picked by one warp from registers (kPickRegs values a lane): a router
// row of 256 experts took k rounds of a block-wide arg-max, two barriers each.
constexpr int kPickRegs = 16;
constexpr int64_t kWarpPickRow = 32 * kPickRegs;

// A float's bits as an unsigned that orders as the float does (-0 as +0; NaN is never given), and
// back. Keys of two values are equal exactly when the floats are.
__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t b = __float_as_uint(v == 0.0f ? 0.0f : v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// The k largest of row rp (n <= kWarpPickRow elements) into out, one warp: lane l holds elements
// l, l + 32, ...; each round a lane's best element ranked after the previous pick, then the warp's.
// The picks follow top_k's total order, so they are the block-wide rounds' picks.
__device__ __forceinline__ void warp_picks(const char* rp, const TensorArg& probs, int64_t n, int32_t k, char* out,
                                           int64_t out_stride) {
  const int lane = static_cast<int>(threadIdx.x);
  float v[kPickRegs];
#pragma unroll
  for (int i = 0; i < kPickRegs; ++i) {
    const int64_t j = lane + 32 * i;
    const float x = j < n ? load_plain(probs.type, rp + j * probs.nb[0]) : -INFINITY;
    v[i] = isnan(x) ? -INFINITY : x;
  }
  Ranked prev{INFINITY, -1};
  for (int32_t p = 0; p < k; ++p) {
    Ranked best{-INFINITY, kNoPick};
#pragma unroll
    for (int i = 0; i < kPickRegs; ++i) {
      const Ranked e{v[i], lane + 32 * i};
      if (lane + 32 * i < n && ranks_before(prev, e) && ranks_before(e, best)) best = e;
    }
    // The warp's best in two integer reductions instead of ten dependent shuffles: the largest
    // value, then the lowest index holding it. (k <= n: some lane always has a candidate.)
    const uint32_t key = best.i == kNoPick ? 0u : order_key(best.v);
    const uint32_t top = __reduce_max_sync(kFullMask, key);
    const uint32_t at = __reduce_min_sync(kFullMask, key == top ? static_cast<uint32_t>(best.i) : 0xffffffffu);
    if (lane == 0) *reinterpret_cast<int32_t*>(out + p * out_stride) = static_cast<int32_t>(at);
    prev = {key_value(top), static_cast<int32_t>(at)};
  }
}

// Rows of a [E, ...]: p = softmax(scale * a) into probs, then the k largest of p into ids.
__global__ void softmax_top_k_kernel(TensorArg a, TensorArg probs, TensorArg ids, int64_t rows, float scale,
                                     int32_t k) {
  __shared__ float max_scratch[32];
  __shared__ double sum_scratch[32];
  __shared__ Ranked rank_scratch[32];
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const bool live = r < rows;  // a row group past the end still joins the reductions
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (live) unravel_row(probs.ne, r, i1, i2, i3);
    const int64_t n = live ? a.ne[0] : 0;
    const char* ra = row_ptr(a, i1, i2, i3);
    char* rp = row_ptr(probs, i1, i2, i3);
    auto score = [&](int64_t j) { return __fmul_rn(load_plain(a.type, ra + j * a.nb[0]), scale); };
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, score(j));
    mx = group_reduce(mx, MaxOp{}, max_scratch);
    const int64_t end = mx == -INFINITY ? 0 : n;  // everything -inf: all zeros
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < end; j += blockDim.x) sum += static_cast<double>(expf(score(j) - mx));
    sum = group_reduce(sum, SumOp{}, sum_scratch);
    const double inv = 1.0 / sum;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float v = j < end ? static_cast<float>(static_cast<double>(expf(score(j) - mx)) * inv) : 0.0f;
      store_plain(probs.type, rp + j * probs.nb[0], v);
    }
    // The row's probabilities, written by the whole group, are read back below. Short rows (the
    // same choice for every row) are picked by one warp while the group's other warps go on.
    __syncthreads();
    if (a.ne[0] <= kWarpPickRow) {
      if (live && threadIdx.x < 32) warp_picks(rp, probs, n, k, row_ptr(ids, i1, i2, i3), ids.nb[0]);
      continue;
    }
    Ranked prev{INFINITY, -1};
    for (int32_t p = 0; p < k; ++p) {
      Ranked best{-INFINITY, kNoPick};
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const float v = load_plain(probs.type, rp + j * probs.nb[0]);
        const Ranked e{isnan(v) ? -INFINITY : v, static_cast<int32_t>(j)};
        if (ranks_before(prev, e) && ranks_before(e, best)) best = e;
      }
      best = group_reduce(best, RankOp{}, rank_scratch);
      if (live && threadIdx.x == 0) *reinterpret_cast<int32_t*>(row_ptr(ids, i1, i2, i3) + p * ids.nb[0]) = best.i;
      prev = best;
    }
  }
}

// Token t, lane j of one warp: w = probs[ids[j, t], t] (written to picked), and the sum of the
// token's k weights in double, in sum_rows' shuffle order (one warp for k <= 32); lanes past k
// (or tokens past the end) add 0 and return w = 0.
struct Picked {
  float w;
  float total;
};
__device__ __forceinline__ Picked picked_weight(const TensorArg& probs, const TensorArg& ids, const TensorArg& picked,
                                                int64_t t, int j, bool live) {
  float w = 0.0f;
  if (live) {
    const int32_t id = *reinterpret_cast<const int32_t*>(ids.data + j * ids.nb[0] + t * ids.nb[1]);
    w = *reinterpret_cast<const float*>(probs.data + static_cast<int64_t>(id) * probs.nb[1] + t * probs.nb[2]);
    *reinterpret_cast<float*>(picked.data + j * picked.nb[1] + t * picked.nb[2]) = w;
  }
  double s = live ? static_cast<double>(w) : 0.0;
  for (int o = 16; o > 0; o >>= 1) s += shfl_xor(s, o);
  return {w, static_cast<float>(s)};
}

// Token t (one warp): w[j] = probs[ids[j, t], t] for j < k, s = sum w (double), out[j] = w[j] / s.
// probs [1, E, T] (a view of the softmax result), picked [1, k, T], sum [1, T], out [k, T]. With
// one block (barrier: decode, verify) every read is done before a sum or weight is written, so
// those may lie on probs or ids, which the planner frees at the GET_ROWS.
__global__ void expert_weights_kernel(TensorArg probs, TensorArg ids, TensorArg picked, TensorArg sum, TensorArg out,
                                      int64_t n_tokens, bool barrier) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const int j = static_cast<int>(threadIdx.x);
  const bool live = t < n_tokens && j < ids.ne[0];  // whole warps run on: the shuffles see full warps
  const Picked p = picked_weight(probs, ids, picked, t, j, live);
  if (barrier) __syncthreads();
  if (t >= n_tokens) return;
  if (j == 0) *reinterpret_cast<float*>(sum.data + t * sum.nb[1]) = p.total;
  if (live) *reinterpret_cast<float*>(out.data + j * out.nb[0] + t * out.nb[1]) = p.w / p.total;
}

// The expert weights as above (warp t for token t) and then the experts' weighted sum of
// weighted_rows.cuh over them (a [H, k, T] -> prod, wsum), one block: a decode or verify step's
// MoE tail in one launch instead of two. The weights reach the sum through shared memory as the
// same floats out holds; the sums go out after the block's last read.
__global__ void __launch_bounds__(kWsumThreads)
    weighted_experts_kernel(TensorArg probs, TensorArg ids, TensorArg picked, TensorArg sum, TensorArg out, TensorArg a,
                            TensorArg prod, TensorArg wsum, int64_t rows) {
  pdl_trigger();
  __shared__ float ws[kWsumMaxWeights];
  const int64_t k = ids.ne[0], t = threadIdx.x / 32;
  const int j = static_cast<int>(threadIdx.x % 32);
  const bool live = t < ids.ne[1] && j < k;
  const Picked p = picked_weight(probs, ids, picked, t, j, live);
  __syncthreads();  // every read of probs and ids is done: sum and out may lie on them
  if (t < ids.ne[1] && j == 0) *reinterpret_cast<float*>(sum.data + t * sum.nb[1]) = p.total;
  if (live) {
    const float w = p.w / p.total;
    *reinterpret_cast<float*>(out.data + j * out.nb[0] + t * out.nb[1]) = w;
    ws[t * k + j] = w;
  }
  __syncthreads();
  weighted_sums_held(a, ws, prod, wsum, rows);
}

bool f32(const Tensor& t) { return t.type == DType::F32; }

// One batch dim of tokens: nothing in dims 2 and 3 of a [n, T] tensor.
bool tokens_2d(const Tensor& t) { return t.ne[2] == 1 && t.ne[3] == 1; }

}  // namespace

bool softmax_top_k(const Ctx& ctx, Tensor& sm, Tensor& tk) {
  if (sm.op != Op::SOFTMAX || tk.op != Op::TOP_K || tk.src[0] != &sm || sm.src[1] != nullptr) return false;
  const SoftmaxParams sp = sm.p<SoftmaxParams>();
  const Tensor& a = *sm.src[0];
  const int32_t k = tk.p<TopKParams>().k;
  if (sp.causal || !supports_elementwise(sm) || !supports_reduce(tk) || !same_shape(a, sm)) return false;
  if (k < 1 || k > sm.ne[0] || tk.ne[0] != k || sm.ne[0] >= kNoPick) return false;
  if (tk.ne[1] != sm.ne[1] || tk.ne[2] != sm.ne[2] || tk.ne[3] != sm.ne[3]) return false;
  if (!disjoint(tk, sm) || !disjoint(tk, a) || !safe_to_fuse(sm, a)) return false;
  const RowLaunch l = row_launch(sm.ne[0], nrows(sm), 1024);  // softmax's own geometry
  if (l.empty()) return true;
  softmax_top_k_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(sm), arg(tk), l.rows, sp.scale, k);
  return true;
}

namespace {

// nodes[0..3] as the model renormalises the picked probabilities: GET_ROWS(probs [1, E, T], ids
// I32 [k, T]) -> RESHAPE [k, T] -> SUM_ROWS [1, T] -> DIV, all F32, k <= 32.
bool weights_shape(std::span<Tensor* const> nodes) {
  if (nodes.size() < 4) return false;
  const Tensor& g = *nodes[0];
  const Tensor& r = *nodes[1];
  const Tensor& s = *nodes[2];
  const Tensor& d = *nodes[3];
  if (g.op != Op::GET_ROWS || r.op != Op::RESHAPE || s.op != Op::SUM_ROWS || d.op != Op::DIV) return false;
  if (r.src[0] != &g || s.src[0] != &r || d.src[0] != &r || d.src[1] != &s) return false;
  const Tensor& probs = *g.src[0];
  const Tensor& ids = *g.src[1];
  const int64_t k = ids.ne[0], T = ids.ne[1];
  if (!f32(probs) || !f32(g) || !f32(s) || !f32(d) || ids.type != DType::I32 || k > 32 || T < 1) return false;
  if (probs.ne[0] != 1 || probs.ne[2] != T || probs.ne[3] != 1 || !tokens_2d(ids)) return false;
  if (g.ne[0] != 1 || g.ne[1] != k || g.ne[2] != T || r.ne[0] != k || r.ne[1] != T || !tokens_2d(r)) return false;
  if (!is_contiguous(g) || s.ne[0] != 1 || s.ne[1] != T || !tokens_2d(s) || !same_shape(d, r)) return false;
  return disjoint(g, s) && disjoint(s, d) && safe_to_fuse(d, r);
}

}  // namespace

int expert_weights(const Ctx& ctx, std::span<Tensor* const> nodes) {
  if (!weights_shape(nodes)) return 0;
  Tensor& g = *nodes[0];
  Tensor& s = *nodes[2];
  Tensor& d = *nodes[3];
  const Tensor& probs = *g.src[0];
  const Tensor& ids = *g.src[1];
  const int64_t T = ids.ne[1];
  // Every output against every input that a later-running warp may still read (past the barrier
  // of a single block, only the picked rows, written before it).
  constexpr int kTokensPerBlock = 8;
  const auto blocks = static_cast<unsigned>((T + kTokensPerBlock - 1) / kTokensPerBlock);
  for (const Tensor* out : {&g, &s, &d})
    for (const Tensor* in : {&probs, &ids}) {
      if ((out == &g || blocks > 1) && !disjoint(*out, *in)) return 0;
    }
  expert_weights_kernel<<<blocks, dim3(32, kTokensPerBlock), 0, ctx.stream>>>(arg(probs), arg(ids), arg(g), arg(s),
                                                                              arg(d), T, blocks == 1);
  return 4;
}

int weighted_experts(const Ctx& ctx, std::span<Tensor* const> nodes) {
  if (nodes.size() < 8 || !weights_shape(nodes)) return 0;
  Tensor& g = *nodes[0];
  Tensor& s = *nodes[2];
  Tensor& d = *nodes[3];
  const Tensor& w3 = *nodes[4];
  const Tensor *pa = nullptr, *pw = nullptr;
  if (w3.op != Op::RESHAPE || w3.src[0] != &d || !weighted_sum_shape(nodes.subspan(5), &pa, &pw) || pw != &w3) return 0;
  const Tensor& probs = *g.src[0];
  const Tensor& ids = *g.src[1];
  const Tensor& a = *pa;
  Tensor& m = *nodes[5];
  Tensor& y = *nodes[7];
  const int64_t k = ids.ne[0], T = ids.ne[1], rows = a.ne[0] * T;
  if (T * 32 > kWsumThreads || k * T > kWsumMaxWeights || rows > int64_t{kWsumThreads} * kWsumRowsPerThread) return 0;
  // The unfused order, kept: probs and ids read, picked written, a barrier, sum and out written,
  // a read, prod written, a barrier, the sums written. What is written before a is read must not
  // lie on it; prod element by element on a's own, never on the sums.
  if (!disjoint(g, probs) || !disjoint(g, ids) || !safe_to_fuse(m, a) || !disjoint(y, m)) return 0;
  for (const Tensor* out : {&g, &s, &d})
    if (!disjoint(*out, a)) return 0;
  weighted_experts_kernel<<<1, kWsumThreads, 0, ctx.stream>>>(arg(probs), arg(ids), arg(g), arg(s), arg(d), arg(a),
                                                              arg(m), arg(y), rows);
  return 8;
}

}  // namespace gl::cuda
