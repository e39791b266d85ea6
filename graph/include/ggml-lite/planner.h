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
// is not an input/output, and layouts match.
#pragma once

#include <cstddef>
#include <unordered_map>

#include "ggml-lite/graph.h"

namespace gl {

class Buffer;

struct MemoryPlan {
  std::unordered_map<const Tensor*, size_t> offsets;  // every planned tensor (not views, not leafs with data)
  std::unordered_map<const Tensor*, size_t> sizes;    // aligned bytes reserved for each
  size_t arena_bytes = 0;  // peak: the arena size needed
  size_t naive_bytes = 0;  // sum of all planned sizes (what no reuse would need)
  int n_inplace = 0;       // nodes that took their source's memory
};

// Plans tensors that need arena memory (nodes that are not views, and leafs
// flagged INPUT without data). With backend_id >= 0 only tensors whose
// backend_id matches are planned (one arena per backend).
MemoryPlan plan_memory(const Graph& g, size_t alignment, int backend_id = -1);
// Sets data/buffer/arena_offset of planned tensors and of views on them.
void bind_plan(const Graph& g, const MemoryPlan& plan, Buffer& arena);
// Recomputes data pointers of views from their roots (after roots got data).
void bind_views(const Graph& g);

}  // namespace gl
