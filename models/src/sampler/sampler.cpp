// sampler.cpp - filtered sampling distributions and speculative rejection sampling.
#include "ggml-lite/models/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gl {
namespace {

Error param_error(std::string_view field, double v, std::string_view range) {
  return Error(fmt::format("sampler: {} = {} is outside {}", field, v, range));
}

}  // namespace

Status SamplerParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) return param_error("temperature", temperature, "[0, inf)");
  if (top_k < 0) return param_error("top_k", top_k, "[0, n_vocab] (0: off)");
  if (!std::isfinite(top_p) || top_p <= 0.0f || top_p > 1.0f) return param_error("top_p", top_p, "(0, 1]");
  if (!std::isfinite(min_p) || min_p < 0.0f || min_p > 1.0f) return param_error("min_p", min_p, "[0, 1]");
  return {};
}

int32_t argmax(std::span<const float> values) {
  int32_t best = 0;
  float best_v = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (size_t i = 0; i < values.size(); ++i) {
    // Strictly greater keeps the lowest index on ties; NaN compares false and never wins.
    if (values[i] > best_v || (!found && values[i] == best_v)) {
      best = static_cast<int32_t>(i);
      best_v = values[i];
      found = true;
    }
  }
  return best;
}

Result<Sampler> Sampler::create(const SamplerParams& params) {
  GL_TRY(params.validate());
  return Sampler(params);
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
  GL_ASSERT(params.validate().ok(), "invalid SamplerParams (check with validate())");
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

std::vector<Sampler::Candidate> Sampler::filter(std::span<const float> logits) const {
  GL_ASSERT(!logits.empty(), "sampler: empty logits");
  const double temperature = params_.temperature;
  std::vector<Candidate> c;
  c.reserve(logits.size());
  bool pos_inf = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (std::isnan(x) || x == -std::numeric_limits<float>::infinity()) continue;
    pos_inf = pos_inf || std::isinf(x);
    c.push_back({static_cast<int32_t>(i), static_cast<double>(x) / temperature});
  }
  if (c.empty()) return {{argmax(logits), 1.0}};  // nothing possible: token 0, as argmax says
  if (pos_inf) {                                  // +inf logits share all the mass
    std::erase_if(c, [](const Candidate& a) { return !std::isinf(a.v); });
    for (Candidate& a : c) a.v = 0.0;
  }

  auto by_value = [](const Candidate& a, const Candidate& b) { return a.v != b.v ? a.v > b.v : a.id < b.id; };
  bool sorted = false;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < c.size()) {
    std::partial_sort(c.begin(), c.begin() + params_.top_k, c.end(), by_value);
    c.resize(static_cast<size_t>(params_.top_k));
    sorted = true;
  }

  double max_v = -std::numeric_limits<double>::infinity();
  for (const Candidate& a : c) max_v = std::max(max_v, a.v);
  double z = 0.0;
  for (Candidate& a : c) z += (a.v = std::exp(a.v - max_v));
  for (Candidate& a : c) a.v /= z;

  // min-p and top-p each keep a most-probable prefix of the same distribution, so applying
  // min-p first (no sort needed) and then top-p to the survivors keeps the shorter prefix.
  if (params_.min_p > 0.0f) {
    const double threshold = params_.min_p * (1.0 / z);  // the largest probability is exp(0) / z
    std::erase_if(c, [&](const Candidate& a) { return a.v < threshold; });
  }
  if (params_.top_p < 1.0f) {
    if (!sorted) std::sort(c.begin(), c.end(), by_value);
    sorted = true;
    double cum = 0.0;
    size_t keep = 0;
    while (keep < c.size() && cum < params_.top_p) cum += c[keep++].v;
    c.resize(keep);
  }

  z = 0.0;
  for (const Candidate& a : c) z += a.v;
  for (Candidate& a : c) a.v /= z;
  if (sorted) std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  return c;
}

int32_t Sampler::pick(const std::vector<Candidate>& c, double total) {
  GL_ASSERT(!c.empty() && total > 0.0, "sampler: a distribution with no mass");
  const double u = uniform() * total;
  double cum = 0.0;
  for (const Candidate& a : c) {
    cum += a.v;
    if (u < cum) return a.id;
  }
  return c.back().id;  // u landed in the rounding slack at the top
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (greedy()) return argmax(logits);
  return pick(filter(logits), 1.0);
}

std::vector<float> Sampler::probs(std::span<const float> logits) const {
  std::vector<float> out(logits.size(), 0.0f);
  if (greedy()) {
    GL_ASSERT(!logits.empty(), "sampler: empty logits");
    out[size_t(argmax(logits))] = 1.0f;
    return out;
  }
  for (const Candidate& a : filter(logits)) out[size_t(a.id)] = static_cast<float>(a.v);
  return out;
}

int32_t Sampler::sample_from(std::span<const float> probs) {
  std::vector<Candidate> c;
  double total = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] > 0.0f)) continue;  // zero, negative or NaN
    c.push_back({static_cast<int32_t>(i), probs[i]});
    total += probs[i];
  }
  return pick(c, total);
}

bool Sampler::accept_draft(int32_t draft, std::span<const float> p_target, std::span<const float> q_draft) {
  GL_ASSERT(p_target.size() == q_draft.size(), "accept_draft: p and q differ in size");
  GL_ASSERT(draft >= 0 && size_t(draft) < p_target.size(), "accept_draft: draft token out of range");
  // u < p/q without dividing: q[d] == 0 accepts exactly when p[d] > 0.
  const double u = uniform();
  return u * static_cast<double>(q_draft[size_t(draft)]) < static_cast<double>(p_target[size_t(draft)]);
}

int32_t Sampler::sample_residual(std::span<const float> p_target, std::span<const float> q_draft) {
  GL_ASSERT(p_target.size() == q_draft.size(), "sample_residual: p and q differ in size");
  std::vector<Candidate> r;
  double total = 0.0;
  for (size_t i = 0; i < p_target.size(); ++i) {
    const double d = static_cast<double>(p_target[i]) - static_cast<double>(q_draft[i]);
    if (!(d > 0.0)) continue;
    r.push_back({static_cast<int32_t>(i), d});
    total += d;
  }
  if (r.empty()) return sample_from(p_target);
  return pick(r, total);
}

}  // namespace gl
