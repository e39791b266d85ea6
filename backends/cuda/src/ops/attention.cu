// attention.cu - SOFTMAX (scale, mask, causal) and ROPE (NEOX/NORMAL, partial n_dims, freq_scale).
//
// Why these precisions: SOFTMAX follows the CPU reference step by step - float scores
// (x * scale, then + mask, each rounded), float max and exp, a double row sum, and one double
// product rounded to float per element - so only the summation order differs. A row whose
// unmasked entries are all -inf (or that the causal cut leaves empty) becomes zeros, not 0/0.
// ROPE forms the angle pos * freq_scale * base^(-2i/n_dims), its sine and cosine and the rotation
// in double (sm_90 has fast FP64): in float, positions near 3e5 put the angle off by ~1e-2 rad.
// Each element is read only by the thread that writes it, so dst may alias src[0] in both ops.
#include <cmath>

#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"

namespace gl::cuda {
namespace {

// ---- softmax -----------------------------------------------------------------

struct SoftmaxArgs {
  float scale;
  bool causal;
  bool has_mask;
};

// Rows of a [n_kv, n_q, H, B]; mask (optional) F32 [n_kv, n_q], shared by all heads and batches.
__global__ void softmax_kernel(TensorArg a, TensorArg mask, TensorArg d, int64_t rows, SoftmaxArgs p) {
  __shared__ float max_scratch[32];
  __shared__ double sum_scratch[32];
  const int64_t n_kv = a.ne[0];
  const int64_t n_q = a.ne[1];
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const bool live = r < rows;  // a row group past the end still joins the reductions
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (live) unravel_row(d.ne, r, i1, i2, i3);
    // Columns from `end` on are causally masked and never read.
    const int64_t last = p.causal ? i1 + (n_kv - n_q) : n_kv - 1;
    int64_t end = live ? min(max(last + 1, int64_t{0}), n_kv) : 0;
    const char* ra = row_ptr(a, i1, i2, i3);
    const char* rm = mask.data + i1 * mask.nb[1];
    auto score = [&](int64_t j) {
      float w = __fmul_rn(load_plain(a.type, ra + j * a.nb[0]), p.scale);
      if (p.has_mask) w = __fadd_rn(w, *reinterpret_cast<const float*>(rm + j * mask.nb[0]));
      return w;
    };
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < end; j += blockDim.x) mx = fmaxf(mx, score(j));
    mx = group_reduce(mx, MaxOp{}, max_scratch);
    if (mx == -INFINITY) end = 0;  // everything masked: all zeros
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < end; j += blockDim.x) sum += static_cast<double>(expf(score(j) - mx));
    sum = group_reduce(sum, SumOp{}, sum_scratch);
    const double inv = 1.0 / sum;
    char* rd = row_ptr(d, i1, i2, i3);
    const int64_t n = live ? n_kv : 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float v = j < end ? static_cast<float>(static_cast<double>(expf(score(j) - mx)) * inv) : 0.0f;
      store_plain(d.type, rd + j * d.nb[0], v);
    }
  }
}

// ---- rope --------------------------------------------------------------------

struct RopeArgs {
  int32_t n_dims;
  double freq_base;
  double freq_scale;
  bool neox;
};

// Element t of pos (I32, any shape holding one position per token).
__device__ int32_t position(const TensorArg& pos, int64_t t) {
  int64_t i0, i1, i2, i3;
  unravel(pos.ne, t, i0, i1, i2, i3);
  return *reinterpret_cast<const int32_t*>(pos.data + i0 * pos.nb[0] + i1 * pos.nb[1] + i2 * pos.nb[2] +
                                           i3 * pos.nb[3]);
}

