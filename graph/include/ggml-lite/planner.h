// planner.h - liveness-based memory planning of one graph into one arena.
//
//   gl::MemoryPlan plan = gl::plan_memory(graph, /*alignment=*/64);
//   fmt::print("peak {} B (no reuse: {} B)\n", plan.arena_bytes, plan.naive_bytes);
//   auto arena = backend.alloc_buffer(plan.arena_bytes, gl::BufferUsage::COMPUTE);
//   gl::bind_plan(graph, plan, *arena);
//
// Inputs and outputs get memory of their own for the whole graph; other nodes
// are freed after their last consumer (and the last consumer of their views)
// and their space is reused. A node takes its first source's memory in place
// only when the op declares it safe, the source has no other consumer or view,
// is not an input/output, and layouts match. Given the backend, a node's scratch
// (Backend::workspace_size) gets a block of its own while the node runs, reused
// like any other once the node is done; bind_plan points node.workspace at it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ggml-lite/graph.h"

namespace gl {

class Backend;
class Buffer;

struct MemoryPlan {
  std::unordered_map<const Tensor*, size_t> offsets;          // every planned tensor (not views, not leafs with data)
  std::unordered_map<const Tensor*, size_t> sizes;            // aligned bytes reserved for each
  size_t arena_bytes = 0;                                     // peak: the arena size needed
  size_t naive_bytes = 0;                                     // sum of all planned sizes (what no reuse would need)
  int n_inplace = 0;                                          // nodes that took their source's memory
  int n_shared_workspaces = 0;                                // nodes whose scratch is a shared block
  std::unordered_map<const Tensor*, size_t> workspaces;       // node -> offset of its scratch block
  std::unordered_map<const Tensor*, size_t> workspace_sizes;  // node -> aligned bytes of that block
  // The same placements by graph position (offset -1: not planned), so a plan
  // cached by fingerprint can be re-keyed onto an equal graph of other tensors.
  struct Slot {
    int64_t offset = -1;
    size_t size = 0;
  };
  std::vector<Slot> leaf_slots;       // parallel to graph.leafs()
  std::vector<Slot> node_slots;       // parallel to graph.nodes()
  std::vector<Slot> workspace_slots;  // parallel to graph.nodes(): each node's scratch block
};

// Plans tensors that need arena memory (nodes that are not views, and leafs
// flagged INPUT without data of their own: data-less, or placed by an earlier
// plan, arena_offset >= 0). With backend_id >= 0 only tensors whose
// backend_id matches are planned (one arena per backend). alignment > 0 is
// applied to every block's size and offset. With a backend, the nodes planned
// here also get their workspace_size() as scratch for the duration of their step.
MemoryPlan plan_memory(const Graph& g, size_t alignment, int backend_id = -1, const Backend* backend = nullptr);
// Sets data/buffer/arena_offset of planned tensors and of views on them, and the
// workspace of nodes that have scratch.
void bind_plan(const Graph& g, const MemoryPlan& plan, Buffer& arena);
// Recomputes data pointers of views from their roots (after roots got data).
void bind_views(const Graph& g);
// Points offsets/sizes at g's tensors using the slots; g must have the same
// fingerprint as the graph the plan was made for. Costs O(tensors), no planning.
void rekey_plan(MemoryPlan& plan, const Graph& g);

}  // namespace gl
