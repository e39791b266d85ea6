// matmul_product.h - one MUL_MAT through the Executor on a named test backend, for the tests that
// compare products bit for bit (matmul_fast_test.cpp, matmul_slab_test.cpp).
//
//   std::vector<float> y = product("cpu", DType::Q4_K, w_bytes, x, k, n, m, Precision::FAST);
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "common/backends.h"
#include "ggml-lite/context.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/ops.h"

namespace gl::test {

// n normal floats from seed.
inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

// sum (got - want)^2 / sum want^2, in double.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return num / den;
}

// w [k, n] (stored as t) times x [k, m] on the named test backend at precision p.
inline std::vector<float> product(std::string_view backend, DType t, const std::vector<char>& w,
                                  const std::vector<float>& x, int64_t k, int64_t n, int64_t m, Precision p) {
  Context ctx;
  Tensor* wt = ctx.new_tensor(t, {k, n}, "w");
  Tensor* xt = ctx.new_tensor(DType::F32, {k, m}, "x");
  wt->flags |= TENSOR_INPUT;
  xt->flags |= TENSOR_INPUT;
  Tensor* y = mul_mat(ctx, wt, xt);
  Graph g = Graph::build({y});
  std::unique_ptr<Backend> be = make_test_backend(backend);
  if (!be) {
    ADD_FAILURE() << "backend " << backend << " is not available";
    return {};
  }
  be->set_precision(p);
  Executor ex({be.get()});
  std::vector<float> out;
  if (Status s = ex.allocate(g); !s) {
    ADD_FAILURE() << "allocate: " << s.error();
    return out;
  }
  ex.set_input(*wt, w.data());
  ex.set_input(*xt, x.data());
  if (Status s = ex.compute(g); !s) {
    ADD_FAILURE() << "compute: " << s.error();
    return out;
  }
  out.resize(static_cast<size_t>(n * m));
  ex.get_output(*y, out.data());
  return out;
}

}  // namespace gl::test
