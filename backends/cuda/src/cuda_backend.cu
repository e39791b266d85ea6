// cuda_backend.cu - the CUDA backend: device buffers from a caching pool, transfers on the
// backend's stream, and the op dispatch (one switch over Op, every launch checked per node).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>

#include "buffer.cuh"
#include "common.cuh"
#include "device.cuh"
#include "ggml-lite/cuda.h"
#include "ggml-lite/diag.h"
#include "graph_cache.cuh"
#include "ops/kernels.cuh"
#include "ops/q8_input.cuh"
#include "profiler.cuh"
#include "staging.cuh"

namespace gl::cuda {
namespace {

// cudaMalloc returns 256-byte aligned blocks; the planner keeps tensors on that grid too.
constexpr size_t kAlignment = 256;
// Pinned ring for step inputs and small read-backs (a step's inputs are a few KB; logits of a
// verify step are K+1 rows of the vocabulary).
constexpr size_t kStagingBytes = size_t{64} << 20;
// cuBLAS gets a fixed workspace so that nothing it does inside a captured graph allocates.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// GL_CUDA_GRAPHS=0 turns capture off (for A/B timing and for debugging a kernel eagerly).
bool graphs_enabled(bool requested) { return requested && !diag_env(Diag::CUDA_GRAPHS_OFF); }
// GL_CUDA_FUSION=0 launches every node on its own (A/B of the fused pairs).
bool fusion_enabled() { return !diag_env(Diag::CUDA_FUSION_OFF); }

// The one dispatch switch: no default, so a new op fails to compile here.
void launch(const Ctx& ctx, Tensor& node) {
  switch (node.op) {
    case Op::NONE:
    case Op::VIEW:
    case Op::RESHAPE:
    case Op::PERMUTE:
    case Op::TRANSPOSE: return;
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV: binary(ctx, node); return;
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP: unary(ctx, node); return;
    case Op::SWIGLU: swiglu(ctx, node); return;
    case Op::RMS_NORM:
    case Op::L2_NORM: norm(ctx, node); return;
    case Op::MUL_MAT: mul_mat(ctx, node); return;
    case Op::MUL_MAT_ID: mul_mat_id(ctx, node); return;
    case Op::SOFTMAX: softmax(ctx, node); return;
    case Op::FLASH_ATTN: flash_attn(ctx, node); return;
    case Op::ROPE: rope(ctx, node); return;
    case Op::GET_ROWS: get_rows(ctx, node); return;
    case Op::SET_ROWS: set_rows(ctx, node); return;
    case Op::CONCAT: concat(ctx, node); return;
    case Op::CONT:
    case Op::CPY: copy(ctx, node); return;
    case Op::ARGMAX: argmax(ctx, node); return;
    case Op::TOP_K: top_k(ctx, node); return;
    case Op::SUM_ROWS: sum_rows(ctx, node); return;
    case Op::SSM_CONV: ssm_conv(ctx, node); return;
    case Op::GATED_DELTA_RULE: gated_delta_rule(ctx, node); return;
  }
}

// Per op family, the family's own answer (kernels.cuh); views and leafs compute nothing.
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
    case Op::SWIGLU:
    case Op::RMS_NORM:
    case Op::L2_NORM:
    case Op::SOFTMAX:
    case Op::ROPE: return supports_elementwise(node);
    case Op::FLASH_ATTN: return supports_flash_attn(node);
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
    case Op::SSM_CONV:
    case Op::GATED_DELTA_RULE: return supports_ssm(node);
  }
  return false;  // not reached: every op returns above
}

// Scratch of the entries that need some (kernels.cuh); the planner reserves it per node.
size_t node_workspace(const Tensor& node) {
  if (node.op == Op::FLASH_ATTN) return flash_attn_workspace(node);
  if (node.op == Op::GATED_DELTA_RULE) return gated_delta_rule_workspace(node);
  if (node.op == Op::MUL_MAT_ID) return mul_mat_id_workspace(node);
  if (node.op == Op::MUL_MAT) return mul_mat_workspace(node);
  if (node.op == Op::ARGMAX) return argmax_workspace(node);
  return 0;
}

