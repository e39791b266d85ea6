// backend.h - the seam between graphs and devices.
//
//   std::unique_ptr<gl::Backend> cpu = gl::cpu::make_backend({.n_threads = 2});
//   auto buf = cpu->alloc_buffer(1 << 20, gl::BufferUsage::COMPUTE);
//   buf->bind(*x, 0);
//   cpu->set_tensor(*x, host_data, 0, gl::nbytes(*x));
//   GL_TRY(cpu->compute(nodes));   // one split: nodes placed on this backend, in order
//   cpu->set_precision(gl::Precision::FAST);   // a per-run choice (default EXACT)
//   std::unique_ptr<gl::Event> done = cpu->make_event();
//   GL_TRY(cpu->record(*done));          // marks the work queued so far
//   GL_TRY(other->wait(*done));          // other's later work starts after it (a host wait on the CPU)
//   GL_TRY(other->copy_from(*cpu, *x, 0, *y, 0, gl::nbytes(*x)));   // x (on cpu) -> y (on other)
//   GL_TRY(cpu->synchronize());          // a device fault surfaces here as a Status, not an abort
//
// A backend computes whole node lists (a split) so it can fuse and capture;
// it never sees a model. Buffers are raw device memory; the planner places
// tensors inside them. Usually an Executor (executor.h) drives all of this.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"

namespace gl {

enum class BufferUsage : uint8_t { ANY, WEIGHTS, COMPUTE };

// How a run trades accuracy for speed where a backend has the choice. EXACT: results as close to
// the CPU reference as the backend can get (CUDA: 16-bit GEMMs split the activations into two
// rounded halves, two GEMMs). FAST: one rounding of the activations, one GEMM (faster prefill,
// ~1e-2 relative logit error with BF16 weights); on the CPU, quantized weights multiply activation
// rows quantized to int8 blocks (integer dot products). Backends without the choice are always exact.
enum class Precision : uint8_t { EXACT, FAST };
std::string_view precision_name(Precision p);                      // "exact", "fast"
std::optional<Precision> precision_from_name(std::string_view s);  // inverse; nullopt if unknown

class Backend;

// A point in one backend's queue of work. Backend::record() sets it; Backend::wait() on any
// backend (of the same kind or not) orders later work after it. Backends that compute
// synchronously (the CPU) record nothing: the work before the point is done when record returns.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the host until the work recorded before the event is done; a device fault in that
  // work comes back here.
  virtual Status host_wait() const { return {}; }
};

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
  // Whether this backend can compute the node (op, dtypes, shapes). The scheduler places a node
  // no given backend supports on the CPU, so a kernel never sees a node its backend declined.
  virtual bool supports(const Tensor& node) const = 0;
  // Scratch bytes the backend's kernel for node needs beside the node's output (split-K
  // partials, routing tables). The memory planner reserves them in this backend's arena for the
  // node's step and sets node.workspace; kernels never allocate device memory themselves.
  virtual size_t workspace_size(const Tensor& /*node*/) const { return 0; }
  // Nodes for which this names the same tensor get one scratch block (the largest of their
  // workspace_size()), held from the first of them to the last in graph order, so that what the
  // first leaves there the later ones may read instead of redoing it (CUDA: a GEMV input quantized
  // once for the products that share it). nullptr: a block of the node's own.
  virtual const Tensor* workspace_share(const Tensor& /*node*/) const { return nullptr; }
  // Bytes [off, off+n) of t's memory; t must live in this backend's buffer.
  virtual void set_tensor(Tensor& t, const void* src, size_t off, size_t n) = 0;
  virtual void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) = 0;
  // n bytes from src (at src_off) to dst (at dst_off), both in this backend's memory, ordered
  // after the work queued so far. The default goes through the host; devices copy in place.
  virtual void copy_tensor(const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off, size_t n);
  // n bytes from src (at src_off, in src_backend's memory) to dst (at dst_off, in this backend's
  // memory), queued on this backend after the work queued so far. The caller orders it after
  // src's producer first (wait() on an event recorded on src_backend). Devices of one kind copy
  // device to device (CUDA: peer copy); the default goes through the host, which waits for
  // src_backend. A null src_backend is plain host memory.
  virtual Status copy_from(Backend* src_backend, const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off,
                           size_t n);
  // Computes the nodes in order (a split); view nodes are skipped.
  virtual Status compute(std::span<Tensor* const> nodes) = 0;
  // Waits for all queued work. A device fault in it comes back here, naming the last split.
  virtual Status synchronize() = 0;
  // Events (see Event). The defaults suit a backend that computes synchronously: an event that
  // is reached once recorded, and a wait that waits on the host.
  virtual std::unique_ptr<Event> make_event() { return std::make_unique<Event>(); }
  virtual Status record(Event& /*e*/) { return {}; }
  virtual Status wait(const Event& e) { return e.host_wait(); }
  // The precision of the splits computed from now on (see Precision). The default ignores it:
  // the backend has one, exact, path.
  virtual void set_precision(Precision) {}
  virtual Precision precision() const { return Precision::EXACT; }
};

}  // namespace gl
