// reduce.cu - per-row reductions and selections: ARGMAX, TOP_K, SUM_ROWS (one row group per row).
//
// Why this shape: greedy sampling and MoE routing need exactly the CPU's indices, so selection
// compares (value, index) pairs with one total order - larger value first, lower index on ties,
// NaN never winning (ARGMAX skips it, TOP_K ranks it as -inf) - which makes the result
// independent of how the row is split among threads. TOP_K runs k rounds of a row-wide arg-max,
// each round taking the best element ranked after the previous pick: no scratch memory and no
// sort, O(k * n) reads per row (served from L2 after the first round), meant for the small k of
// routers and samplers (k <= 64); larger k is correct but slow. SUM_ROWS accumulates in double,
// as the CPU reference does.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"
#include "weighted_rows.cuh"

namespace gl::cuda {
namespace {

constexpr int32_t kNoIndex = INT32_MAX;  // ranks after every real element of equal value

// Result element (i1, i2, i3) of an op that drops dim 0: [ne1, ne2, ne3] -> dims 0..2.
__device__ __forceinline__ int32_t* index_out(const TensorArg& d, int64_t i1, int64_t i2, int64_t i3) {
  return reinterpret_cast<int32_t*>(d.data + i1 * d.nb[0] + i2 * d.nb[1] + i3 * d.nb[2]);
}

// ---- kernels -----------------------------------------------------------------

// Index of the first largest value of each row; 0 when no value exceeds -inf (all -inf or NaN).
__global__ void argmax_kernel(TensorArg a, TensorArg d, int64_t rows) {
  pdl_trigger();
  __shared__ Ranked scratch[32];
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const bool live = r < rows;  // a row group past the end still joins the reduction
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (live) unravel_row(a.ne, r, i1, i2, i3);
    const char* ra = row_ptr(a, i1, i2, i3);
    Ranked best{-INFINITY, kNoIndex};
    for (int64_t i0 = threadIdx.x; i0 < (live ? a.ne[0] : 0); i0 += blockDim.x) {
      const float v = load_plain(a.type, ra + i0 * a.nb[0]);
      if (v > best.v) best = {v, static_cast<int32_t>(i0)};  // strict: this thread's first maximum
    }
    best = group_reduce(best, RankOp{}, scratch);
    if (live && threadIdx.x == 0) *index_out(d, i1, i2, i3) = best.i == kNoIndex ? 0 : best.i;
  }
}

// Long rows (a vocabulary of logits): segments of one row in parallel, each block's best to the
// node's workspace, then argmax_merge_kernel picks the best of a row's segments. The order is
// total, so the index equals the one-block scan's.
__global__ void argmax_segments_kernel(TensorArg a, Ranked* part, int64_t seg) {
  pdl_trigger();
  __shared__ Ranked scratch[32];
  const int64_t r = blockIdx.y, s = blockIdx.x;
  int64_t i1, i2, i3;
  unravel_row(a.ne, r, i1, i2, i3);
  const char* ra = row_ptr(a, i1, i2, i3);
  const int64_t end = s * seg + seg < a.ne[0] ? s * seg + seg : a.ne[0];
  Ranked best{-INFINITY, kNoIndex};
  for (int64_t i0 = s * seg + threadIdx.x; i0 < end; i0 += blockDim.x) {
    const float v = load_plain(a.type, ra + i0 * a.nb[0]);
    if (v > best.v) best = {v, static_cast<int32_t>(i0)};
  }
  best = group_reduce(best, RankOp{}, scratch);
  if (threadIdx.x == 0) part[r * gridDim.x + s] = best;
}

__global__ void argmax_merge_kernel(const Ranked* part, int n_seg, TensorArg a, TensorArg d) {
  pdl_trigger();
  __shared__ Ranked scratch[32];
  const int64_t r = blockIdx.x;
  Ranked best{-INFINITY, kNoIndex};
  for (int s = static_cast<int>(threadIdx.x); s < n_seg; s += blockDim.x) best = RankOp{}(best, part[r * n_seg + s]);
  best = group_reduce(best, RankOp{}, scratch);
  int64_t i1, i2, i3;
  unravel_row(a.ne, r, i1, i2, i3);
  if (threadIdx.x == 0) *index_out(d, i1, i2, i3) = best.i == kNoIndex ? 0 : best.i;
}

// Indices of the k largest values of each row, largest first, lower index first on ties.
__global__ void top_k_kernel(TensorArg a, TensorArg d, int64_t rows, int32_t k) {
  pdl_trigger();
  __shared__ Ranked scratch[32];
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const bool live = r < rows;
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (live) unravel_row(a.ne, r, i1, i2, i3);
    const char* ra = row_ptr(a, i1, i2, i3);
    const int64_t n = live ? a.ne[0] : 0;
    Ranked prev{INFINITY, -1};  // ranks before every element
    for (int32_t j = 0; j < k; ++j) {
      Ranked best{-INFINITY, kNoIndex};
      for (int64_t i0 = threadIdx.x; i0 < n; i0 += blockDim.x) {
        const float v = load_plain(a.type, ra + i0 * a.nb[0]);
        const Ranked e{isnan(v) ? -INFINITY : v, static_cast<int32_t>(i0)};
        if (ranks_before(prev, e) && ranks_before(e, best)) best = e;
      }
      best = group_reduce(best, RankOp{}, scratch);
      if (live && threadIdx.x == 0) *reinterpret_cast<int32_t*>(row_ptr(d, i1, i2, i3) + j * d.nb[0]) = best.i;
      prev = best;
    }
  }
}