std::string describe(const Tensor& node) { return "node '" + node.name + "' (" + std::string(op_name(node.op)) + ")"; }

// A point on a CUDA stream (timing off: only ordering is asked of it). `where` says what the
// recording backend had queued, for the error of a fault that surfaces when waiting on it.
class CudaEvent final : public Event {
 public:
  explicit CudaEvent(int device) {
    DeviceScope on(device);
    GL_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~CudaEvent() override { (void)cudaEventDestroy(event_); }  // after a fault destroy may fail: nothing to do
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  Status host_wait() const override {
    if (const cudaError_t e = cudaEventSynchronize(event_); e != cudaSuccess)
      return Error("cuda: device fault " + where + ": " + cudaGetErrorString(e));
    return {};
  }
  cudaEvent_t get() const { return event_; }
  std::string where;

 private:
  cudaEvent_t event_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const Options& opt)
      : pool_(std::make_shared<Pool>(opt.device)), graphs_(graphs_enabled(opt.graphs)), staging_(kStagingBytes) {
    DeviceScope on(opt.device);
    ctx_.device = opt.device;
    ctx_.precision = opt.precision;
    GL_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    GL_CUBLAS_CHECK(cublasCreate(&ctx_.cublas));
    GL_CUBLAS_CHECK(cublasSetStream(ctx_.cublas, ctx_.stream));
    GL_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
    GL_CUBLAS_CHECK(cublasSetWorkspace(ctx_.cublas, cublas_workspace_, kCublasWorkspaceBytes));
    GL_CUDA_CHECK(cudaMalloc(&ctx_.arrivals, kArrivalSlots * sizeof(unsigned)));
    GL_CUDA_CHECK(cudaMemsetAsync(ctx_.arrivals, 0, kArrivalSlots * sizeof(unsigned), ctx_.stream));
  }

  ~CudaBackend() override {
    DeviceScope on(ctx_.device);
    if (cudaStreamSynchronize(ctx_.stream) != cudaSuccess) {
      // A device fault, already reported by synchronize() or an event: the context is unusable,
      // so release nothing more (the driver frees it all at exit) instead of aborting.
      return;
    }
    if (prof_.enabled() || prof_.timing()) {
      prof_.collect();
      std::fputs(prof_.report().c_str(), stderr);
    }
    GL_CUBLAS_CHECK(cublasDestroy(ctx_.cublas));
    GL_CUDA_CHECK(cudaFree(cublas_workspace_));
    GL_CUDA_CHECK(cudaFree(ctx_.arrivals));
    GL_CUDA_CHECK(cudaStreamDestroy(ctx_.stream));
  }

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  bool is_host() const override { return false; }
  size_t alignment() const override { return kAlignment; }

