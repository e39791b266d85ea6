// sampler.h - token sampling (greedy, temperature, top-k, top-p, min-p) and the rejection rule
// of speculative decoding.
//
//   gl::Result<gl::Sampler> s = gl::Sampler::create({.temperature = 0.7f, .top_p = 0.9f, .seed = 42});
//   if (!s) { fmt::print(stderr, "{}\n", s.error()); return 1; }
//   int32_t next = s->sample(logits);                   // logits: one row, n_vocab floats
//
//   // One speculative position: draft d ~ q from the draft model, checked against the target.
//   std::vector<float> q = s->probs(draft_logits);
//   int32_t d = s->sample_from(q);
//   std::vector<float> p = s->probs(target_logits);
//   int32_t emitted = s->accept_draft(d, p, q) ? d : s->sample_residual(p, q);
//
// The distribution is built in double, in this order (as Hugging Face transformers and vLLM do):
//   1. divide logits by temperature (temperature 0: greedy, the argmax, lowest index on ties);
//   2. top-k: keep the k largest (ties at the cut go to the lower index);
//   3. softmax over what is left;
//   4. top-p: keep the smallest most-probable prefix whose mass reaches top_p;
//   5. min-p: keep tokens with p >= min_p * max p (computed on the same distribution as 4);
//   6. renormalise.
// NaN logits count as -inf. Greedy sampling draws no random numbers.
//
// Randomness: std::mt19937_64 (its output sequence is fixed by the C++ standard) seeded with
// `seed`; a uniform double in [0, 1) is the top 53 bits of one output times 2^-53, so results are
// the same on every platform (std::uniform_real_distribution is implementation-defined).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "ggml-lite/status.h"

namespace gl {

struct SamplerParams {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off; (0, 1]
  float min_p = 0.0f;        // 0: off; [0, 1]
  uint64_t seed = 0;
  // Errors name the field: "sampler: top_p = 1.5 is outside (0, 1]".
  Status validate() const;
};

// The index of the largest value, the lowest index on ties; NaN never wins (0 if all are NaN).
int32_t argmax(std::span<const float> values);

class Sampler {
 public:
  static Result<Sampler> create(const SamplerParams& params);
  explicit Sampler(const SamplerParams& params = {});  // params must validate() (asserted)

  const SamplerParams& params() const { return params_; }
  bool greedy() const { return params_.temperature <= 0.0f; }
  void reseed(uint64_t seed) { rng_.seed(seed); }

  // One token from the filtered distribution of logits (argmax when greedy).
  int32_t sample(std::span<const float> logits);
  // The filtered, renormalised distribution over all logits.size() tokens (one-hot when greedy).
  std::vector<float> probs(std::span<const float> logits) const;
  // One token from a distribution, e.g. from probs(); it need not sum exactly to 1 but must have
  // positive mass (asserted).
  int32_t sample_from(std::span<const float> probs);

  // Speculative decoding (Leviathan et al. 2023, Chen et al. 2023): a draft token d sampled from
  // the draft distribution q is accepted with probability min(1, p[d] / q[d]), p the target
  // distribution. Draws one uniform u and accepts when u * q[d] < p[d].
  bool accept_draft(int32_t draft, std::span<const float> p_target, std::span<const float> q_draft);
  // After a rejection: one token from max(0, p - q) renormalised, or from p when that is all zero.
  // Together with accept_draft this emits tokens distributed exactly as p.
  int32_t sample_residual(std::span<const float> p_target, std::span<const float> q_draft);

  // The next uniform double in [0, 1), 53 random bits.
  double uniform();

 private:
  struct Candidate {
    int32_t id;
    double v;  // scaled logit, then probability
  };
  // Candidates of the filtered distribution, probabilities summing to 1, in id order.
  std::vector<Candidate> filter(std::span<const float> logits) const;
  int32_t pick(const std::vector<Candidate>& c, double total);

  SamplerParams params_;
  std::mt19937_64 rng_;
};

}  // namespace gl
