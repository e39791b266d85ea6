// executor.h - runs graphs: schedule, plan memory, allocate, compute.
//
//   gl::Executor ex({cpu.get()});
//   gl::Graph g = gl::Graph::build({y});
//   GL_TRY(ex.allocate(g));          // inputs now have data pointers
//   ex.set_input(*x, xs.data());     // host -> x
//   GL_TRY(ex.compute(g));
//   ex.get_output(*y, out.data());
//
// Plans are cached per graph fingerprint, so a step graph rebuilt with the
// same shapes is neither re-scheduled nor re-planned. The arena of each
// backend grows to the largest plan seen and is reused.
// For now one arena serves every backend, so several backends must all be
// host backends (allocate() returns an error otherwise), and splits that read
// memory of a device backend from elsewhere return "cross-backend copies not
// implemented yet". A graph allocated before the arena grew must be
// allocated again; compute() reports it instead of reading freed memory.
#pragma once

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
  void set_input(Tensor& t, const void* src);          // whole tensor, nbytes(t)
  void get_output(const Tensor& t, void* dst);        // whole tensor, nbytes(t)
  const MemoryPlan* last_plan() const { return last_plan_; }
  Scheduler& scheduler() { return sched_; }
  Buffer* arena() { return arena_.get(); }

 private:
  Scheduler sched_;
  std::unordered_map<uint64_t, MemoryPlan> plans_;
  std::unique_ptr<Buffer> arena_;
  const MemoryPlan* last_plan_ = nullptr;
};

}  // namespace gl
