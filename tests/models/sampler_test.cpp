// sampler_test.cpp - filters on hand-made distributions, determinism, and a goodness-of-fit test
// of the speculative rejection rule (with controls that show the test can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ggml-lite/models/sampler.h"

namespace gl::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> log_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(x > 0 ? static_cast<float>(std::log(x)) : -kInf);
  return l;
}

void expect_probs(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

// Pearson's statistic sum (O - E)^2 / E for counts over n draws against probabilities p.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double x2 = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = static_cast<double>(n) * p[i];
    x2 += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
  }
  return x2;
}

// ---------------------------------------------------------------- greedy and determinism

TEST(Sampler, GreedyTiesPickLowestIndex) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f};
  Sampler s;  // temperature 0
  EXPECT_TRUE(s.greedy());
  EXPECT_EQ(s.sample(logits), 1);
  expect_probs(s.probs(logits), {0, 1, 0, 0});
  EXPECT_EQ(argmax(std::vector<float>{std::nanf(""), 1.0f, 1.0f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, -kInf}), 0);
  // Greedy draws no random numbers.
  Sampler fresh;
  EXPECT_EQ(s.uniform(), fresh.uniform());
}

// The generator is std::mt19937_64, whose 10000th output from the default seed 5489 the C++
// standard fixes ([rand.predef]): uniform() must be its top 53 bits on every platform.
TEST(Sampler, UniformIsPinnedToTheStandardGenerator) {
  Sampler s({.temperature = 1.0f, .seed = 5489});
  for (int i = 0; i < 9999; ++i) (void)s.uniform();
  EXPECT_EQ(s.uniform(), static_cast<double>(9981545732273789042ull >> 11) * 0x1.0p-53);
}

TEST(Sampler, SameSeedSameTokens) {
  const std::vector<float> logits = log_of({0.1, 0.2, 0.3, 0.25, 0.15});
  Sampler a({.temperature = 1.0f, .seed = 42}), b({.temperature = 1.0f, .seed = 42});
  Sampler c({.temperature = 1.0f, .seed = 43});
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 1000; ++i) {
    ta.push_back(a.sample(logits));
    tb.push_back(b.sample(logits));
    tc.push_back(c.sample(logits));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  a.reseed(42);
  EXPECT_EQ(a.sample(logits), ta[0]);
}

// ---------------------------------------------------------------- filters, exact

TEST(Sampler, TemperatureScalesLogits) {
  const std::vector<float> logits = log_of({1.0 / 7, 2.0 / 7, 4.0 / 7});  // p ∝ 1, 2, 4
  expect_probs(Sampler({.temperature = 1.0f}).probs(logits), {1.0 / 7, 2.0 / 7, 4.0 / 7});
  expect_probs(Sampler({.temperature = 0.5f}).probs(logits), {1.0 / 21, 4.0 / 21, 16.0 / 21});  // p^2
  const double z = 3.0 + std::sqrt(2.0);                                                        // p^(1/2)
  expect_probs(Sampler({.temperature = 2.0f}).probs(logits), {1.0 / z, std::sqrt(2.0) / z, 2.0 / z});
}

TEST(Sampler, TopK) {
  const std::vector<float> logits = log_of({0.1, 0.4, 0.2, 0.3});
  expect_probs(Sampler({.temperature = 1.0f, .top_k = 2}).probs(logits), {0, 4.0 / 7, 0, 3.0 / 7});
  expect_probs(Sampler({.temperature = 1.0f, .top_k = 1}).probs(logits), {0, 1, 0, 0});
  expect_probs(Sampler({.temperature = 1.0f, .top_k = 9}).probs(logits), {0.1, 0.4, 0.2, 0.3});
  // Ties at the cut go to the lower index.
  expect_probs(Sampler({.temperature = 1.0f, .top_k = 2}).probs(std::vector<float>{1, 1, 1, 0}), {0.5, 0.5, 0, 0});
}

