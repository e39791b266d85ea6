// norm.cu - RMS_NORM and L2_NORM, one row group per row.
//
// Why double: the CPU reference accumulates the sum of squares in double and scales each element
// by a double 1 / sqrt(denom + eps), rounding once to float; doing the same here (FP64 is cheap on
// sm_90 and the op is memory-bound) leaves only the summation order as a difference. The row is
// fully reduced before any element is written and each element is written by the thread that
// re-reads it, so dst may alias src[0].
//
// Fused with the weight: a norm whose next node multiplies it by a (broadcast) weight -- every
// RMSNorm of the model -- runs as one kernel that writes both nodes' results (the norm's too, so
// any other reader of it still finds it), with the same float multiply as the separate MUL.
#include "cuda_utils.cuh"
#include "ggml-lite/status.h"
#include "kernels.cuh"

namespace gl::cuda {
namespace {

// Threads per row, and elements per thread kept in registers between the two passes. The second
// pass stores while the model's rows may alias the input, so a loop that re-read x (and w) from
// memory after each store waited a full memory round trip per element: a 4096-wide decode row took
// 19 us with 256 threads, 11 us with 1024 (H200 profile). Cached values are read once, up front;
// 512 threads x 8 cached elements cover a 4096-wide row within the register budget of a block.
constexpr int kNormThreads = 512;
constexpr int kCached = 8;

// y = x / sqrt(ss / n + eps) (rms) or x / sqrt(ss + eps) (l2), per row; with kMul also
// m = y * w, w broadcast over y by modulo on every dim.
template <bool kMul>
__global__ void __launch_bounds__(kNormThreads) norm_kernel(TensorArg x, TensorArg y, int64_t rows, bool rms, double eps, TensorArg w, TensorArg m) {
  pdl_trigger();  // a following GEMV may become resident while this kernel runs
  __shared__ double scratch[32];
  const int64_t ne0 = x.ne[0];
  const int64_t step = blockDim.x;
  for (int64_t base = first_row_base(); base < rows; base += row_stride()) {
    const int64_t r = base + threadIdx.y;
    const int64_t n = r < rows ? ne0 : 0;  // a row group past the end still joins the reduction
    int64_t i1 = 0, i2 = 0, i3 = 0;
    if (r < rows) unravel_row(y.ne, r, i1, i2, i3);
    const char* rx = row_ptr(x, i1, i2, i3);
    double xs[kCached];
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      xs[k] = i0 < n ? load_plain(x.type, rx + i0 * x.nb[0]) : 0.0;
      ss += xs[k] * xs[k];
    }
    for (int64_t i0 = threadIdx.x + kCached * step; i0 < n; i0 += step) {  // rows longer than the cache
      const double v = load_plain(x.type, rx + i0 * x.nb[0]);
      ss += v * v;
    }
    ss = group_reduce(ss, SumOp{}, scratch);
    const double denom = rms ? ss / static_cast<double>(ne0) : ss;
    const double inv = 1.0 / sqrt(denom + eps);
    char* ry = row_ptr(y, i1, i2, i3);
    const char* rw = kMul ? row_ptr(w, i1 % w.ne[1], i2 % w.ne[2], i3 % w.ne[3]) : nullptr;
    char* rm = kMul ? row_ptr(m, i1, i2, i3) : nullptr;
    float ws[kCached];
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      ws[k] = kMul && i0 < n ? load_plain(w.type, rw + (i0 % w.ne[0]) * w.nb[0]) : 0.0f;
    }
    // Every load of the cached elements happened above, so no store below can feed a load.
    auto put = [&](int64_t i0, double v, float wv) {
      const float yv = static_cast<float>(v * inv);
      store_plain(y.type, ry + i0 * y.nb[0], yv);
      if constexpr (kMul) store_plain(m.type, rm + i0 * m.nb[0], round_to(y.type, yv) * wv);
    };
#pragma unroll
    for (int k = 0; k < kCached; ++k) {
      const int64_t i0 = threadIdx.x + k * step;
      if (i0 < n) put(i0, xs[k], ws[k]);
    }
    for (int64_t i0 = threadIdx.x + kCached * step; i0 < n; i0 += step) {
      const double v = load_plain(x.type, rx + i0 * x.nb[0]);
      put(i0, v, kMul ? load_plain(w.type, rw + (i0 % w.ne[0]) * w.nb[0]) : 0.0f);
    }
  }
}

}  // namespace

void norm(const Ctx& ctx, Tensor& dst) {
  GL_ASSERT(dst.op == Op::RMS_NORM || dst.op == Op::L2_NORM, "cuda norm: not an RMS_NORM/L2_NORM node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(same_shape(a, dst), "cuda norm: dst must match src");
  const RowLaunch l = row_launch(dst.ne[0], nrows(dst), kNormThreads);
  if (l.empty()) return;
  norm_kernel<false><<<l.grid, l.block, 0, ctx.stream>>>(arg(a), arg(dst), l.rows, dst.op == Op::RMS_NORM,
                                                         static_cast<double>(dst.p<NormParams>().eps), {}, {});
}

bool norm_mul(const Ctx& ctx, Tensor& nrm, Tensor& mul) {
  if ((nrm.op != Op::RMS_NORM && nrm.op != Op::L2_NORM) || mul.op != Op::MUL || mul.src[0] != &nrm ||
      mul.src[1] == &nrm)
    return false;
  const Tensor& w = *mul.src[1];
  if (!same_shape(nrm, mul) || !is_plain_type(w.type) || !is_plain_type(mul.type)) return false;
  if (!safe_to_fuse(mul, *nrm.src[0]) || !safe_to_fuse(mul, w)) return false;
  for (int d = 0; d < kMaxDims; ++d)
    if (w.ne[d] <= 0 || mul.ne[d] % w.ne[d] != 0) return false;
  const RowLaunch l = row_launch(nrm.ne[0], nrows(nrm), kNormThreads);
  if (l.empty()) return true;
  norm_kernel<true><<<l.grid, l.block, 0, ctx.stream>>>(arg(*nrm.src[0]), arg(nrm), l.rows, nrm.op == Op::RMS_NORM,
                                                        static_cast<double>(nrm.p<NormParams>().eps), arg(w), arg(mul));
  return true;
}

}  // namespace gl::cuda
