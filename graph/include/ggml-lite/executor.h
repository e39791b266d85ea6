// executor.h - runs graphs: schedule, plan memory, allocate, compute.
//
//   gl::Executor ex({cuda.get(), cpu.get()});   // priority order, the fallback backend last
//   // gl::Executor ex({cuda.get()}) works too: the scheduler adds a CPU fallback itself.
//   gl::Graph g = gl::Graph::build({y});
//   GL_TRY(ex.allocate(g));          // inputs now have data pointers
//   ex.set_input(*x, xs.data());     // host -> x, on whichever backend x lives
//   GL_TRY(ex.compute(g));
//   ex.get_output(*y, out.data());
//
// Plans are cached per graph fingerprint (and where the leafs live), so a step
// graph rebuilt with the same shapes is neither re-scheduled nor re-planned.
// Each backend has its own arena, planned separately (plan_memory with its
// backend id, which also places each node's kernel scratch, Backend::workspace_size);
// an arena grows to the largest plan seen and is reused. A graph
// allocated before an arena grew must be allocated again; compute() reports it
// instead of reading freed memory.
//
// Several backends: before a split runs, every root range it reads from
// another backend's memory is copied into staging space after the planned
// region of the split backend's arena; the split's nodes are pointed at the
// copies while it computes and restored afterwards, and ranges that a
// CPY/SET_ROWS of the split wrote are copied back to their owner. The copies
// are ordered by events (Backend::record/wait), not by host round trips: the
// consumer waits on an event recorded on the producer, then queues
// Backend::copy_from. A device consumer queues both on its stream (no host
// wait); a host consumer (the CPU) waits on the host, as it must to read.
// Host backends read each other's (and plain host) memory directly: only
// memory on the other side of a device boundary is copied, so one CPU backend
// copies nothing, and a run with one split records no event.
//
// A device fault comes back as a Status from compute() (a launch, naming the
// node), from the event waits of a copy, or from the backends' synchronize()
// at the end of compute() (naming the last split the backend ran).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/graph.h"
#include "ggml-lite/planner.h"
#include "ggml-lite/scheduler.h"

namespace gl {

class Executor {
 public:
  explicit Executor(std::vector<Backend*> backends);
  Status allocate(const Graph& g);
  Status compute(const Graph& g);  // allocate() first
  // compute() without waiting for the backends at the end: the work is queued behind what came
  // before and the caller synchronises (GL_TRY(Backend::synchronize())) before reading device results.
  Status compute_queued(const Graph& g);
  void set_input(Tensor& t, const void* src);   // whole tensor, nbytes(t), wherever t lives
  void get_output(const Tensor& t, void* dst);  // whole tensor, nbytes(t), wherever t lives
  // The memory plan of one backend's arena for the last allocated graph.
  const MemoryPlan* last_plan(int backend_id = 0) const;
  Scheduler& scheduler() { return sched_; }
  // A backend's arena (nullptr until a graph needed memory there).
  Buffer* arena(int backend_id = 0) { return arenas_.at(static_cast<size_t>(backend_id)).get(); }
  // Cross-backend copies (in and back) made by the last compute(); 0 on one backend.
  int n_copies() const { return n_copies_; }

 private:
  struct ArenaPlan {
    MemoryPlan memory;
    size_t staging_bytes = 0;  // after memory.arena_bytes: the largest split's copies
  };
  struct Plan {
    std::vector<ArenaPlan> arenas;  // one per backend
    uint64_t graph_id = 0;          // Graph::id() the memory plans are keyed to
  };

  Plan make_plan(const Graph& g, const SchedulePlan& sp) const;
  bool is_bound(const Graph& g, const Plan& plan);
  Status run_split(const Split& s, const ArenaPlan& ap);
  Event& event_of(Backend& b);  // one reusable event per backend, made on first use
  Status order_after(Backend* from, Backend& to);

  Scheduler sched_;
  std::unordered_map<uint64_t, Plan> plans_;
  std::vector<std::unique_ptr<Buffer>> arenas_;  // one per backend
  const Plan* last_plan_ = nullptr;
  std::vector<std::unique_ptr<Event>> events_;  // one per backend, made on first use
  int n_copies_ = 0;
};

}  // namespace gl