TEST(Sampler, TopP) {
  const std::vector<float> logits = log_of({0.1, 0.5, 0.15, 0.25});
  // Sorted: 0.5, 0.25 (cum 0.75), 0.15 (cum 0.9), 0.1: the smallest prefix reaching top_p.
  expect_probs(Sampler({.temperature = 1.0f, .top_p = 0.4f}).probs(logits), {0, 1, 0, 0});
  expect_probs(Sampler({.temperature = 1.0f, .top_p = 0.7f}).probs(logits), {0, 2.0 / 3, 0, 1.0 / 3});
  expect_probs(Sampler({.temperature = 1.0f, .top_p = 0.8f}).probs(logits), {0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
  expect_probs(Sampler({.temperature = 1.0f, .top_p = 1.0f}).probs(logits), {0.1, 0.5, 0.15, 0.25});
}

TEST(Sampler, MinP) {
  const std::vector<float> logits = log_of({0.1, 0.5, 0.15, 0.25});
  // Keep p >= min_p * 0.5.
  expect_probs(Sampler({.temperature = 1.0f, .min_p = 0.25f}).probs(logits), {0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
  expect_probs(Sampler({.temperature = 1.0f, .min_p = 0.35f}).probs(logits), {0, 2.0 / 3, 0, 1.0 / 3});
  expect_probs(Sampler({.temperature = 1.0f, .min_p = 0.6f}).probs(logits), {0, 1, 0, 0});
}

TEST(Sampler, FiltersCombineInOrder) {
  const std::vector<float> logits = log_of({0.1, 0.5, 0.15, 0.25});
  // top-k 3 -> {0.5, 0.25, 0.15} / 0.9 = {.556, .278, .167}; top-p 0.8 keeps .556 + .278 = .833.
  expect_probs(Sampler({.temperature = 1.0f, .top_k = 3, .top_p = 0.8f}).probs(logits), {0, 2.0 / 3, 0, 1.0 / 3});
  // min-p is relative to the top-k distribution: 0.2 * .556 = .111 keeps .167.
  expect_probs(Sampler({.temperature = 1.0f, .top_k = 3, .min_p = 0.2f}).probs(logits),
               {0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
  // Temperature comes first: at T = 0.5, p ∝ p^2 = {.01, .25, .0225, .0625} / .345, so top-p 0.8
  // keeps .725 and .181 (cumulative .906).
  expect_probs(Sampler({.temperature = 0.5f, .top_p = 0.8f}).probs(logits), {0, 0.25 / 0.3125, 0, 0.0625 / 0.3125});
}

TEST(Sampler, InfiniteAndNanLogits) {
  expect_probs(Sampler({.temperature = 1.0f}).probs(std::vector<float>{0, kInf, kInf, 1}), {0, 0.5, 0.5, 0});
  expect_probs(Sampler({.temperature = 1.0f}).probs(std::vector<float>{std::nanf(""), 0, -kInf, 0}), {0, 0.5, 0, 0.5});
}

// Samples follow probs(): Pearson chi-square over the kept tokens, df = 3, critical value at
// significance 0.001 is 16.266; filtered-out tokens never appear.
TEST(Sampler, SamplesFollowProbs) {
  const std::vector<float> logits = log_of({0.05, 0.3, 0.2, 0.1, 0.25, 0.1});
  Sampler s({.temperature = 0.8f, .top_k = 4, .seed = 7});
  const std::vector<float> pf = s.probs(logits);
  std::vector<double> p(pf.begin(), pf.end());
  const int64_t n = 100000;
  std::vector<int64_t> counts(p.size(), 0);
  for (int64_t i = 0; i < n; ++i) ++counts[size_t(s.sample(logits))];
  std::vector<int64_t> kept_counts;
  std::vector<double> kept_p;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "filtered token " << i << " was sampled";
    } else {
      kept_counts.push_back(counts[i]);
      kept_p.push_back(p[i]);
    }
  }
  ASSERT_EQ(kept_p.size(), 4u);
  EXPECT_LT(chi_square(kept_counts, kept_p, n), 16.266);
}

TEST(Sampler, ParamsAreValidated) {
  auto err = [](SamplerParams p) {
    Result<Sampler> s = Sampler::create(p);
    return s.ok() ? std::string() : s.error();
  };
  EXPECT_NE(err({.temperature = -1.0f}).find("sampler: temperature = -1"), std::string::npos);
  EXPECT_NE(err({.top_k = -3}).find("top_k = -3"), std::string::npos);
  EXPECT_NE(err({.top_p = 0.0f}).find("top_p = 0 is outside (0, 1]"), std::string::npos);
  EXPECT_NE(err({.top_p = 1.5f}).find("top_p = 1.5"), std::string::npos);
  EXPECT_NE(err({.min_p = 2.0f}).find("min_p = 2"), std::string::npos);
  EXPECT_NE(err({.temperature = std::nanf("")}).find("temperature"), std::string::npos);
  EXPECT_EQ(err({.temperature = 0.7f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f}), "");
}

// ---------------------------------------------------------------- speculative rejection sampling

TEST(SamplerSpeculative, AcceptanceEdgeCases) {
  Sampler s({.temperature = 1.0f, .seed = 1});
  const std::vector<float> p = {0.5f, 0.5f, 0.0f, 0.0f}, q = {0.25f, 0.25f, 0.5f, 0.0f};
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(s.accept_draft(0, p, q));   // p >= q: always
    EXPECT_FALSE(s.accept_draft(2, p, q));  // p == 0: never
    EXPECT_FALSE(s.accept_draft(3, p, q));  // p == q == 0: never
  }
  EXPECT_TRUE(s.accept_draft(1, p, std::vector<float>{0.5f, 0.0f, 0.5f, 0.0f}));  // q == 0 < p
  // Residual max(0, p - q) = {.25, .25, 0, 0}: only tokens 0 and 1.
  for (int i = 0; i < 1000; ++i) EXPECT_LT(s.sample_residual(p, q), 2);
  // p == q: the residual is all zero, so it samples from p.
  for (int i = 0; i < 1000; ++i) EXPECT_LT(s.sample_residual(p, p), 2);
}

enum class Residual { CORRECT, FROM_Q, FROM_P };

// N rounds of one speculative position: d ~ q, accept with min(1, p[d]/q[d]), else a residual
// token. Returns the counts of emitted tokens.
std::vector<int64_t> simulate(const std::vector<float>& p, const std::vector<float>& q, int64_t n, Residual mode) {
  Sampler s({.temperature = 1.0f, .seed = 20240601});
  std::vector<int64_t> counts(p.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t d = s.sample_from(q);
    int32_t t = d;
    if (!s.accept_draft(d, p, q)) {
      switch (mode) {
        case Residual::CORRECT: t = s.sample_residual(p, q); break;
        case Residual::FROM_Q: t = s.sample_from(q); break;
        case Residual::FROM_P: t = s.sample_from(p); break;
      }
    }
    ++counts[size_t(t)];
  }
  return counts;
}

// Emitted tokens must be distributed exactly as the target p. Pearson's chi-square goodness of
// fit over 8 tokens has df = 7; the critical value at significance 0.001 is chi2(0.999, 7) =
// 24.322, so a correct rule fails this test with probability 0.001 over seeds (the seed is fixed,
// so the test itself is deterministic). With this p and q, sum(min(p, q)) = 0.65: 35% of the
// drafts are rejected, so the residual step carries real weight.
TEST(SamplerSpeculative, EmittedTokensFollowTheTarget) {
  const std::vector<float> p = {0.30f, 0.20f, 0.15f, 0.10f, 0.10f, 0.07f, 0.05f, 0.03f};
  const std::vector<float> q = {0.10f, 0.10f, 0.10f, 0.20f, 0.20f, 0.10f, 0.10f, 0.10f};
  const std::vector<double> pd(p.begin(), p.end());
  const int64_t n = 200000;
  constexpr double kCritical = 24.322;
  const double x2 = chi_square(simulate(p, q, n, Residual::CORRECT), pd, n);
  EXPECT_LT(x2, kCritical) << "chi-square " << x2;
  // Controls: a wrong residual step emits min(p, q) + 0.35 * q (or + 0.35 * p), which the same
  // test must reject, or it would have no power.
  const double x2_q = chi_square(simulate(p, q, n, Residual::FROM_Q), pd, n);
  const double x2_p = chi_square(simulate(p, q, n, Residual::FROM_P), pd, n);
  EXPECT_GT(x2_q, kCritical) << "chi-square " << x2_q;
  EXPECT_GT(x2_p, kCritical) << "chi-square " << x2_p;
}

// Greedy speculative decoding is the special case of one-hot p and q: accept iff equal.
TEST(SamplerSpeculative, GreedyAcceptsOnlyTheArgmax) {
  Sampler s;
  const std::vector<float> target = {0.1f, 2.0f, 0.3f}, draft_same = {0.0f, 5.0f, 1.0f}, draft_other = {3, 0, 1};
  const std::vector<float> p = s.probs(target);
  EXPECT_TRUE(s.accept_draft(1, p, s.probs(draft_same)));
  EXPECT_FALSE(s.accept_draft(0, p, s.probs(draft_other)));
  EXPECT_EQ(s.sample_residual(p, s.probs(draft_other)), 1);
}

}  // namespace
}  // namespace gl::test
