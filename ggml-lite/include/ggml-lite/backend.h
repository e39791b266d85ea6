// backend.h - the seam between graphs and devices.
//
//   std::unique_ptr<gl::Backend> cpu = gl::cpu::make_backend({.n_threads = 2});
//   auto buf = cpu->alloc_buffer(1 << 20, gl::BufferUsage::COMPUTE);
//   cpu->set_tensor(*x, host_data, 0, gl::nbytes(*x));
//   GL_TRY(cpu->compute(graph, nodes));   // one split: nodes placed on this backend
//
// A backend computes whole node lists (a split) so it can fuse and capture;
// it never sees a model. Buffers are raw device memory; the planner places
// tensors inside them.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"

namespace gl {

enum class BufferUsage : uint8_t { ANY, WEIGHTS, COMPUTE };

class Backend;

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* base() = 0;
  virtual size_t size() const = 0;
  virtual Backend& backend() = 0;
  BufferUsage usage = BufferUsage::ANY;
  // Places t at byte offset off of this buffer (sets data and buffer).
  void bind(Tensor& t, size_t off) {
    t.data = static_cast<char*>(base()) + off;
    t.buffer = this;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Host backends can read and write tensor data directly.
  virtual bool is_host() const = 0;
  virtual size_t alignment() const = 0;
  virtual std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage usage) = 0;
  // Whether this backend can compute the node (op, dtypes, shapes).
  virtual bool supports(const Tensor& node) const = 0;
  // Bytes [off, off+n) of t's memory; t must live in this backend's buffer.
  virtual void set_tensor(Tensor& t, const void* src, size_t off, size_t n) = 0;
  virtual void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) = 0;
  // n bytes from src (at src_off) to dst (at dst_off), both in this backend's memory, ordered
  // after the work queued so far. The default goes through the host; devices copy in place.
  virtual void copy_tensor(const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off, size_t n);
  // Computes the nodes in order (a split); view nodes are skipped.
  virtual Status compute(std::span<Tensor* const> nodes) = 0;
  virtual void synchronize() = 0;
};

}  // namespace gl