// [n, ne1, ne2, ne3] -> [1, ne1, ne2, ne3], the sum accumulated in double.
__global__ void sum_rows_kernel(TensorArg a, TensorArg d, int64_t rows) {
  pdl_trigger();
  __shared__ double scratch[32];
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const bool live = r < rows;
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (live) unravel_row(a.ne, r, i1, i2, i3);
    const char* ra = row_ptr(a, i1, i2, i3);
    double s = 0.0;
    for (int64_t i0 = threadIdx.x; i0 < (live ? a.ne[0] : 0); i0 += blockDim.x)
      s += static_cast<double>(load_plain(a.type, ra + i0 * a.nb[0]));
    s = group_reduce(s, SumOp{}, scratch);
    if (live && threadIdx.x == 0) store_plain(d.type, row_ptr(d, i1, i2, i3), static_cast<float>(s));
  }
}

// The same for short rows (the MoE's weighted sum over its 8 experts, a row of the permuted
// [8, H, T] view): a thread per row, so that adjacent threads read adjacent elements of the
// strided rows. A block per row read them 32 bytes at a time (35B-A3B pp512: 286 us per layer).
__global__ void sum_short_rows_kernel(TensorArg a, TensorArg d, int64_t rows) {
  pdl_trigger();
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
    int64_t i1 = 0, i2 = 0, i3 = 0;
    unravel_row(a.ne, r, i1, i2, i3);
    const char* ra = row_ptr(a, i1, i2, i3);
    double s = 0.0;
    for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) s += static_cast<double>(load_plain(a.type, ra + i0 * a.nb[0]));
    store_plain(d.type, row_ptr(d, i1, i2, i3), static_cast<float>(s));
  }
}

// A thread per output; the sums may not lie on a or w (other threads still read them).
__global__ void weighted_sum_kernel(TensorArg a, TensorArg w, TensorArg prod, TensorArg sum, int64_t rows) {
  pdl_trigger();
  const auto wt = [&](int64_t j, int64_t t) {
    return *reinterpret_cast<const float*>(w.data + j * w.nb[1] + t * w.nb[2]);
  };
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x)
    store_sum(sum, r % a.ne[0], r / a.ne[0], static_cast<float>(weighted_row(a, wt, prod, r % a.ne[0], r / a.ne[0])));
}

// Decode and verify (few tokens): one block, the weights staged in shared memory and every sum
// held until all reads are done, so the sums may lie on a or w (which the planner frees at the MUL).
__global__ void __launch_bounds__(kWsumThreads)
    weighted_sum_block_kernel(TensorArg a, TensorArg w, TensorArg prod, TensorArg sum, int64_t rows) {
  pdl_trigger();
  __shared__ float ws[kWsumMaxWeights];
  const int64_t k = a.ne[1];
  for (int64_t e = threadIdx.x; e < k * a.ne[2]; e += blockDim.x)
    ws[e] = *reinterpret_cast<const float*>(w.data + (e % k) * w.nb[1] + (e / k) * w.nb[2]);
  __syncthreads();
  weighted_sums_held(a, ws, prod, sum, rows);
}

}  // namespace

// ---- entries -----------------------------------------------------------------

namespace {

constexpr int64_t kArgmaxSegment = 4096;  // a 248k vocabulary row: 61 blocks instead of one

// Segments per row when argmax splits long rows (few of them) across blocks; 0: one block a row.
int64_t argmax_segments(const Tensor& a) {
  if (a.ne[0] < 4 * kArgmaxSegment || nrows(a) > 64) return 0;
  return (a.ne[0] + kArgmaxSegment - 1) / kArgmaxSegment;
}

}  // namespace

// The segmented path's per-block partials; the one-block-a-row path needs none.
size_t argmax_workspace(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  return static_cast<size_t>(nrows(a) * argmax_segments(a)) * sizeof(Ranked);
}

