// context.cpp - tensor metadata ownership.
#include "ggml-lite/context.h"

#include <algorithm>

#include "ggml-lite/status.h"

namespace gl {

Tensor* set_name(Tensor* t, std::string_view name) {
  GL_ASSERT(name.size() < kMaxName, "tensor name must be shorter than 64 bytes");
  t->name.assign(name);
  return t;
}

Tensor* Context::new_tensor(DType type, const std::array<int64_t, kMaxDims>& ne, std::string_view name) {
  const int64_t blck = dtype_traits(type).block_size;
  GL_ASSERT(ne[0] % blck == 0, "ne[0] must be a multiple of the dtype's block size");
  for (int64_t n : ne) GL_ASSERT(n >= 0, "negative dimension");
  Tensor& t = tensors_.emplace_back();
  t.type = type;
  t.ne = ne;
  set_contiguous_strides(t);
  set_name(&t, name);
  return &t;
}

Tensor* Context::new_tensor(DType type, std::initializer_list<int64_t> ne, std::string_view name) {
  GL_ASSERT(ne.size() >= 1 && ne.size() <= kMaxDims, "a tensor has 1 to 4 dims");
  std::array<int64_t, kMaxDims> full{1, 1, 1, 1};
  std::copy(ne.begin(), ne.end(), full.begin());
  return new_tensor(type, full, name);
}

Tensor* Context::new_op(Op op, DType type, const std::array<int64_t, kMaxDims>& ne, OpParams params,
                        std::initializer_list<Tensor*> srcs) {
  GL_ASSERT(srcs.size() <= static_cast<size_t>(kMaxSrcs), "too many sources");
  Tensor* t = new_tensor(type, ne);
  t->op = op;
  t->params = params;
  std::copy(srcs.begin(), srcs.end(), t->src.begin());
  return t;
}

Tensor* Context::new_view(Op op, Tensor* a, const std::array<int64_t, kMaxDims>& ne,
                          const std::array<size_t, kMaxDims>& nb, size_t offset, OpParams params) {
  Tensor& t = tensors_.emplace_back();
  t.type = a->type;
  t.ne = ne;
  t.nb = nb;
  t.op = op;
  t.params = params;
  t.src[0] = a;
  t.view_src = a->view_src ? a->view_src : a;
  t.view_offs = a->view_offs + offset;
  return &t;
}

Tensor* Context::find(std::string_view name) {
  for (Tensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace gl
