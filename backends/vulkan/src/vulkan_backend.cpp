// vulkan_backend.cpp - the Vulkan backend: buffers, transfers, events and the op dispatch (one
// switch over Op; a split is recorded into one command buffer and submitted without waiting).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "check.h"
#include "device.h"
#include "ggml-lite/diag.h"
#include "ggml-lite/vulkan.h"
#include "ops/ops.h"
#include "pipelines.h"
#include "profiler.h"
#include "queue.h"
#include "recorder.h"
#include "split_cache.h"

namespace gl::vulkan {
namespace {

// Tensors sit on a 256-byte grid (every device's minStorageBufferOffsetAlignment divides it).
constexpr size_t kAlignment = 256;
constexpr size_t kStagingBytes = size_t{16} << 20;

std::string describe(const Tensor& node) { return "node '" + node.name + "' (" + std::string(op_name(node.op)) + ")"; }

// A void entry point (set_tensor, get_tensor) has no Status to return a failed call in.
[[noreturn]] void abort_on(const VkFault& f, const char* where) {
  std::fprintf(stderr, "vulkan: %s: %s\n", where, f.what.c_str());
  std::abort();
}

// Nodes at the front of nodes recorded as one dispatch (0: none): a layer's norm group, or a run
// of elementwise nodes.
size_t fused_nodes(Recorder& rec, std::span<Tensor* const> nodes) {
  if (const size_t n = norm_fused(rec, nodes)) return n;
  return elementwise_chain(rec, nodes);
}

// The one dispatch switch: no default, so a new op fails to compile here.
void record_node(Recorder& rec, const Tensor& node) {
  switch (node.op) {
    case Op::NONE:
    case Op::VIEW:
    case Op::RESHAPE:
    case Op::PERMUTE:
    case Op::TRANSPOSE: return;
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV:
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP:
    case Op::SWIGLU: elementwise(rec, node); return;
    case Op::RMS_NORM:
    case Op::L2_NORM: norm(rec, node); return;
    case Op::SOFTMAX: softmax(rec, node); return;
    case Op::ROPE: rope(rec, node); return;
    case Op::GET_ROWS: get_rows(rec, node); return;
    case Op::SET_ROWS: set_rows(rec, node); return;
    case Op::CONCAT:
    case Op::CONT:
    case Op::CPY: copy(rec, node); return;
    case Op::ARGMAX:
    case Op::TOP_K:
    case Op::SUM_ROWS: reduce(rec, node); return;
    case Op::SSM_CONV: ssm_conv(rec, node); return;
    case Op::MUL_MAT:
    case Op::MUL_MAT_ID: mul_mat(rec, node); return;
    case Op::GATED_DELTA_RULE: gated_delta_rule(rec, node); return;
    case Op::FLASH_ATTN: flash_attn(rec, node); return;
  }
  throw VkFault{"no Vulkan kernel for this op"};  // not reached: every op returns above
}

// Per op family, the family's own answer (ops/ops.h); the ops without a shader yet are declined.
bool supports_node(const Tensor& node) {
  switch (node.op) {
    case Op::NONE:
    case Op::VIEW:
    case Op::RESHAPE:
    case Op::PERMUTE:
    case Op::TRANSPOSE: return true;
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV:
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP:
    case Op::SWIGLU: return supports_elementwise(node);
    case Op::RMS_NORM:
    case Op::L2_NORM:
    case Op::SOFTMAX: return supports_norm(node);
    case Op::ROPE: return supports_rope(node);
    case Op::GET_ROWS:
    case Op::SET_ROWS:
    case Op::CONCAT:
    case Op::CONT:
    case Op::CPY: return supports_layout(node);
    case Op::ARGMAX:
    case Op::TOP_K:
    case Op::SUM_ROWS: return supports_reduce(node);
    case Op::MUL_MAT:
    case Op::MUL_MAT_ID: return supports_matmul(node);
    case Op::FLASH_ATTN: return true;  // VulkanBackend::supports: it depends on the device
    case Op::SSM_CONV:
    case Op::GATED_DELTA_RULE: return supports_ssm(node);
  }
  return false;  // not reached: every op returns above
}

bool on_host(const Tensor& t) { return t.buffer != nullptr && t.buffer->backend().is_host(); }

class VulkanBuffer final : public Buffer {
 public:
  VulkanBuffer(Backend& be, std::unique_ptr<Allocation> a, size_t bytes, BufferUsage u)
      : backend_(be), alloc_(std::move(a)), size_(bytes) {
    usage = u;
  }
  void* base() override { return alloc_->base; }  // a made-up address (device.h), never dereferenced
  size_t size() const override { return size_; }
  Backend& backend() override { return backend_; }

