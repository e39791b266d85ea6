// simple.cpp - the smallest program using an installed ggml-lite:
// y = rms_norm(x) * w + b on the CPU backend, checked against a host loop (and the
// sampler's argmax from the models library).
#include <ggml-lite/cpu.h>
#include <ggml-lite/executor.h>
#include <ggml-lite/ggml-lite.h>
#include <ggml-lite/models/sampler.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  constexpr int64_t kCols = 8, kRows = 3;
  gl::Context ctx;
  gl::Tensor* x = ctx.new_tensor(gl::DType::F32, {kCols, kRows}, "x");
  gl::Tensor* w = ctx.new_tensor(gl::DType::F32, {kCols}, "w");
  gl::Tensor* b = ctx.new_tensor(gl::DType::F32, {kCols}, "b");
  for (gl::Tensor* t : {x, w, b}) t->flags |= gl::TENSOR_INPUT;
  gl::Tensor* y = gl::add(ctx, gl::mul(ctx, gl::rms_norm(ctx, x, 1e-6f), w), b);

  std::vector<float> xs(kCols * kRows), ws(kCols), bs(kCols), ys(kCols * kRows);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25f * static_cast<float>(i % 7) - 0.6f;
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = 1.0f + 0.1f * static_cast<float>(i);
  for (size_t i = 0; i < bs.size(); ++i) bs[i] = 0.01f * static_cast<float>(i);

  auto cpu = gl::cpu::make_backend({.n_threads = 1});
  gl::Executor ex({cpu.get()});
  gl::Graph g = gl::Graph::build({y});
  if (auto s = ex.allocate(g); !s) return std::fprintf(stderr, "allocate: %s\n", s.error().c_str()), 1;
  ex.set_input(*x, xs.data());
  ex.set_input(*w, ws.data());
  ex.set_input(*b, bs.data());
  if (auto s = ex.compute(g); !s) return std::fprintf(stderr, "compute: %s\n", s.error().c_str()), 1;
  ex.get_output(*y, ys.data());

  double max_err = 0.0;
  for (int64_t r = 0; r < kRows; ++r) {
    double ss = 0.0;
    for (int64_t c = 0; c < kCols; ++c) ss += double(xs[r * kCols + c]) * xs[r * kCols + c];
    const double inv = 1.0 / std::sqrt(ss / kCols + 1e-6);
    for (int64_t c = 0; c < kCols; ++c) {
      const double want = xs[r * kCols + c] * inv * ws[c] + bs[c];
      max_err = std::fmax(max_err, std::fabs(want - ys[r * kCols + c]));
    }
  }
  std::printf("simple: y[0] = %.6f, largest at %d, max |err| = %.3g over %lld values\n", ys[0], gl::argmax(ys), max_err,
              static_cast<long long>(ys.size()));
  return max_err < 1e-5 ? 0 : 1;
}