void argmax(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::ARGMAX && dst.type == DType::I32, "cuda argmax: not an I32 ARGMAX node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(dst.ne[0] == a.ne[1] && dst.ne[1] == a.ne[2] && dst.ne[2] == a.ne[3],
            "cuda argmax: dst must be [ne1, ne2, ne3]");
  const int64_t rows = nrows(a);
  if (const int64_t n_seg = argmax_segments(a)) {
    GL_ASSERT(dst.workspace != nullptr, "cuda argmax: segmented path without its planned workspace");
    auto* part = static_cast<Ranked*>(dst.workspace);
    argmax_segments_kernel<<<dim3(static_cast<unsigned>(n_seg), static_cast<unsigned>(rows)), 256, 0, ctx.stream>>>(
        arg(a), part, kArgmaxSegment);
    argmax_merge_kernel<<<static_cast<unsigned>(rows), 64, 0, ctx.stream>>>(part, static_cast<int>(n_seg), arg(a),
                                                                            arg(dst));
    return;
  }
  const RowLaunch l = row_launch(a.ne[0], rows, 1024);
  if (l.empty()) return;
  argmax_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(dst), l.rows);
}

void top_k(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::TOP_K && dst.type == DType::I32, "cuda top_k: not an I32 TOP_K node");
  const Tensor& a = *dst.src[0];
  const int32_t k = dst.p<TopKParams>().k;
  GL_ASSERT(k >= 1 && k <= a.ne[0] && dst.ne[0] == k, "cuda top_k: k must be in [1, ne0] and equal dst.ne[0]");
  GL_ASSERT(dst.ne[1] == a.ne[1] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3], "cuda top_k: batch dims differ");
  GL_ASSERT(a.ne[0] < kNoIndex, "cuda top_k: rows must be shorter than 2^31 - 1");
  const RowLaunch l = row_launch(a.ne[0], nrows(a), 1024);
  if (l.empty()) return;
  top_k_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(dst), l.rows, k);
}

void sum_rows(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::SUM_ROWS, "cuda sum_rows: not a SUM_ROWS node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(dst.ne[0] == 1 && dst.ne[1] == a.ne[1] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3],
            "cuda sum_rows: dst must be [1, ne1, ne2, ne3]");
  if (a.ne[0] <= kShortRow) {
    const int64_t rows = nrows(a);
    if (rows == 0) return;
    const auto blocks = static_cast<unsigned>(std::min<int64_t>((rows + 255) / 256, 65535));
    sum_short_rows_kernel<<<blocks, 256, 0, ctx.stream>>>(arg(a), arg(dst), rows);
    return;
  }
  const RowLaunch l = row_launch(a.ne[0], nrows(a), 1024);
  if (l.empty()) return;
  sum_rows_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(dst), l.rows);
}

int weighted_sum(const Ctx& ctx, std::span<Tensor* const> nodes) {
  const Tensor *pa = nullptr, *pw = nullptr;
  if (!weighted_sum_shape(nodes, &pa, &pw)) return 0;
  const Tensor& a = *pa;
  const Tensor& w = *pw;
  Tensor& m = *nodes[0];
  Tensor& s = *nodes[2];
  const int64_t h = a.ne[0], k = a.ne[1], T = a.ne[2];
  // A thread reads its own a elements before writing them to prod; the sums go out after every
  // read (one block) or must not lie on what other threads read.
  const int64_t rows = h * T;
  if (!safe_to_fuse(m, a) || !disjoint(m, w) || !disjoint(s, m)) return 0;
  const bool one_block = !disjoint(s, a) || !disjoint(s, w);
  if (one_block && (rows > int64_t{kWsumThreads} * kWsumRowsPerThread || k * T > kWsumMaxWeights)) return 0;
  if (rows == 0) return 3;
  if (one_block) {
    weighted_sum_block_kernel<<<1, kWsumThreads, 0, ctx.stream>>>(arg(a), arg(w), arg(m), arg(s), rows);
  } else {
    const auto blocks = static_cast<unsigned>(std::min<int64_t>((rows + 255) / 256, 65535));
    weighted_sum_kernel<<<blocks, 256, 0, ctx.stream>>>(arg(a), arg(w), arg(m), arg(s), rows);
  }
  return 3;
}

// Float sources in any layout; indices out as I32, sums in a plain dtype (F32 from the builder).
bool supports_reduce(const Tensor& node) {
  const Tensor* a = node.src[0];
  const bool float_src = a && is_float_type(a->type);
  if (node.op == Op::ARGMAX || node.op == Op::TOP_K) return float_src && node.type == DType::I32;
  if (node.op == Op::SUM_ROWS) return float_src && is_plain_type(node.type);
  return false;
}

}  // namespace gl::cuda
