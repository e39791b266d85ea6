// fused_graph.h - one small graph computed on a named backend with CUDA fusion on or off, for the
// tests that compare a fused kernel with its unfused nodes bit for bit (gdn_gates_test.cpp,
// gdn_input_path_test.cpp, gdn_output_path_test.cpp, qk_norm_rope_test.cpp).
//
//   Results r = run_graph("cuda", /*fusion=*/false, Precision::EXACT, values, build);
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/backends.h"
#include "ggml-lite/context.h"
#include "ggml-lite/diag.h"
#include "ggml-lite/executor.h"

namespace gl::test {

// The outputs' values after one compute, in the order build returned them.
using Results = std::vector<std::vector<float>>;

// A backend with fusion on or off (GL_CUDA_FUSION=0 is read when the backend is made).
inline std::unique_ptr<Backend> backend_with(std::string_view name, bool fusion) {
  const std::string var(diag_env_name(Diag::CUDA_FUSION_OFF));
  if (!fusion) setenv(var.c_str(), "0", 1);
  std::unique_ptr<Backend> be = make_test_backend(name);
  if (!fusion) unsetenv(var.c_str());
  return be;
}

// An input tensor of build's graph; its value is values[i] for the i-th input made.
inline Tensor* graph_input(Context& ctx, std::vector<Tensor*>& inputs, DType t, std::initializer_list<int64_t> ne,
                           const char* name) {
  Tensor* x = ctx.new_tensor(t, ne, name);
  x->flags |= TENSOR_INPUT;
  inputs.push_back(x);
  return x;
}

// Builds the outputs (F32) from inputs (values given as bytes), computes at precision p, and reads
// every output back.
template <class Build>
Results run_graph(std::string_view backend, bool fusion, Precision p, const std::vector<std::vector<char>>& values,
                  Build build) {
  Context ctx;
  std::vector<Tensor*> inputs;
  std::vector<Tensor*> outputs = build(ctx, inputs);
  Graph graph = Graph::build(outputs);
  std::unique_ptr<Backend> be = backend_with(backend, fusion);
  Results out;
  if (!be) {
    ADD_FAILURE() << "backend " << backend << " is not available";
    return out;
  }
  be->set_precision(p);
  Executor ex({be.get()});
  if (Status s = ex.allocate(graph); !s) {
    ADD_FAILURE() << "allocate: " << s.error();
    return out;
  }
  for (size_t i = 0; i < inputs.size(); ++i) ex.set_input(*inputs[i], values[i].data());
  if (Status s = ex.compute(graph); !s) {
    ADD_FAILURE() << "compute: " << s.error();
    return out;
  }
  for (Tensor* t : outputs) {
    out.emplace_back(static_cast<size_t>(nelements(*t)));
    ex.get_output(*t, out.back().data());
  }
  return out;
}

// The bytes of floats, as run_graph takes an F32 input's value.
inline std::vector<char> as_bytes(const std::vector<float>& v) {
  const char* p = reinterpret_cast<const char*>(v.data());
  return {p, p + v.size() * sizeof(float)};
}

}  // namespace gl::test
