// runner.h - runs Qwen3.5 step graphs over a cache: prefill in chunks, decode, verify, rollback.
//
//   gl::qwen35::Runner r(*model, *cpu, /*n_ctx=*/1024);
//   auto logits = r.eval(prompt, {static_cast<int32_t>(prompt.size()) - 1});  // last row only
//   auto next = r.eval(std::vector<int32_t>{tok}, {0});                       // decode one
//   r.eval(draft_block, all_rows, {.keep_states = true});                     // verify K+1 rows
//   GL_TRY(r.rollback(n_accepted + 1));                                       // keep a prefix
//
// Step graphs are built once per shape (tokens, KV bucket, outputs, states) and reused; the
// executor caches plans by graph fingerprint, so repeated steps cost no re-planning. With an MTP
// head, the runner is handed the Handoff (handoff.h) that owns the executor and the buffer its
// hidden_all steps write: Runner r(*model, io, n_ctx).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "ggml-lite/executor.h"
#include "ggml-lite/models/handoff.h"
#include "ggml-lite/models/qwen35.h"

namespace gl::qwen35 {

struct EvalOptions {
  bool keep_states = false;  // keep per-token GDN states and conv windows so rollback() works
  bool hidden_all = false;   // keep every row's pre-norm hidden state (for the MTP head)
};

class Runner {
 public:
  // A runner with its own executor and no hidden-row buffer.
  Runner(const Model& m, Backend& backend, int n_ctx, int kv_bucket = 256, DType kv_type = DType::F32);
  // Runs on io's executor; hidden_all steps copy their pre-norm rows into io.hidden() when it
  // has one (io must outlive the runner).
  Runner(const Model& m, Handoff& io, int n_ctx, int kv_bucket = 256, DType kv_type = DType::F32);

  // Runs tokens at positions cache().n_past.. and advances n_past. Returns the logits of
  // out_rows (indices into tokens), row-major [out_rows.size(), n_vocab].
  Result<std::vector<float>> eval(std::span<const int32_t> tokens, std::span<const int32_t> out_rows,
                                  const EvalOptions& opt = {});
  // Same step, but only each output row's argmax comes back (computed on the device): greedy
  // decoding reads n_outputs ints instead of n_outputs x n_vocab floats.
  Result<std::vector<int32_t>> eval_argmax(std::span<const int32_t> tokens, std::span<const int32_t> out_rows,
                                           const EvalOptions& opt = {});
  // n greedy decode steps from `token` (not yet in the cache), chained on the device: each
  // step's argmax is copied into the next step's token input without a host round trip, so the
  // host queues step i+1 while step i runs. Returns the n tokens, in order.
  Result<std::vector<int32_t>> decode_greedy(int32_t token, int n);
  // After an eval with keep_states: keep only the first n_keep tokens of that step (KV is
  // truncated, GDN state and conv window restored from the snapshot of row n_keep - 1).
  Status rollback(int n_keep);
  // The last step graph run (for dumps and for reading named tensors).
  const StepGraph* last_step() const { return last_; }
  Cache& cache() { return cache_; }
  Executor& executor() { return ex_; }

 private:
  StepGraph& step_for(const StepShape& shape);
  Result<StepGraph*> run(std::span<const int32_t> tokens, std::span<const int32_t> out_rows, const EvalOptions& opt);
  Status check_tokens(std::span<const int32_t> tokens, int n_steps) const;
  StepShape shape_for(int n_tokens, int n_outputs, const EvalOptions& opt) const;
  std::unique_ptr<Handoff> own_io_;  // set by the constructor without a Handoff
  Handoff& io_;
  const Model& m_;
  Backend& backend_;
  Cache cache_;
  Executor& ex_;  // io_'s
  int kv_bucket_;
  std::map<std::tuple<int, int, int, int, bool, bool>, StepGraph> steps_;
  StepGraph* last_ = nullptr;
  int last_start_ = 0;  // n_past before the last step
};

}  // namespace gl::qwen35