 private:
  Backend& backend_;
  std::unique_ptr<Allocation> alloc_;
  size_t size_;
};

// A value on the recording backend's timeline.
class VulkanEvent final : public Event {
 public:
  VulkanEvent(const void* who, VkDevice dev, VkSemaphore timeline) : owner(who), dev_(dev), timeline_(timeline) {}
  Status host_wait() const override {
    try {
      wait_timeline(dev_, timeline_, value);
    } catch (const VkFault& f) {
      return Error("vulkan: device fault " + where + ": " + f.what);
    }
    return {};
  }
  const void* owner;
  uint64_t value = 0;
  std::string where;

 private:
  VkDevice dev_;
  VkSemaphore timeline_;
};

class VulkanBackend final : public Backend {
 public:
  VulkanBackend(std::shared_ptr<Device> dev, const Options& opt)
      : dev_(std::move(dev)),
        pipes_(std::make_unique<Pipelines>(*dev_)),
        queue_(std::make_unique<Queue>(*dev_)),
        prof_(std::make_unique<Profiler>(*dev_)),
        force_staging_(opt.force_staging) {}

  ~VulkanBackend() override {
    queue_.reset();  // waits for the queue
    if (prof_->enabled() && prof_->splits() > 0) std::fputs((prof_->report() + pipes_->statistics()).c_str(), stderr);
    prof_.reset();
    pipes_.reset();
    staging_.reset();
  }
  VulkanBackend(const VulkanBackend&) = delete;
  VulkanBackend& operator=(const VulkanBackend&) = delete;

  std::string_view name() const override { return "vulkan"; }
  bool is_host() const override { return false; }
  size_t alignment() const override { return kAlignment; }

  std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage usage) override {
    try {
      return std::make_unique<VulkanBuffer>(*this, dev_->allocate(bytes, false), bytes, usage);
    } catch (const VkFault&) {
      return nullptr;  // out of device memory: the caller reports it
    }
  }

  bool supports(const Tensor& node) const override {
    // norm.comp sums its rows with subgroup arithmetic: without it, norms run on the CPU.
    if (node.op == Op::RMS_NORM || node.op == Op::L2_NORM)
      return dev_->subgroup_ops(VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
             supports_node(node);
    if (node.op == Op::FLASH_ATTN) return supports_flash_attn(*dev_, node);
    return supports_node(node);
  }
  size_t workspace_size(const Tensor& node) const override {
    if (node.op == Op::ROPE) return rope_workspace(node);
    if (node.op == Op::FLASH_ATTN) return flash_attn_workspace(*dev_, node);
    if (node.op == Op::GATED_DELTA_RULE) return gdr_chunked_workspace(node);
    if (node.op == Op::ARGMAX) return reduce_workspace(node);
    if (node.op == Op::MUL_MAT) return matmul_workspace(*dev_, node);
    return 0;
  }

  void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override {
    if (n == 0) return;
    try {
      transfer(static_cast<char*>(t.data) + off, const_cast<void*>(src), n, true);
    } catch (const VkFault& f) {
      abort_on(f, ("set_tensor '" + t.name + "'").c_str());
    }
  }

  void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) override {
    if (n == 0) return;
    try {
      transfer(static_cast<const char*>(t.data) + off, dst, n, false);
    } catch (const VkFault& f) {
      abort_on(f, ("get_tensor '" + t.name + "'").c_str());
    }
  }

