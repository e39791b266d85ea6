// norm.cpp - CPU reference for per-row RMS and L2 norms.
//
// The sum of squares is accumulated in double: rows are long (hidden size 4096+)
// and this is the reference other backends are measured against, so its own
// rounding should be negligible. The whole row is reduced before any element is
// written, so dst may alias src[0].
#include <cmath>
#include <vector>

#include "ggml-lite/status.h"
#include "kernels.h"
#include "parallel.h"
#include "rows.h"
#include "team.h"

namespace gl::cpu {
namespace {

double sum_squares(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

// y = x * inv for one row; y may alias x.
void scale_row(const float* x, float* y, int64_t n, double inv) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * inv);
}

}  // namespace

// RMS_NORM: x / sqrt(mean(x^2) + eps); L2_NORM: x / sqrt(sum(x^2) + eps).
void norm(Tensor& dst) {
  GL_ASSERT(dst.op == Op::RMS_NORM || dst.op == Op::L2_NORM, "norm: not an RMS_NORM/L2_NORM node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(same_shape(a, dst), "norm: dst must match src");
  const bool rms = dst.op == Op::RMS_NORM;
  const double eps = static_cast<double>(dst.p<NormParams>().eps);
  const int64_t n = dst.ne[0];
  const int64_t rows = nrows(dst);
  const bool fast = is_f32_rows(a) && is_f32_rows(dst);
  parallel_for(rows, rows * n >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> x(fast ? 0 : n);
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(dst, r, i1, i2, i3);
      const float* in = reinterpret_cast<const float*>(elem_ptr(a, 0, i1, i2, i3));
      float* out = reinterpret_cast<float*>(elem_ptr(dst, 0, i1, i2, i3));
      if (!fast) {
        load_row(a, i1, i2, i3, x.data());
        in = out = x.data();
      }
      const double ss = sum_squares(in, n);
      const double denom = rms ? ss / static_cast<double>(n) : ss;
      scale_row(in, out, n, 1.0 / std::sqrt(denom + eps));
      if (!fast) store_row(dst, i1, i2, i3, x.data());
    }
  });
}

}  // namespace gl::cpu
