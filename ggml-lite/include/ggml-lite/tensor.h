// tensor.h - tensor metadata: dtype, shape, strides, producing op, data pointer.
//
//   gl::Tensor* t = ctx.new_tensor(gl::DType::F16, {4096, 32}, "wq");
//   t->ne[0] == 4096; t->nb[1] == 4096 * 2; gl::nbytes(*t) == 4096 * 32 * 2;
//
// ne[0] is the innermost dimension (GGUF/ggml order, reverse of PyTorch).
// nb[i] is the byte stride of dimension i; for quantized types nb[0] is the
// block size in bytes and nb[1] the row size. A tensor has no data until the
// memory planner or a weight buffer assigns it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ggml-lite/dtype.h"
#include "ggml-lite/ops.h"

namespace gl {

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrcs = 6;
inline constexpr size_t kMaxName = 64;  // GGUF limit, including the NUL

class Backend;
class Buffer;

enum TensorFlag : uint32_t {
  TENSOR_INPUT = 1u << 0,   // written by the host before compute; planned, never reused
  TENSOR_OUTPUT = 1u << 1,  // read by the host after compute; never freed or reused
  TENSOR_WEIGHT = 1u << 2,  // persistent data owned outside the graph (weights, caches)
};

struct Tensor {
  DType type = DType::F32;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  std::array<size_t, kMaxDims> nb{0, 0, 0, 0};

  Op op = Op::NONE;
  OpParams params;
  std::array<Tensor*, kMaxSrcs> src{};

  Tensor* view_src = nullptr;  // root tensor that owns the memory (never itself a view)
  size_t view_offs = 0;        // bytes from view_src's start

  uint32_t flags = 0;
  std::string name;

  void* data = nullptr;       // host-visible or device pointer, set by planner/loader
  Buffer* buffer = nullptr;   // buffer that holds data
  int backend_id = -1;        // set by the scheduler
  int64_t arena_offset = -1;  // set by the memory planner (-1: not in an arena)
  // Scratch of workspace_size(node) bytes that the node's backend kernel may use while the node
  // runs (Backend::workspace_size); set by the memory planner, nullptr when none was declared.
  void* workspace = nullptr;

  int n_srcs() const {
    int n = 0;
    while (n < kMaxSrcs && src[n]) ++n;
    return n;
  }
  bool has_flag(TensorFlag f) const { return (flags & f) != 0; }
  template <class P>
  const P& p() const {
    return std::get<P>(params);
  }
};

int64_t nelements(const Tensor& t);
int64_t nrows(const Tensor& t);  // ne[1] * ne[2] * ne[3]
// Bytes spanned by the tensor's memory (for strided views: last byte + 1).
size_t nbytes(const Tensor& t);
int n_dims(const Tensor& t);  // highest dim with ne > 1, plus one (at least 1)
bool is_contiguous(const Tensor& t);
bool is_transposed(const Tensor& t);  // nb[0] > nb[1]
bool same_shape(const Tensor& a, const Tensor& b);
// b broadcasts to a: a.ne[i] % b.ne[i] == 0 for all i.
bool can_broadcast(const Tensor& b, const Tensor& a);
// Fills nb for a contiguous layout of t.type and t.ne.
void set_contiguous_strides(Tensor& t);
// The tensor that owns t's memory (t itself if not a view).
inline const Tensor& root(const Tensor& t) { return t.view_src ? *t.view_src : t; }
// "[4096, 32]" style shape text.
std::string shape_str(const Tensor& t);
// Byte address of element (i0, i1, i2, i3); t.data must be set.
inline char* elem_ptr(const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return static_cast<char*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

}  // namespace gl
