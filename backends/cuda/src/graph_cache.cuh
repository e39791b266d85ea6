// graph_cache.cuh - replays a split's kernels as a CUDA graph when the same launches repeat.
//
//   GraphCache graphs(/*enabled=*/true);
//   Status st = graphs.run(nodes, stream, /*setting=*/0, [&] { return launch_all(nodes); });
//
// A step graph (decode, verify, MTP draft) launches the same kernels with the same arguments
// every time it runs with the same shapes: its inputs are written into fixed arena slots, so
// only their contents change. The cache keys a node list by its launch signature -- every
// launched node's op, params, dtype, shape, strides, data and workspace pointers, and the same
// for each of its sources -- which is exactly what the kernels' arguments are made of. The
// workspace sits in the arena at a planned offset, so a replay sees the same scratch pointer. A list seen for
// the second time is captured into a CUDA graph; from then on an identical signature (compared
// word for word, not only by hash) replays it with one launch. A list seen once runs eagerly, so
// one-off shapes (a prompt's odd last chunk) cost no capture. Anything that breaks capture
// falls back to eager launches for that signature.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"

namespace gl::cuda {

class GraphCache {
 public:
  explicit GraphCache(bool enabled, size_t capacity = 48) : enabled_(enabled), capacity_(capacity) {}
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  // Runs the nodes on stream: a replay, a capture then replay, or launch_all() directly. setting:
  // backend state that changes the launches without showing in the nodes (the precision); it
  // joins the signature.
  Status run(std::span<Tensor* const> nodes, cudaStream_t stream, uint64_t setting,
             const std::function<Status()>& launch_all);

  int64_t n_replays() const { return n_replays_; }
  int64_t n_captures() const { return n_captures_; }
  // Paused: run() launches eagerly and leaves the cache as it is (nothing captured, replayed,
  // seen or evicted), for one-off work between repetitions of a timed step (bench's context fill).
  void pause(bool paused) { paused_ = paused; }

 private:
  struct Entry {
    std::vector<uint64_t> signature;
    cudaGraphExec_t exec = nullptr;
    uint64_t last_use = 0;
  };
  Status capture(uint64_t key, cudaStream_t stream, const std::function<Status()>& launch_all);
  void evict_oldest(cudaStream_t stream);

  bool enabled_;
  bool paused_ = false;
  size_t capacity_;
  std::vector<uint64_t> sig_;  // the signature of the node list being run
  std::unordered_multimap<uint64_t, Entry> graphs_;
  std::unordered_set<uint64_t> seen_;  // signatures run once, eagerly
  std::unordered_set<uint64_t> uncapturable_;
  uint64_t clock_ = 0;
  int64_t n_replays_ = 0, n_captures_ = 0;
};

}  // namespace gl::cuda
