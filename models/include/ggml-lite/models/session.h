// session.h - generation with optional MTP speculative decoding.
//
//   gl::qwen35::RunConfig cfg;
//   cfg.mtp_k = 3;                       // 3 drafts per round; 0 = plain decoding
//   cfg.sampling.temperature = 0.0f;     // greedy
//   auto s = gl::qwen35::Session::create(*model, *cpu, cfg);
//   GL_TRY((*s)->prefill(prompt_ids));
//   for (int i = 0; i < 128; ++i) { auto t = (*s)->next(); if (!t) ...; emit(*t); }
//   (*s)->stats().spec.acceptance();
//
// With MTP on, every prefill chunk also fills the MTP KV cache from the trunk's hidden rows; each
// round drafts K tokens (the first from the catch-up rows, then K-1 chained steps), verifies
// [x_last, d_1..d_K] in one trunk forward with logits on all rows, accepts greedily (or by rejection
// sampling when temperature > 0), emits the correction or bonus token, and rolls the trunk back to
// the last accepted row from its state snapshots. Greedy output equals plain greedy decoding.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "ggml-lite/models/mtp.h"
#include "ggml-lite/models/runner.h"
#include "ggml-lite/models/sampler.h"

namespace gl::qwen35 {

struct RunConfig {
  int n_ctx = 4096;
  int n_batch = 256;  // prefill chunk size
  int mtp_k = 0;      // draft tokens per speculative round; 0 = off
  // Adaptive K: a round stops drafting once the product of its drafts' probabilities (the MTP
  // head's softmax at each greedy draft) falls below this; that draft is not verified, and a
  // round whose first draft falls below it verifies the last token alone. 0 = always mtp_k drafts.
  // Greedy output does not depend on it (every draft is still checked by the trunk).
  float mtp_p_min = 0.0f;
  int kv_bucket = 256;  // attention spans are rounded up to this (graph shape buckets)
  // Greedy plain decoding chains this many steps on the device per host round trip (each step's
  // pick feeds the next without a sync); up to greedy_chain - 1 tokens are computed ahead of
  // what next() has returned. 1 = one step per call.
  int greedy_chain = 8;
  SamplerParams sampling;
  MtpTap mtp_tap = kQwen35MtpTap;
  // Benchmarks only: accept every draft without checking it, so a random-weight model runs
  // the speculative loop at its ceiling. The output is NOT the model's.
  bool force_accept = false;
  // Applied to the backend when the session is made (Backend::set_precision): EXACT is the
  // CUDA two-GEMM path, FAST one rounded GEMM (CPU: int8 activations for quantized weights).
  Precision precision = Precision::EXACT;
  // How the attention layers' K/V cache stores its rows: F32 (the exact math) or F16 (half the
  // bytes a long-context step reads; each K and V value rounded to F16 once, as llama.cpp's
  // default cache does).
  DType kv_type = DType::F32;
};

// The K/V cache type the examples take when none is given: F16 under FAST (llama.cpp's default
// cache, and the tensor-core attention path of prefill on CUDA), F32 under EXACT.
constexpr DType default_kv_type(Precision p) { return p == Precision::FAST ? DType::F16 : DType::F32; }

struct SpecStats {
  std::vector<int64_t> drafted;   // per draft position (0 = first draft): drafts made there
  std::vector<int64_t> accepted;  // per draft position: drafts accepted there (all earlier ones were too)
  int64_t rounds = 0;
  int64_t emitted = 0;                              // tokens emitted by rounds (accepted + correction/bonus)
  double t_draft = 0, t_verify = 0, t_catchup = 0;  // seconds
  int64_t n_draft_steps = 0, n_verify_steps = 0, n_catchup_steps = 0;  // steps behind those times
  double acceptance() const;                                           // accepted / drafted over all positions
  double acceptance_at(size_t i) const;
  double mean_accepted_len() const;  // tokens emitted per round (1 + accepted per round)
};

struct SessionStats {
  int64_t n_prompt = 0;
  double t_prefill = 0;  // seconds, including MTP KV fill
  int64_t n_generated = 0;
  double t_generate = 0;
  SpecStats spec;
};

class Session {
 public:
  // Errors: mtp_k > 0 on a model without MTP tensors, a context too small for the settings.
  static Result<std::unique_ptr<Session>> create(const Model& m, Backend& backend, const RunConfig& cfg);
  // Runs the prompt (in chunks of n_batch) and samples the first token.
  Status prefill(std::span<const int32_t> prompt);
  // The next generated token.
  Result<int32_t> next();
  const SessionStats& stats() const { return stats_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }  // prompt + emitted
  Runner& runner() { return runner_; }

 private:
  Session(const Model& m, Backend& backend, const RunConfig& cfg);
  Status prefill_mtp_chunk(int start, int len, bool last_chunk);
  Status speculative_round();
  Status plain_step();
  struct Verdict;
  Result<Verdict> verify(std::span<const int32_t> block, std::span<const int32_t> rows);
  Result<int32_t> step_token(std::span<const int32_t> tokens, int row, const EvalOptions& opt);
  bool greedy() const { return cfg_.sampling.temperature <= 0.0f; }
  bool adaptive() const { return cfg_.mtp_p_min > 0.0f && !cfg_.force_accept; }
  struct Draft {
    int32_t token = -1;
    float p = 1.0f;  // its probability under the MTP head (1 when mtp_p_min is 0: not computed)
  };
  Result<Draft> draft(int n_rows, bool from_trunk, const int32_t* tokens, int pos0, int h_row0);
  MtpGraph& mtp_step(const MtpShape& shape);
  AttnSpan kv_span(int pos0, int n_rows) const;
  int32_t pick(std::span<const float> logits);
  int32_t check_draft(int32_t d, std::span<const float> logits);

  const Model& m_;
  RunConfig cfg_;
  std::unique_ptr<Handoff> io_;  // the executor and hidden rows the trunk and the MTP head share
  Runner runner_;
  std::unique_ptr<MtpCache> mtp_;
  std::map<std::tuple<int, int, bool, int, bool, bool>, MtpGraph> mtp_steps_;
  Sampler sampler_;
  std::vector<int32_t> tokens_;  // prompt + emitted; the last one is not yet in the trunk
  std::deque<int32_t> pending_;  // emitted but not yet returned by next()
  int n_catchup_ = 0;            // trunk rows whose MTP KV still waits for their next token
  int catchup_row0_ = 0;         // their first row in io_->hidden()
  SessionStats stats_;
};

}  // namespace gl::qwen35
