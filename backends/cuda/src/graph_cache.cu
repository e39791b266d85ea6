// graph_cache.cu - launch signatures, capture and replay (see graph_cache.cuh).
#include "graph_cache.cuh"

#include <string>

#include "common.cuh"
#include "ggml-lite/hash.h"

namespace gl::cuda {
namespace {

constexpr size_t kMaxSeen = 4096;  // forget one-off signatures past this many

uint64_t ptr_word(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

void describe(std::vector<uint64_t>& sig, const Tensor& t) {
  sig.push_back(ptr_word(t.data));
  sig.push_back(static_cast<uint64_t>(t.type));
  for (int64_t n : t.ne) sig.push_back(static_cast<uint64_t>(n));
  for (size_t b : t.nb) sig.push_back(b);
}

// Everything a node's kernel launch is built from (see graph_cache.cuh).
void signature(std::span<Tensor* const> nodes, std::vector<uint64_t>& sig) {
  sig.clear();
  for (const Tensor* n : nodes) {
    if (n->op == Op::NONE || is_view_op(n->op)) continue;
    Hasher h;
    hash_params(h, n->params);
    sig.push_back(static_cast<uint64_t>(n->op) << 8 | static_cast<uint64_t>(n->n_srcs()));
    sig.push_back(h.get());
    describe(sig, *n);
    sig.push_back(ptr_word(n->workspace));  // a kernel argument too
    for (int i = 0; i < n->n_srcs(); ++i) describe(sig, *n->src[i]);
  }
}

// Four independent multiply-xor lanes: a quick key; entries still compare whole signatures.
uint64_t key_of(const std::vector<uint64_t>& sig) {
  uint64_t h[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  for (size_t i = 0; i < sig.size(); ++i) h[i & 3] = (h[i & 3] ^ sig[i]) * 0x100000001B3ull;
  return (h[0] ^ (h[1] << 1)) ^ ((h[2] << 2) ^ (h[3] << 3)) ^ sig.size();
}

}  // namespace

GraphCache::~GraphCache() {
  for (auto& [key, e] : graphs_) (void)cudaGraphExecDestroy(e.exec);  // at exit the runtime may be gone
}

Status GraphCache::run(std::span<Tensor* const> nodes, cudaStream_t stream, uint64_t setting,
                       const std::function<Status()>& launch_all) {
  if (!enabled_ || paused_) return launch_all();
  signature(nodes, sig_);
  if (sig_.empty()) return {};
  sig_.push_back(setting);
  const uint64_t key = key_of(sig_);
  auto [lo, hi] = graphs_.equal_range(key);
  for (auto it = lo; it != hi; ++it) {
    if (it->second.signature != sig_) continue;
    it->second.last_use = ++clock_;
    ++n_replays_;
    if (const cudaError_t e = cudaGraphLaunch(it->second.exec, stream); e != cudaSuccess)
      return Error("cuda: replay of the split '" + nodes.front()->name + "' .. '" + nodes.back()->name +
                   "' failed: " + cudaGetErrorString(e));
    return {};
  }
  if (uncapturable_.contains(key) || seen_.insert(key).second) {
    if (seen_.size() > kMaxSeen) seen_.clear();
    return launch_all();
  }
  return capture(key, stream, launch_all);
}

Status GraphCache::capture(uint64_t key, cudaStream_t stream, const std::function<Status()>& launch_all) {
  GL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  const Status launched = launch_all();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!launched.ok() || ended != cudaSuccess) {
    if (graph) GL_CUDA_CHECK(cudaGraphDestroy(graph));
    (void)cudaGetLastError();  // an invalidated capture leaves its error behind
    // Launches fail inside an invalidated capture too: run the list eagerly, which reports a
    // genuine launch error again, and do not try to capture it again.
    uncapturable_.insert(key);
    return launch_all();
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  GL_CUDA_CHECK(cudaGraphDestroy(graph));
  if (inst != cudaSuccess) {
    (void)cudaGetLastError();
    uncapturable_.insert(key);
    return launch_all();
  }
  if (graphs_.size() >= capacity_) evict_oldest(stream);
  graphs_.emplace(key, Entry{sig_, exec, ++clock_});
  ++n_captures_;
  if (const cudaError_t e = cudaGraphLaunch(exec, stream); e != cudaSuccess)
    return Error(std::string("cuda: graph launch failed: ") + cudaGetErrorString(e));
  return {};
}

void GraphCache::evict_oldest(cudaStream_t stream) {
  GL_CUDA_CHECK(cudaStreamSynchronize(stream));  // no replay of it still running
  auto oldest = graphs_.begin();
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it)
    if (it->second.last_use < oldest->second.last_use) oldest = it;
  GL_CUDA_CHECK(cudaGraphExecDestroy(oldest->second.exec));
  graphs_.erase(oldest);
}

}  // namespace gl::cuda
