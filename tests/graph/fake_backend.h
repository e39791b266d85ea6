// fake_backend.h - a backend that computes nothing, for scheduler/executor tests.
//
//   FakeBackend a("a", {gl::Op::SILU});   // declares silu unsupported
//   gl::Scheduler sched({&a, &b});
#pragma once

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ggml-lite/backend.h"

namespace gl::test {

class FakeBuffer : public Buffer {
 public:
  FakeBuffer(Backend& backend, size_t bytes, BufferUsage u) : backend_(backend), mem_(bytes) { usage = u; }
  void* base() override { return mem_.data(); }
  size_t size() const override { return mem_.size(); }
  Backend& backend() override { return backend_; }

 private:
  Backend& backend_;
  std::vector<unsigned char> mem_;
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::string name, std::set<Op> unsupported = {}, bool host = true, size_t alignment = 32)
      : name_(std::move(name)), unsupported_(std::move(unsupported)), host_(host), alignment_(alignment) {}

  std::string_view name() const override { return name_; }
  bool is_host() const override { return host_; }
  size_t alignment() const override { return alignment_; }
  std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage usage) override {
    ++n_buffers;
    return std::make_unique<FakeBuffer>(*this, bytes, usage);
  }
  bool supports(const Tensor& node) const override { return unsupported_.count(node.op) == 0; }
  void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override {
    std::memcpy(static_cast<char*>(t.data) + off, src, n);
  }
  void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) override {
    std::memcpy(dst, static_cast<const char*>(t.data) + off, n);
  }
  Status compute(std::span<Tensor* const> nodes) override {
    ++n_compute_calls;
    n_nodes_computed += static_cast<int>(nodes.size());
    return {};
  }
  Status synchronize() override { return {}; }

  int n_buffers = 0;
  int n_compute_calls = 0;
  int n_nodes_computed = 0;

 private:
  std::string name_;
  std::set<Op> unsupported_;
  bool host_;
  size_t alignment_;
};

}  // namespace gl::test
