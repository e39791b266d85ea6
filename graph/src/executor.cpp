// executor.cpp - schedule, plan, allocate and run graphs.
//
// One arena for now: it holds every backend's tensors, which is only valid
// when all backends share host memory (or there is a single backend).
// Per-backend arenas and cross-backend copies come with the CUDA backend.
#include "ggml-lite/executor.h"

#include <algorithm>

#include <fmt/format.h>

namespace gl {
namespace {

Backend& backend_of(const Tensor& t, std::span<Backend* const> backends) {
  if (t.buffer) return t.buffer->backend();
  const Tensor& r = root(t);
  if (r.buffer) return r.buffer->backend();
  GL_ASSERT(t.backend_id >= 0 && static_cast<size_t>(t.backend_id) < backends.size(),
            "executor: tensor has no buffer and no backend (allocate() first)");
  return *backends[t.backend_id];
}

// Whether g's planned tensors point into this arena (another graph may have
// grown, and so replaced, the arena since g was allocated).
bool bound_to(const Graph& g, const MemoryPlan& plan, Buffer& arena) {
  auto check = [&](std::span<Tensor* const> ts, const std::vector<MemoryPlan::Slot>& slots) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (slots[i].offset < 0) continue;
      if (ts[i]->data != static_cast<char*>(arena.base()) + slots[i].offset) return false;
    }
    return true;
  };
  return check(g.leafs(), plan.leaf_slots) && check(g.nodes(), plan.node_slots);
}

}  // namespace

Executor::Executor(std::vector<Backend*> backends) : sched_(std::move(backends)) {}

Status Executor::allocate(const Graph& g) {
  std::span<Backend* const> bs = sched_.backends();
  bool all_host = std::all_of(bs.begin(), bs.end(), [](const Backend* b) { return b->is_host(); });
  if (bs.size() > 1 && !all_host) {
    return Error("executor: several backends with device memory need per-backend arenas (not implemented yet)");
  }
  sched_.schedule(g);
  size_t alignment = 1;
  for (const Backend* b : bs) alignment = std::max(alignment, b->alignment());

  uint64_t fp = g.fingerprint();
  auto it = plans_.find(fp);
  if (it == plans_.end()) {
    it = plans_.emplace(fp, plan_memory(g, alignment)).first;
  } else {
    rekey_plan(it->second, g);  // a rebuilt graph has other tensors; placements stay
  }
  const MemoryPlan& plan = it->second;

  if (!arena_ || arena_->size() < plan.arena_bytes) {
    // The arena comes from the last backend (the host one when several share memory).
    arena_.reset();
    arena_ = bs.back()->alloc_buffer(std::max<size_t>(plan.arena_bytes, alignment), BufferUsage::COMPUTE);
    if (!arena_) {
      return Error(fmt::format("executor: {} could not allocate a {} byte arena", bs.back()->name(), plan.arena_bytes));
    }
  }
  bind_plan(g, plan, *arena_);
  last_plan_ = &plan;
  return {};
}

Status Executor::compute(const Graph& g) {
  auto it = plans_.find(g.fingerprint());
  if (it == plans_.end() || !arena_ || !bound_to(g, it->second, *arena_)) {
    return Error("executor: graph is not allocated in the current arena; call allocate() first");
  }
  const SchedulePlan& plan = sched_.schedule(g);
  for (const Split& s : plan.splits) {
    if (!s.inputs_from_elsewhere.empty()) {
      bool device_involved = !s.backend->is_host();
      for (const Tensor* in : s.inputs_from_elsewhere) {
        const Tensor& r = root(*in);
        if (r.buffer && !r.buffer->backend().is_host()) device_involved = true;
      }
      if (device_involved) {
        return Error(
            fmt::format("executor: split on {} reads '{}' from another backend: cross-backend copies "
                        "not implemented yet",
                        s.backend->name(), s.inputs_from_elsewhere.front()->name));
      }
    }
    GL_TRY(s.backend->compute(s.nodes));
  }
  for (Backend* b : sched_.backends()) b->synchronize();
  return {};
}

void Executor::set_input(Tensor& t, const void* src) {
  GL_ASSERT(t.data != nullptr, "set_input: tensor has no memory (allocate() first)");
  backend_of(t, sched_.backends()).set_tensor(t, src, 0, nbytes(t));
}

void Executor::get_output(const Tensor& t, void* dst) {
  GL_ASSERT(t.data != nullptr, "get_output: tensor has no memory (allocate() first)");
  backend_of(t, sched_.backends()).get_tensor(t, dst, 0, nbytes(t));
}

}  // namespace gl
