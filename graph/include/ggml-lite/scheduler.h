// scheduler.h - assigns graph nodes to backends and cuts splits.
//
//   gl::Scheduler sched({cuda.get(), cpu.get()});   // priority order, CPU last
//   const gl::SchedulePlan& plan = sched.schedule(graph);   // cached by fingerprint
//   for (const gl::Split& s : plan.splits) GL_TRY(s.backend->compute(s.nodes));
//
// The CPU is always present: when none of the given backends is a host backend
// (gl::Scheduler sched({cuda.get()})), the scheduler makes a CPU backend of its
// own and appends it as the fallback, so a node the device does not support
// runs on the CPU instead of reaching a kernel that cannot run it.
//
// Placement passes, in order:
//   1. a node whose weights live in a backend's buffer goes to that backend
//      (if it supports the node);
//   2. other nodes go to the first backend that supports them, preferring the
//      backend of their first source;
//   3. a node no backend with priority supports falls back to the last backend.
// With several backends the last one (CPU) is the fallback: it gets nodes only
// through their weights (pass 1) or pass 3, which counts them in n_fallback.
// Leafs stay in their buffer's backend; data-less inputs go where they are
// first read. View ops go with the memory they view and never cut a split.
// Consecutive nodes on one backend form a split. Copies between backends are
// listed per split (the sources that live elsewhere).
// Plans are cached by fingerprint (plus where the leafs' buffers live); a cache
// hit re-points the splits at the new graph's tensors without re-placing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/graph.h"

namespace gl {

struct Split {
  int backend_id = 0;
  Backend* backend = nullptr;
  std::vector<Tensor*> nodes;
  std::vector<Tensor*> inputs_from_elsewhere;  // sources produced or stored on another backend
};

struct SchedulePlan {
  uint64_t fingerprint = 0;
  std::vector<int> node_backend;  // parallel to graph.nodes()
  std::vector<int> leaf_backend;  // parallel to graph.leafs(): where each leaf's memory lives (-1: no backend)
  std::vector<Split> splits;
  int n_fallback = 0;     // nodes placed on the fallback backend because others lack support
  uint64_t graph_id = 0;  // Graph::id() of the graph the splits point into
};

class Scheduler {
 public:
  // backends in priority order; a CPU fallback is appended when none is a host backend.
  explicit Scheduler(std::vector<Backend*> backends);
  // Plans (or returns the cached plan for) this graph and writes backend_id
  // into every node and leaf.
  const SchedulePlan& schedule(const Graph& g);
  int n_cached() const { return static_cast<int>(cache_.size()); }
  int n_planned() const { return n_planned_; }
  // The backends in use: the given ones, then the implicit CPU fallback if one was added.
  std::span<Backend* const> backends() const { return backends_; }
  // The CPU backend the scheduler added itself (nullptr when a host backend was given).
  Backend* implicit_fallback() const { return implicit_cpu_.get(); }

 private:
  SchedulePlan make_plan(const Graph& g) const;
  std::unique_ptr<Backend> implicit_cpu_;  // before backends_: it must outlive the pointer there
  std::vector<Backend*> backends_;
  std::unordered_map<uint64_t, SchedulePlan> cache_;
  int n_planned_ = 0;
};

}  // namespace gl
