// reduce.cpp - CPU reference for per-row reductions and selections: ARGMAX, TOP_K, SUM_ROWS.
//
// Ties are broken towards the lower index so that every backend can agree on the
// exact indices (greedy sampling and expert routing depend on them). NaN never
// wins: ARGMAX skips it and TOP_K ranks it as -inf, which also keeps the sort
// comparator a strict weak order. SUM_ROWS accumulates in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ggml-lite/status.h"
#include "kernels.h"
#include "parallel.h"
#include "rows.h"
#include "team.h"

namespace gl::cpu {
namespace {

// Row (i1, i2, i3) of t as floats: a pointer into t for dense F32 rows, else loaded into buf.
const float* row_f32(const Tensor& t, int64_t i1, int64_t i2, int64_t i3, std::vector<float>& buf) {
  if (is_f32_rows(t)) return reinterpret_cast<const float*>(elem_ptr(t, 0, i1, i2, i3));
  buf.resize(static_cast<size_t>(t.ne[0]));
  load_row(t, i1, i2, i3, buf.data());
  return buf.data();
}

int32_t argmax_row(const float* x, int64_t n) {
  int64_t best = 0;
  float best_v = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > best_v) {  // strict: the first maximum wins; NaN never compares greater
      best_v = x[i];
      best = i;
    }
  return static_cast<int32_t>(best);
}

// idx[0..k) = indices of the k largest of x (NaN ranked as -inf), largest first, lower index first on ties.
void top_k_row(const float* x, int64_t n, int64_t k, std::vector<float>& v, std::vector<int32_t>& idx) {
  v.resize(static_cast<size_t>(n));
  idx.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::isnan(x[i]) ? -std::numeric_limits<float>::infinity() : x[i];
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&v](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
}

}  // namespace

// a [n, ne1, ne2, ne3] -> I32 [ne1, ne2, ne3]
void argmax(Tensor& dst) {
  GL_ASSERT(dst.op == Op::ARGMAX && dst.type == DType::I32, "argmax: not an I32 ARGMAX node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(dst.ne[0] == a.ne[1] && dst.ne[1] == a.ne[2] && dst.ne[2] == a.ne[3],
            "argmax: dst must be [ne1, ne2, ne3]");
  const int64_t rows = nrows(a);
  parallel_for(rows, nelements(a) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> buf;
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(a, r, i1, i2, i3);
      const int32_t best = argmax_row(row_f32(a, i1, i2, i3, buf), a.ne[0]);
      *reinterpret_cast<int32_t*>(elem_ptr(dst, i1, i2, i3, 0)) = best;
    }
  });
}

// a [n, ne1, ne2, ne3] -> I32 [k, ne1, ne2, ne3]
void top_k(Tensor& dst) {
  GL_ASSERT(dst.op == Op::TOP_K && dst.type == DType::I32, "top_k: not an I32 TOP_K node");
  const Tensor& a = *dst.src[0];
  const int64_t k = dst.p<TopKParams>().k;
  GL_ASSERT(k >= 1 && k <= a.ne[0] && dst.ne[0] == k, "top_k: k must be in [1, ne0] and equal dst.ne[0]");
  GL_ASSERT(dst.ne[1] == a.ne[1] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3], "top_k: dst batch dims differ");
  const int64_t rows = nrows(a);
  parallel_for(rows, nelements(a) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> buf, v;
    std::vector<int32_t> idx;
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(a, r, i1, i2, i3);
      top_k_row(row_f32(a, i1, i2, i3, buf), a.ne[0], k, v, idx);
      for (int64_t j = 0; j < k; ++j) *reinterpret_cast<int32_t*>(elem_ptr(dst, j, i1, i2, i3)) = idx[j];
    }
  });
}

// a [n, ne1, ne2, ne3] -> [1, ne1, ne2, ne3] in dst.type (F32 from the builder)
void sum_rows(Tensor& dst) {
  GL_ASSERT(dst.op == Op::SUM_ROWS, "sum_rows: not a SUM_ROWS node");
  const Tensor& a = *dst.src[0];
  GL_ASSERT(dst.ne[0] == 1 && dst.ne[1] == a.ne[1] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3],
            "sum_rows: dst must be [1, ne1, ne2, ne3]");
  const int64_t rows = nrows(a);
  parallel_for(rows, nelements(a) >= kParallelMinElems, [&](int64_t r_begin, int64_t r_end) {
    std::vector<float> buf;
    for (int64_t r = r_begin; r < r_end; ++r) {
      int64_t i1, i2, i3;
      unravel_row(a, r, i1, i2, i3);
      const float* x = row_f32(a, i1, i2, i3, buf);
      double s = 0.0;
      for (int64_t i = 0; i < a.ne[0]; ++i) s += static_cast<double>(x[i]);
      const float v = static_cast<float>(s);
      store_row(dst, i1, i2, i3, &v);
    }
  });
}

}  // namespace gl::cpu
