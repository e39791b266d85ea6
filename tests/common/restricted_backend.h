// restricted_backend.h - a test backend that forwards to another but declines some ops.
//
//   test::RestrictedBackend a(cpu::make_backend(), {Op::SILU}, /*host=*/false);  // pretends to be a device
//   Executor ex({&a, cpu.get()});   // SILU falls back to the CPU with staged copies
//   a.declines = [](const Tensor& n) { return n.op == Op::MUL_MAT && n.src[0]->type == DType::F16; };
//   std::vector<std::string> log;
//   a.log = &log;                     // "record", "wait", "host_wait", "copy_from", "compute", in order
//   a.fault_after_compute = true;     // later splits "fault" on the device (see below)
//
// Its buffers are its own (tensors in them belong to it, not to the inner backend), it can claim
// to be a device backend (is_host() false) and a different alignment, and it counts transfers.
// An injected fault behaves as a device's would: compute() queues the split and reports nothing;
// the fault surfaces at the next synchronize() or host wait on an event recorded after it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ggml-lite/backend.h"

namespace gl::test {

class RestrictedBackend final : public Backend {
 public:
  RestrictedBackend(std::unique_ptr<Backend> inner, std::set<Op> unsupported, std::optional<bool> host = {},
                    size_t alignment = 0)
      : inner_(std::move(inner)),
        unsupported_(std::move(unsupported)),
        host_(host.value_or(inner_->is_host())),
        alignment_(alignment ? alignment : inner_->alignment()),
        name_("restricted-" + std::string(inner_->name())) {}
  std::string_view name() const override { return name_; }
  bool is_host() const override { return host_; }
  size_t alignment() const override { return alignment_; }
  // Allocations above bytes fail (return nullptr), as on a device that is out of memory.
  void limit_allocations(size_t bytes) { max_alloc_ = bytes; }
  std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage usage) override {
    if (bytes > max_alloc_) return nullptr;
    std::unique_ptr<Buffer> b = inner_->alloc_buffer(bytes, usage);
    return b ? std::make_unique<Owned>(*this, std::move(b)) : nullptr;
  }
  bool supports(const Tensor& node) const override {
    return unsupported_.count(node.op) == 0 && !(declines && declines(node)) && inner_->supports(node);
  }
  size_t workspace_size(const Tensor& node) const override { return inner_->workspace_size(node); }
  void set_precision(Precision p) override { inner_->set_precision(p); }
  Precision precision() const override { return inner_->precision(); }
  // The inner backend may check that tensors live in its own buffers: show it the bare memory.
  void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override {
    ++n_transfers;
    Tensor bare = t;
    bare.buffer = nullptr;
    inner_->set_tensor(bare, src, off, n);
  }
  void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) override {
    ++n_transfers;
    Tensor bare = t;
    bare.buffer = nullptr;
    inner_->get_tensor(bare, dst, off, n);
  }
  Status compute(std::span<Tensor* const> nodes) override {
    for (const Tensor* n : nodes) {
      if (!is_view_op(n->op) && !supports(*n)) return Error(name_ + ": asked to compute " + n->name);
    }
    note("compute");
    GL_TRY(inner_->compute(nodes));
    if (fault_after_compute && !nodes.empty())
      fault_ = name_ + ": device fault after node '" + nodes.back()->name + "'";
    return {};
  }
  Status synchronize() override {
    if (!fault_.empty()) return Error(fault_);  // sticky, as a faulted device context is
    return inner_->synchronize();
  }
  std::unique_ptr<Event> make_event() override { return std::make_unique<LoggedEvent>(*this, inner_->make_event()); }
  Status record(Event& e) override {
    note("record");
    auto* le = dynamic_cast<LoggedEvent*>(&e);
    GL_ASSERT(le != nullptr, "restricted: record() of an event another backend made");
    le->fault = fault_;
    return inner_->record(*le->inner);
  }
  // Queued on the "device" (the inner backend: a host wait on the CPU, a stream wait on CUDA).
  Status wait(const Event& e) override {
    note("wait");
    const auto* le = dynamic_cast<const LoggedEvent*>(&e);
    return inner_->wait(le ? *le->inner : e);
  }
  Status copy_from(Backend* src_backend, const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off,
                   size_t n) override {
    note("copy_from");
    return Backend::copy_from(src_backend, src, src_off, dst, dst_off, n);
  }

  Backend& inner() { return *inner_; }

  int n_transfers = 0;
  // Nodes declined beyond the unsupported ops, e.g. one (op, dtype) pair.
  std::function<bool(const Tensor&)> declines;
  std::vector<std::string>* log = nullptr;  // when set, the calls above are appended in order
  bool fault_after_compute = false;

 private:
  // An event of this backend around one of the inner backend's: host_wait() reports the fault
  // pending when it was recorded.
  class LoggedEvent final : public Event {
   public:
    LoggedEvent(RestrictedBackend& b, std::unique_ptr<Event> in) : inner(std::move(in)), b_(b) {}
    Status host_wait() const override {
      b_.note("host_wait");
      if (!fault.empty()) return Error(fault);
      return inner->host_wait();
    }
    std::unique_ptr<Event> inner;
    std::string fault;

   private:
    RestrictedBackend& b_;
  };

  void note(const char* what) {
    if (log) log->emplace_back(what);
  }

  class Owned final : public Buffer {
   public:
    Owned(Backend& owner, std::unique_ptr<Buffer> inner) : owner_(owner), inner_(std::move(inner)) {
      usage = inner_->usage;
    }
    void* base() override { return inner_->base(); }
    size_t size() const override { return inner_->size(); }
    Backend& backend() override { return owner_; }

   private:
    Backend& owner_;
    std::unique_ptr<Buffer> inner_;
  };

  std::unique_ptr<Backend> inner_;
  std::set<Op> unsupported_;
  bool host_;
  size_t alignment_;
  size_t max_alloc_ = SIZE_MAX;
  std::string name_;
  std::string fault_;  // pending injected fault, empty when none
};

// n floats uniform in [-2, 2), seeded.
inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace gl::test
