// attn_graph.h - one FLASH_ATTN through the Executor on a given backend, for the tests that compare
// attention outputs bit for bit (attn_exact_test.cpp, attn_rows_test.cpp).
//
//   std::vector<float> o = attend(*backend, {.d = 64, .heads = 4, .kv_heads = 2, .tokens = 1, .keys = 300},
//                                 DType::F16, q, k, v, mask);
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ggml-lite/context.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/ops.h"

namespace gl::test {

struct AttnDims {
  int64_t d, heads, kv_heads, tokens, keys;  // Dk = Dv = d
};

// flash_attn(q [d, heads, tokens], K and V [d, kv_heads, keys] stored as kv_type, F32 mask
// [keys, tokens], scale 1 / sqrt(d)) on be; empty (and a test failure) if the graph does not run.
inline std::vector<float> attend(Backend& be, const AttnDims& s, DType kv_type, const std::vector<float>& q,
                                 const std::vector<float>& k, const std::vector<float>& v,
                                 const std::vector<float>& mask) {
  Context ctx;
  Tensor* qt = ctx.new_tensor(DType::F32, {s.d, s.heads, s.tokens}, "q");
  Tensor* kt = ctx.new_tensor(kv_type, {s.d, s.kv_heads, s.keys}, "k");
  Tensor* vt = ctx.new_tensor(kv_type, {s.d, s.kv_heads, s.keys}, "v");
  Tensor* mt = ctx.new_tensor(DType::F32, {s.keys, s.tokens}, "mask");
  for (Tensor* t : {qt, kt, vt, mt}) t->flags |= TENSOR_INPUT;
  Tensor* o = flash_attn(ctx, qt, kt, vt, mt, 1.0f / std::sqrt(static_cast<float>(s.d)));
  Graph g = Graph::build({o});
  Executor ex({&be});
  if (Status st = ex.allocate(g); !st) {
    ADD_FAILURE() << "allocate: " << st.error();
    return {};
  }
  auto put = [&](Tensor* t, const std::vector<float>& x) {
    std::vector<char> bytes(nbytes(*t));
    from_float(t->type, x.data(), bytes.data(), static_cast<int64_t>(x.size()));
    ex.set_input(*t, bytes.data());
  };
  ex.set_input(*qt, q.data());
  put(kt, k);
  put(vt, v);
  ex.set_input(*mt, mask.data());
  if (Status st = ex.compute(g); !st) {
    ADD_FAILURE() << "compute: " << st.error();
    return {};
  }
  std::vector<float> out(static_cast<size_t>(s.d * s.heads * s.tokens));
  ex.get_output(*o, out.data());
  return out;
}

}  // namespace gl::test
