// reference.cpp - reference dispatch, and the elementwise, norm and reduction ops.
#include "common/reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/reference_ops.h"
#include "ggml-lite/status.h"

namespace gl::test {
namespace ref {

double apply_binary(Op op, double x, double y) {
  if (op == Op::ADD) return x + y;
  if (op == Op::SUB) return x - y;
  if (op == Op::MUL) return x * y;
  GL_ASSERT(op == Op::DIV, "ref::binary: not a binary op");
  return x / y;
}

RefArray binary(const Tensor& node, Srcs s) {
  const RefArray& a = s[0];
  const RefArray& b = s[1];
  RefArray out(node.ne);
  for_each_index(node.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const double y = b.at(i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);  // b repeats over a
    out.at(i0, i1, i2, i3) = apply_binary(node.op, a.at(i0, i1, i2, i3), y);
  });
  return out;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

double apply_unary(const Tensor& node, double x) {
  switch (node.op) {
    case Op::SCALE: {
      const ScaleParams& p = node.p<ScaleParams>();
      return x * static_cast<double>(p.scale) + static_cast<double>(p.bias);
    }
    case Op::SILU: return silu(x);
    case Op::SIGMOID: return 1.0 / (1.0 + std::exp(-x));
    case Op::SOFTPLUS: return x > 20.0 ? x : std::log1p(std::exp(x));  // torch's threshold
    case Op::EXP: return std::exp(x);
    default: break;  // the other ops never reach this family
  }
  GL_ASSERT(false, "ref::unary: not a unary op");
  return 0.0;
}

RefArray unary(const Tensor& node, Srcs s) {
  RefArray out(node.ne);
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = apply_unary(node, s[0].v[i]);
  return out;
}

RefArray swiglu(const Tensor& node, Srcs s) {
  RefArray out(node.ne);
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = silu(s[0].v[i]) * s[1].v[i];
  return out;
}

RefArray norm(const Tensor& node, Srcs s) {
  const RefArray& x = s[0];
  RefArray out(node.ne);
  const double eps = static_cast<double>(node.p<NormParams>().eps);
  const int64_t n = node.ne[0];
  for (int64_t r = 0; r < x.size() / n; ++r) {
    double sum_sq = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_sq += x.v[r * n + i] * x.v[r * n + i];
    // RMS_NORM divides by the root of the mean square; L2_NORM by the root of the sum (eps on the sum).
    const double denom =
        node.op == Op::RMS_NORM ? std::sqrt(sum_sq / static_cast<double>(n) + eps) : std::sqrt(sum_sq + eps);
    for (int64_t i = 0; i < n; ++i) out.v[r * n + i] = x.v[r * n + i] / denom;
  }
  return out;
}

RefArray argmax(const Tensor& node, Srcs s) {
  const RefArray& x = s[0];
  RefArray out(node.ne);
  const int64_t n = x.ne[0];
  for (int64_t r = 0; r < x.size() / n; ++r) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
      if (x.v[r * n + i] > x.v[r * n + best]) best = i;  // strict: the first maximum wins ties
    out.v[r] = static_cast<double>(best);
  }
  return out;
}

RefArray top_k(const Tensor& node, Srcs s) {
  const RefArray& x = s[0];
  RefArray out(node.ne);
  const int64_t n = x.ne[0];
  const int64_t k = node.p<TopKParams>().k;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t r = 0; r < x.size() / n; ++r) {
    std::iota(idx.begin(), idx.end(), 0);
    const double* row = x.v.data() + r * n;
    // Largest first; stable, so equal values keep the lower index first.
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < k; ++j) out.v[static_cast<size_t>(r * k + j)] = static_cast<double>(idx[j]);
  }
  return out;
}

RefArray sum_rows(const Tensor& node, Srcs s) {
  const RefArray& x = s[0];
  RefArray out(node.ne);
  const int64_t n = x.ne[0];
  for (int64_t r = 0; r < x.size() / n; ++r) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += x.v[r * n + i];
    out.v[r] = sum;
  }
  return out;
}

}  // namespace ref

RefArray reference_eval(const Tensor& node, std::span<const RefArray> srcs) {
  GL_ASSERT(static_cast<int>(srcs.size()) == node.n_srcs(), "reference_eval: one RefArray per source");
  switch (node.op) {
    case Op::NONE: GL_ASSERT(false, "reference_eval: a leaf has no op to evaluate"); break;
    case Op::GET_ROWS: return ref::get_rows(node, srcs);
    case Op::SET_ROWS: return ref::set_rows(node, srcs);
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV: return ref::binary(node, srcs);
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP: return ref::unary(node, srcs);
    case Op::RMS_NORM:
    case Op::L2_NORM: return ref::norm(node, srcs);
    case Op::MUL_MAT: return ref::mul_mat(node, srcs);
    case Op::MUL_MAT_ID: return ref::mul_mat_id(node, srcs);
    case Op::SOFTMAX: return ref::softmax(node, srcs);
    case Op::FLASH_ATTN: return ref::flash_attn(node, srcs);
    case Op::ROPE: return ref::rope(node, srcs);
    case Op::SWIGLU: return ref::swiglu(node, srcs);
    case Op::CONCAT: return ref::concat(node, srcs);
    case Op::VIEW: return ref::view(node, srcs);
    case Op::RESHAPE: return ref::reshape(node, srcs);
    case Op::PERMUTE: return ref::permute(node, srcs);
    case Op::TRANSPOSE: return ref::transpose(node, srcs);
    case Op::CONT: return ref::cont(node, srcs);
    case Op::CPY: return ref::cpy(node, srcs);
    case Op::ARGMAX: return ref::argmax(node, srcs);
    case Op::TOP_K: return ref::top_k(node, srcs);
    case Op::SUM_ROWS: return ref::sum_rows(node, srcs);
    case Op::SSM_CONV: return ref::ssm_conv(node, srcs);
    case Op::GATED_DELTA_RULE: return ref::gated_delta_rule(node, srcs);
  }
  return RefArray(node.ne);
}

}  // namespace gl::test