  void copy_tensor(const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off, size_t n) override {
    if (n == 0) return;
    const Device::Located s = dev_->locate(static_cast<const char*>(src.data) + src_off);
    const Device::Located d = dev_->locate(static_cast<char*>(dst.data) + dst_off);
    // A side in host memory (a node the scheduler ran on the CPU) is read or written in place.
    if (!s.alloc && on_host(src)) return set_tensor(dst, static_cast<const char*>(src.data) + src_off, dst_off, n);
    if (!d.alloc && on_host(dst)) return get_tensor(src, static_cast<char*>(dst.data) + dst_off, src_off, n);
    GL_ASSERT(s.alloc && d.alloc, "vulkan: copy_tensor of memory that is neither this device's nor the host's");
    if (s.alloc == d.alloc && s.offset < d.offset + n && d.offset < s.offset + n) {
      Backend::copy_tensor(src, src_off, dst, dst_off, n);  // overlapping: vkCmdCopyBuffer forbids it
      return;
    }
    try {
      Queue::Frame& f = queue_->begin();
      const VkBufferCopy region{s.offset, d.offset, n};
      vkCmdCopyBuffer(f.cmd, s.alloc->buffer, d.alloc->buffer, 1, &region);
      Recorder(*dev_, *pipes_, f.cmd, *f.sets).barrier();
      queue_->submit(f);
    } catch (const VkFault& f) {
      abort_on(f, ("copy_tensor '" + src.name + "' -> '" + dst.name + "'").c_str());
    }
  }

  Status compute(std::span<Tensor* const> nodes) override {
    for (Tensor* node : nodes)
      if (node->op != Op::NONE && !is_view_op(node->op) && !node->data)
        return Error("vulkan: " + describe(*node) + " has no memory");
    if (nodes.empty()) return {};
    SplitKey key = replay_ ? split_key(nodes) : SplitKey{};
    if (Queue::Frame* cached = replay_ ? cache_.find(key) : nullptr) {
      try {
        queue_->resubmit(*cached);
      } catch (const VkFault& f) {
        return Error("vulkan: resubmitting the split ending at " + describe(*nodes.back()) + ": " + f.what);
      }
      remember_split(nodes);
      return {};
    }
    Queue::Frame* frame = nullptr;
    try {
      frame = &queue_->begin(/*reusable=*/replay_);
    } catch (const VkFault& f) {
      return Error("vulkan: starting a command buffer for " + describe(*nodes.front()) + ": " + f.what);
    }
    if (prof_->enabled()) prof_->begin_split(frame->cmd);
    Recorder rec(*dev_, *pipes_, frame->cmd, *frame->sets, prof_.get());
    rec.barrier();  // after the transfers and splits queued before
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Tensor& node = *nodes[i];
      if (node.op == Op::NONE || is_view_op(node.op)) continue;
      try {
        if (const size_t fused = fused_nodes(rec, nodes.subspan(i))) {
          i += fused - 1;
          continue;
        }
        rec.begin_node(node);
        record_node(rec, node);
      } catch (const VkFault& f) {
        queue_->abandon(*frame);
        return Error("vulkan: " + describe(node) + ": " + f.what);
      }
    }
    rec.barrier();  // the split's results, for the transfers and splits after it and the host
    try {
      const uint64_t value = queue_->submit(*frame);
      if (prof_->enabled()) {
        queue_->wait(value);
        prof_->collect();
      }
    } catch (const VkFault& f) {
      return Error("vulkan: submitting the split ending at " + describe(*nodes.back()) + ": " + f.what);
    }
    if (replay_) cache_.insert(std::move(key), *frame);
    remember_split(nodes);
    return {};
  }

  Status synchronize() override {
    try {
      queue_->wait_all();
    } catch (const VkFault& f) {
      return Error("vulkan: device fault in or before " + last_split_ + ": " + f.what);
    }
    return {};
  }

  const SplitCache& cache() const { return cache_; }

  std::unique_ptr<Event> make_event() override {
    return std::make_unique<VulkanEvent>(this, dev_->handle(), queue_->timeline());
  }

  Status record(Event& e) override {
    auto* ve = dynamic_cast<VulkanEvent*>(&e);
    GL_ASSERT(ve != nullptr && ve->owner == this, "vulkan: record() of an event another backend made");
    ve->value = queue_->submitted();
    ve->where = "in or before " + last_split_;
    return {};
  }

