// context.h - owns tensor metadata for one graph or one model.
//
//   gl::Context ctx;
//   gl::Tensor* x = ctx.new_tensor(gl::DType::F32, {64, 8}, "x");
//   x->flags |= gl::TENSOR_INPUT;
//
// Tensors are never freed individually; their addresses are stable for the
// Context's lifetime. No data is allocated here.
#pragma once

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>

#include "ggml-lite/tensor.h"

namespace gl {

class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // ne lists 1 to 4 sizes, innermost first.
  Tensor* new_tensor(DType type, std::initializer_list<int64_t> ne, std::string_view name = {});
  Tensor* new_tensor(DType type, const std::array<int64_t, kMaxDims>& ne, std::string_view name = {});
  // A tensor recorded by a builder: result metadata plus op, params and sources.
  Tensor* new_op(Op op, DType type, const std::array<int64_t, kMaxDims>& ne, OpParams params,
                 std::initializer_list<Tensor*> srcs);
  // A view of a's memory (root-normalised) with the given shape and strides.
  Tensor* new_view(Op op, Tensor* a, const std::array<int64_t, kMaxDims>& ne, const std::array<size_t, kMaxDims>& nb,
                   size_t offset, OpParams params);

  size_t size() const { return tensors_.size(); }
  auto begin() { return tensors_.begin(); }
  auto end() { return tensors_.end(); }
  // First tensor with this name, or nullptr.
  Tensor* find(std::string_view name);

 private:
  std::deque<Tensor> tensors_;
};

// Names t ("fmt-like" concatenation is done by the caller) and returns it.
Tensor* set_name(Tensor* t, std::string_view name);

}  // namespace gl