  std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage usage) override {
    void* p = pool_->alloc(bytes);
    if (!p) return nullptr;  // out of device memory: the caller reports it
    return std::make_unique<DeviceBuffer>(*this, pool_, p, bytes, usage);
  }

  bool supports(const Tensor& node) const override { return supports_node(node); }
  size_t workspace_size(const Tensor& node) const override { return node_workspace(node); }
  const Tensor* workspace_share(const Tensor& node) const override {
    return node.op == Op::MUL_MAT ? mul_mat_workspace_share(node) : nullptr;
  }

  // The caller may reuse src once this returns: small copies go through a pinned slot and are
  // only queued; large ones (weights) are waited for.
  void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override {
    check_owned(t);
    if (n == 0) return;
    DeviceScope on(ctx_.device);
    char* dst = static_cast<char*>(t.data) + off;
    if (void* slot = staging_.take(n, ctx_.stream)) {
      std::memcpy(slot, src, n);
      GL_CUDA_CHECK(cudaMemcpyAsync(dst, slot, n, cudaMemcpyHostToDevice, ctx_.stream));
      return;
    }
    GL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, ctx_.stream));
    GL_CUDA_CHECK(sync());  // void: a fault here aborts (the executor waits on an event first)
  }

  // Ordered after every kernel queued so far, so it reads their results.
  void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) override {
    check_owned(t);
    if (n == 0) return;
    DeviceScope on(ctx_.device);
    const char* src = static_cast<const char*>(t.data) + off;
    void* slot = staging_.take(n, ctx_.stream);
    GL_CUDA_CHECK(cudaMemcpyAsync(slot ? slot : dst, src, n, cudaMemcpyDeviceToHost, ctx_.stream));
    GL_CUDA_CHECK(sync());
    if (slot) std::memcpy(dst, slot, n);
  }

  void copy_tensor(const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off, size_t n) override {
    check_owned(src);
    check_owned(dst);
    if (n == 0) return;
    DeviceScope on(ctx_.device);
    GL_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst.data) + dst_off, static_cast<const char*>(src.data) + src_off,
                                  n, cudaMemcpyDeviceToDevice, ctx_.stream));
  }

  // Queues the split's kernels (replayed as a CUDA graph when the same launches repeat, see
  // graph_cache.cuh) without waiting for them; a launch error names its node.
  Status compute(std::span<Tensor* const> nodes) override {
    DeviceScope on(ctx_.device);
    for (Tensor* node : nodes)
      if (node->op != Op::NONE && !is_view_op(node->op) && !node->data)
        return Error("cuda: " + describe(*node) + " has no memory");
    if (prof_.enabled()) {
      remember_split(nodes);
      return launch_all(nodes);  // per-node events: no capture
    }
    prof_.step_begin(ctx_.stream);
    // The precision picks kernels without showing in the nodes: part of the replay key.
    const auto setting = static_cast<uint64_t>(ctx_.precision);
    remember_split(nodes);
    return graphs_.run(nodes, ctx_.stream, setting, [&] { return launch_all(nodes); });
  }

  Status synchronize() override {
    DeviceScope on(ctx_.device);
    if (const cudaError_t e = sync(); e != cudaSuccess)
      return Error("cuda: device fault " + where() + ": " + cudaGetErrorString(e));
    return {};
  }

  std::unique_ptr<Event> make_event() override { return std::make_unique<CudaEvent>(ctx_.device); }

  Status record(Event& e) override {
    auto* ce = dynamic_cast<CudaEvent*>(&e);
    GL_ASSERT(ce != nullptr, "cuda: record() of an event another kind of backend made");
    DeviceScope on(ctx_.device);
    ce->where = where();
    if (const cudaError_t err = cudaEventRecord(ce->get(), ctx_.stream); err != cudaSuccess)
      return Error("cuda: recording an event " + ce->where + ": " + cudaGetErrorString(err));
    return {};
  }

  // A CUDA event (of any device) is waited for on the stream; another kind's on the host.
  Status wait(const Event& e) override {
    const auto* ce = dynamic_cast<const CudaEvent*>(&e);
    if (!ce) return e.host_wait();
    DeviceScope on(ctx_.device);
    if (const cudaError_t err = cudaStreamWaitEvent(ctx_.stream, ce->get(), 0); err != cudaSuccess)
      return Error("cuda: waiting for an event " + ce->where + ": " + cudaGetErrorString(err));
    return {};
  }

  // From another CUDA backend: device to device on this stream (same device: a plain copy;
  // another device: a peer copy, which the driver stages through the host where the devices
  // have no peer access). From host memory: set_tensor (queued through a pinned slot).
  Status copy_from(Backend* src_backend, const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off,
                   size_t n) override {
    const auto* peer = dynamic_cast<const CudaBackend*>(src_backend);
    if (!peer) return Backend::copy_from(src_backend, src, src_off, dst, dst_off, n);
    check_owned(dst);
    if (n == 0) return {};
    DeviceScope on(ctx_.device);
    char* d = static_cast<char*>(dst.data) + dst_off;
    const char* s = static_cast<const char*>(src.data) + src_off;
    const cudaError_t e = peer->ctx_.device == ctx_.device
                              ? cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, ctx_.stream)
                              : cudaMemcpyPeerAsync(d, ctx_.device, s, peer->ctx_.device, n, ctx_.stream);
    if (e != cudaSuccess)
      return Error("cuda: copy of '" + src.name + "' to '" + dst.name + "': " + cudaGetErrorString(e));
    return {};
  }

  void set_precision(Precision p) override { ctx_.precision = p; }
  Precision precision() const override { return ctx_.precision; }

  const GraphCache& graphs() const { return graphs_; }
  GraphCache& graphs() { return graphs_; }
  const Pool& pool() const { return *pool_; }

 private:
  // A failed CUDA call inside a launcher (the checking macro) or a failed launch comes back as
  // this node's error, not an abort.
  Status launch_all(std::span<Tensor* const> nodes) {
    FaultScope faults;
    q8_memo_ = {};  // what another sequence left in a workspace is not known to be there now
    ctx_.q8 = &q8_memo_;
    ctx_.written = &written_;
    done_early_.clear();
    for (size_t i = 0; i < nodes.size(); ++i) {
      Tensor* node = nodes[i];
      if (node->op == Op::NONE || is_view_op(node->op) || done_early_.count(node)) continue;
      if (prof_.enabled()) prof_.before(ctx_.stream);
      try {
        forget_overwritten_q8(*node);
        written_.note(*node);
        const Q8Memo before = q8_memo_;
        if (const size_t fused = fuse(nodes.subspan(i))) {
          for (size_t j = i + 1; j < i + fused; ++j) written_.note(*nodes[j]);
          // A launch that made the rows wrote them last (a norm aliasing its product in place
          // included); another may have written over them with a later node of its group.
          const bool made_rows =
              q8_memo_.workspace != before.workspace || q8_memo_.x != before.x || q8_memo_.data != before.data;
          if (!made_rows)
            for (size_t j = i + 1; j < i + fused; ++j) forget_overwritten_q8(*nodes[j]);
          i += fused - 1;
          node = nodes[i];  // launched with its predecessors; checked below as the group's last node
        } else {
          launch(ctx_, *node);
        }
      } catch (const DeviceFault& f) {
        return Error("cuda: " + describe(*node) + ": " + f.what);
      }
      if (prof_.enabled()) prof_.after(ctx_.stream, *node);
      // Not GL_CUDA_CHECK: a failed launch is reported as this node's error, not an abort.
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
        return Error("cuda: " + describe(*node) + ": launch failed: " + cudaGetErrorString(e));
      }
    }
    return {};
  }

  // Q8Memo describes int8 rows of x in a workspace; a node that writes over either (through its
  // output, a view of x included, or a workspace of its own) ends it. A product reading the rows
  // and x's own producer do not. (The planner also gives a shared block only to an x without views.)
  void forget_overwritten_q8(const Tensor& node) {
    const Q8Memo& m = q8_memo_;
    if (!m.x || &node == m.x || node.op == Op::NONE || !node.data) return;
    const size_t rows = q8_rows_bytes(*m.x), out = nbytes(node);
    const bool reads_rows = node.op == Op::MUL_MAT && node.src[1] == m.x && node.workspace == m.workspace;
    const size_t own_ws = node.workspace && !reads_rows ? node_workspace(node) : 0;
    if (bytes_overlap(node.data, out, m.workspace, rows) || bytes_overlap(node.data, out, m.x->data, nbytes(*m.x)) ||
        bytes_overlap(node.workspace, own_ws, m.workspace, rows))
      q8_memo_ = {};
  }

  // Adjacent nodes with a fused kernel (see the entries' comments): how many were launched, 0
  // when the first node runs on its own.
  size_t fuse(std::span<Tensor* const> nodes) {
    if (!fusion_ || nodes.size() < 2) return 0;
    if (const int n = mul_mat_pair(ctx_, nodes)) return static_cast<size_t>(n);
    if (const int n = mul_mat_twin(ctx_, nodes)) return static_cast<size_t>(n);
    if (const int n = mul_mat_chain(ctx_, nodes)) return static_cast<size_t>(n);
    auto after = [&](size_t n) { return nodes.size() > n ? nodes[n] : nullptr; };
    if (nodes.size() >= 3 && norm_add_mul(ctx_, *nodes[0], *nodes[1], *nodes[2], after(3))) return 3;
    const Tensor* carried = nullptr;
    int n = conv_window_norm(ctx_, nodes, &carried);
    if (!n) n = gated_delta_rule_fused(ctx_, nodes, &carried);
    if (n) {
      if (carried) {  // the copy's write happened here
        written_.note(*carried);
        forget_overwritten_q8(*carried);
        done_early_.insert(carried);
      }
      return static_cast<size_t>(n);
    }
    if (nodes.size() >= 3 && conv_window(ctx_, *nodes[0], *nodes[1], *nodes[2])) return 3;
    if (nodes.size() >= 3 && norm_mul_rope(ctx_, *nodes[0], *nodes[1], *nodes[2])) return 3;
    if (norm_mul(ctx_, *nodes[0], *nodes[1], after(2))) return 2;
    if (softmax_top_k(ctx_, *nodes[0], *nodes[1])) return 2;
    if (const int n = weighted_experts(ctx_, nodes)) return static_cast<size_t>(n);
    if (const int n = expert_weights(ctx_, nodes)) return static_cast<size_t>(n);
    if (const int n = weighted_sum(ctx_, nodes)) return static_cast<size_t>(n);
    return static_cast<size_t>(elementwise_chain(ctx_, nodes));
  }

  // The stream is idle afterwards, so every staging slot is free again. A fault is returned for
  // synchronize() to report; the void transfers (set_tensor, get_tensor) abort on it.
  cudaError_t sync() {
    prof_.step_end(ctx_.stream);
    if (const cudaError_t e = cudaStreamSynchronize(ctx_.stream); e != cudaSuccess) return e;
    staging_.reset();
    if (prof_.enabled()) prof_.collect();
    prof_.collect_step();
    return cudaSuccess;
  }

  // The last split queued, named in a fault that surfaces later (kernels run asynchronously,
  // so which of its nodes faulted is not known). Copies names only: the graph may be gone.
  void remember_split(std::span<Tensor* const> nodes) {
    if (nodes.empty()) return;
    last_first_ = nodes.front()->name;
    last_last_ = nodes.back()->name;
    last_size_ = nodes.size();
  }
  std::string where() const {
    if (last_size_ == 0) return "before any split";
    return "in or before the split of " + std::to_string(last_size_) + " nodes '" + last_first_ + "' .. '" +
           last_last_ + "'";
  }

  void check_owned(const Tensor& t) const {
    GL_ASSERT(t.data != nullptr, "cuda: tensor has no memory");
    GL_ASSERT(t.buffer == nullptr || &t.buffer->backend() == this, "cuda: tensor lives in another backend's buffer");
  }

  Ctx ctx_;
  Q8Memo q8_memo_;
  WrittenWeights written_;      // over the backend's life: splits may chain through dependent launches
  std::shared_ptr<Pool> pool_;  // shared with the buffers, which may outlive the backend
  GraphCache graphs_;
  Staging staging_;
  bool fusion_ = fusion_enabled();
  std::unordered_set<const Tensor*> done_early_;  // later nodes an earlier launch did (launch_all)
  Profiler prof_;
  void* cublas_workspace_ = nullptr;
  std::string last_first_, last_last_;  // see remember_split()
  size_t last_size_ = 0;
};

}  // namespace

int device_count() {
  int n = 0;
  // No driver or no device is an answer here, not a failure: clear the error and say 0.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_backend(const Options& opt) {
  GL_ASSERT(opt.device >= 0 && opt.device < device_count(), "cuda::make_backend: no such device (see device_count())");
  return std::make_unique<CudaBackend>(opt);
}

MemoryInfo memory_info(int device) {
  DeviceScope on(device);
  MemoryInfo m;
  GL_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

GraphStats graph_stats(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) return {};
  return {cuda->graphs().n_captures(), cuda->graphs().n_replays()};
}

void pause_graph_capture(Backend& backend, bool paused) {
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) cuda->graphs().pause(paused);
}

PoolStats pool_stats(const Backend& backend) {
  const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
  if (!cuda) return {};
  return {cuda->pool().n_mallocs(), cuda->pool().malloc_bytes(), cuda->pool().cached_bytes()};
}

}  // namespace gl::cuda