  // This backend's own events need no wait (one queue, in order, barriers between submissions);
  // anything else is waited for on the host.
  Status wait(const Event& e) override {
    const auto* ve = dynamic_cast<const VulkanEvent*>(&e);
    if (ve && ve->owner == this) return {};
    return e.host_wait();
  }

 private:
  // The last split queued, named in a fault that surfaces later.
  void remember_split(std::span<Tensor* const> nodes) {
    last_split_ = "the split of " + std::to_string(nodes.size()) + " nodes '" + nodes.front()->name + "' .. '" +
                  nodes.back()->name + "'";
  }

  // n bytes between device address `dev_ptr` and host memory: a memcpy on the mapping after the
  // queue is idle, or through the staging buffer and a copy on the queue.
  void transfer(const void* dev_ptr, void* host, size_t n, bool to_device) {
    const Device::Located at = dev_->locate(dev_ptr);
    GL_ASSERT(at.alloc && at.offset + n <= at.alloc->size, "vulkan: transfer outside this device's buffers");
    queue_->wait_all();
    if (at.alloc->mapped && !force_staging_) {
      char* p = at.alloc->mapped + at.offset;
      if (to_device)
        std::memcpy(p, host, n);
      else
        std::memcpy(host, p, n);
      return;
    }
    if (!staging_) staging_ = dev_->allocate(kStagingBytes, true);
    for (size_t done = 0; done < n; done += kStagingBytes) {
      const size_t len = std::min(kStagingBytes, n - done);
      char* h = static_cast<char*>(host) + done;
      if (to_device) std::memcpy(staging_->mapped, h, len);
      Queue::Frame& f = queue_->begin();
      const VkBufferCopy region{to_device ? 0 : at.offset + done, to_device ? at.offset + done : 0, len};
      if (to_device)
        vkCmdCopyBuffer(f.cmd, staging_->buffer, at.alloc->buffer, 1, &region);
      else
        vkCmdCopyBuffer(f.cmd, at.alloc->buffer, staging_->buffer, 1, &region);
      Recorder(*dev_, *pipes_, f.cmd, *f.sets).barrier();
      queue_->wait(queue_->submit(f));
      if (!to_device) std::memcpy(h, staging_->mapped, len);
    }
  }

  std::shared_ptr<Device> dev_;
  std::unique_ptr<Pipelines> pipes_;
  std::unique_ptr<Queue> queue_;
  std::unique_ptr<Profiler> prof_;
  std::unique_ptr<Allocation> staging_;
  bool force_staging_;
  SplitCache cache_;
  // GL_VULKAN_REPLAY=0 or profiling: record every split afresh.
  bool replay_ = !diag_env(Diag::VULKAN_REPLAY_OFF) && !prof_->enabled();
  std::string last_split_ = "(no split yet)";
};

}  // namespace

ReplayStats replay_stats(const Backend& backend) {
  const auto* vk = dynamic_cast<const VulkanBackend*>(&backend);
  if (!vk) return {};
  return {vk->cache().records(), vk->cache().replays()};
}

Result<std::unique_ptr<Backend>> make_backend(const Options& opt) {
  if (opt.coop_tile != 0 && opt.coop_tile != 64 && opt.coop_tile != 128)
    return Error("vulkan: Options::coop_tile is " + std::to_string(opt.coop_tile) + ", expected 0, 64 or 128");
  if (opt.gemv_rows > 2)
    return Error("vulkan: Options::gemv_rows is " + std::to_string(opt.gemv_rows) + ", expected 0, 1 or 2");
  Result<std::shared_ptr<Device>> dev = Device::open(opt);
  if (!dev) return Error("vulkan: " + dev.error());
  const std::string device_name = (*dev)->name();
  try {
    return std::unique_ptr<Backend>(std::make_unique<VulkanBackend>(std::move(*dev), opt));
  } catch (const VkFault& f) {
    return Error("vulkan: setting up " + device_name + ": " + f.what);
  }
}

}  // namespace gl::vulkan