// Rows (h, t) of x [D, H, T]. Work item k < n_dims/2 rotates pair k; the rest copy the unrotated tail.
__global__ void rope_kernel(TensorArg x, TensorArg pos, TensorArg d, int64_t rows, RopeArgs p) {
  const int32_t half = p.n_dims / 2;
  const int64_t n_items = half + (x.ne[0] - p.n_dims);
  for (int64_t r = first_row_base() + threadIdx.y; r < rows; r += row_stride()) {
    int64_t h, t, i3;
    unravel_row(d.ne, r, h, t, i3);
    const double pt = __dmul_rn(static_cast<double>(position(pos, t)), p.freq_scale);
    const char* rx = row_ptr(x, h, t, i3);
    char* rd = row_ptr(d, h, t, i3);
    for (int64_t k = threadIdx.x; k < n_items; k += blockDim.x) {
      if (k >= half) {
        const int64_t j = p.n_dims + (k - half);
        convert_plain(x.type, rx + j * x.nb[0], d.type, rd + j * d.nb[0]);
        continue;
      }
      const int64_t j0 = p.neox ? k : 2 * k;
      const int64_t j1 = p.neox ? k + half : 2 * k + 1;
      const double inv_freq = pow(p.freq_base, -2.0 * static_cast<double>(k) / static_cast<double>(p.n_dims));
      double sn, cs;
      sincos(__dmul_rn(pt, inv_freq), &sn, &cs);
      const double x0 = load_plain(x.type, rx + j0 * x.nb[0]);
      const double x1 = load_plain(x.type, rx + j1 * x.nb[0]);
      store_plain(d.type, rd + j0 * d.nb[0], static_cast<float>(__dsub_rn(__dmul_rn(x0, cs), __dmul_rn(x1, sn))));
      store_plain(d.type, rd + j1 * d.nb[0], static_cast<float>(__dadd_rn(__dmul_rn(x1, cs), __dmul_rn(x0, sn))));
    }
  }
}

}  // namespace

void softmax(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::SOFTMAX, "cuda softmax: not a SOFTMAX node");
  const Tensor& a = *dst.src[0];
  const Tensor* mask = dst.src[1];
  GL_ASSERT(same_shape(a, dst), "cuda softmax: dst must match src");
  GL_ASSERT(!mask || (mask->type == DType::F32 && mask->ne[0] == a.ne[0] && mask->ne[1] == a.ne[1]),
            "cuda softmax: mask must be F32 [n_kv, n_q]");
  const SoftmaxParams sp = dst.p<SoftmaxParams>();
  const RowLaunch l = row_launch(dst.ne[0], nrows(dst), 1024);
  if (l.empty()) return;
  const TensorArg m = mask ? arg(*mask) : TensorArg{};
  softmax_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(a), m, arg(dst), l.rows,
                                                     SoftmaxArgs{sp.scale, sp.causal, mask != nullptr});
}

// x [D, H, T], pos I32 [T]: theta_i = pos * freq_scale * freq_base^(-2i/n_dims), i < n_dims/2.
void rope(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::ROPE, "cuda rope: not a ROPE node");
  const Tensor& x = *dst.src[0];
  const Tensor& pos = *dst.src[1];
  const RopeParams rp = dst.p<RopeParams>();
  GL_ASSERT(same_shape(x, dst) && x.ne[3] == 1, "cuda rope: dst must match x [D, H, T]");
  GL_ASSERT(pos.type == DType::I32 && nelements(pos) == x.ne[2], "cuda rope: pos must be I32, one per token");
  GL_ASSERT(rp.n_dims > 0 && rp.n_dims % 2 == 0 && rp.n_dims <= x.ne[0], "cuda rope: n_dims must be even and <= D");
  const int64_t n_items = rp.n_dims / 2 + (x.ne[0] - rp.n_dims);
  const RowLaunch l = row_launch(n_items, nrows(dst));
  if (l.empty()) return;
  const RopeArgs args{rp.n_dims, static_cast<double>(rp.freq_base), static_cast<double>(rp.freq_scale),
                      rp.mode == RopeMode::NEOX};
  rope_kernel<<<l.grid, l.block, 0, ctx.stream>>>(arg(x), arg(pos), arg(dst), l.rows, args);
}

}  // namespace gl::cuda
