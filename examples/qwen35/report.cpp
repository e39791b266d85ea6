// report.cpp - streams generated text and prints speed and MTP acceptance.
#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace {

void print_report(const gl::qwen35::SessionStats& st, int mtp_k) {
  const double pp = st.t_prefill > 0 ? static_cast<double>(st.n_prompt) / st.t_prefill : 0.0;
  const double tg = st.t_generate > 0 ? static_cast<double>(st.n_generated) / st.t_generate : 0.0;
  fmt::print(stderr, "\n\nprefill: {} tokens in {:.3f} s ({:.1f} tok/s)\n", st.n_prompt, st.t_prefill, pp);
  fmt::print(stderr, "decode:  {} tokens in {:.3f} s ({:.1f} tok/s)\n", st.n_generated, st.t_generate, tg);
  if (mtp_k == 0) {
    fmt::print(stderr, "mtp:     off\n");
    return;
  }
  const gl::qwen35::SpecStats& sp = st.spec;
  fmt::print(stderr, "mtp:     k={} rounds={} acceptance={:.1f}% mean accepted length={:.2f} tokens/round\n", mtp_k,
             sp.rounds, 100.0 * sp.acceptance(), sp.mean_accepted_len());
  std::string per;
  for (size_t i = 0; i < sp.drafted.size(); ++i)
    per += fmt::format("{}d{}={:.1f}%", i ? " " : "", i + 1, 100.0 * sp.acceptance_at(i));
  fmt::print(stderr, "         per draft position: {}\n", per);
  fmt::print(stderr, "         time: catch-up {:.3f} s, draft {:.3f} s, verify {:.3f} s\n", sp.t_catchup, sp.t_draft,
             sp.t_verify);
}

struct BenchRow {
  double tok_s = 0;
  gl::qwen35::SpecStats spec;
  std::vector<int32_t> tokens;
};

gl::Result<BenchRow> bench_once(const gl::qwen35::Model& m, gl::Backend& be, const gl::qwen35::RunConfig& cfg,
                                const std::vector<int32_t>& prompt, int n) {
  auto s = gl::qwen35::Session::create(m, be, cfg);
  if (!s) return gl::Error(s.error());
  GL_TRY((*s)->prefill(prompt));
  BenchRow r;
  for (int i = 0; i < n; ++i) {
    auto t = (*s)->next();
    if (!t) return gl::Error(t.error());
    r.tokens.push_back(*t);
  }
  const auto& st = (*s)->stats();
  r.tok_s = st.t_generate > 0 ? static_cast<double>(st.n_generated) / st.t_generate : 0.0;
  r.spec = st.spec;
  return r;
}

}  // namespace

int bench_mtp(const gl::qwen35::Model& m, gl::Backend& be, const gl::qwen35::RunConfig& base,
              const std::vector<int32_t>& prompt, int n, int max_k, int reps) {
  fmt::print(
      "| K | decode tok/s (median of {}) | speedup | acceptance | per draft position | tokens/round | same tokens as "
      "K=0 |\n",
      reps);
  fmt::print("|---|---|---|---|---|---|---|\n");
  std::vector<int32_t> ref;
  double base_tok_s = 0;
  for (int k = 0; k <= max_k; ++k) {
    gl::qwen35::RunConfig cfg = base;
    cfg.mtp_k = k;
    std::vector<BenchRow> runs;
    for (int r = 0; r < reps + 1; ++r) {  // the first run warms up and is not counted
      auto row = bench_once(m, be, cfg, prompt, n);
      if (!row) return fmt::print(stderr, "qwen35: {}\n", row.error()), 1;
      if (r > 0) runs.push_back(std::move(*row));
    }
    std::sort(runs.begin(), runs.end(), [](const BenchRow& a, const BenchRow& b) { return a.tok_s < b.tok_s; });
    const BenchRow& med = runs[runs.size() / 2];
    if (k == 0) ref = med.tokens, base_tok_s = med.tok_s;
    std::string per;
    for (size_t i = 0; i < med.spec.drafted.size(); ++i)
      per += fmt::format("{}{:.0f}%", i ? " / " : "", 100.0 * med.spec.acceptance_at(i));
    fmt::print("| {} | {:.1f} | {:.2f}x | {} | {} | {} | {} |\n", k, med.tok_s, med.tok_s / base_tok_s,
               k ? fmt::format("{:.1f}%", 100.0 * med.spec.acceptance()) : "-", k ? per : "-",
               k ? fmt::format("{:.2f}", med.spec.mean_accepted_len()) : "1", med.tokens == ref ? "yes" : "NO");
  }
  return 0;
}

int generate(gl::qwen35::Session& s, const gl::Tokenizer& tok, const std::string& prompt, int n, bool ignore_eos,
             int mtp_k) {
  std::vector<int32_t> ids = tok.encode(prompt);
  if (tok.add_bos() && tok.bos_id() != gl::kNoToken) ids.insert(ids.begin(), tok.bos_id());
  if (ids.empty()) {
    fmt::print(stderr, "qwen35: the prompt encodes to no tokens\n");
    return 1;
  }
  if (auto st = s.prefill(ids); !st) {
    fmt::print(stderr, "qwen35: {}\n", st.error());
    return 1;
  }
  fmt::print("{}", prompt);
  std::fflush(stdout);
  gl::Utf8Stream out;
  for (int i = 0; i < n; ++i) {
    auto t = s.next();
    if (!t) {
      fmt::print(stderr, "\nqwen35: {}\n", t.error());
      return 1;
    }
    if (*t == tok.eos_id() && !ignore_eos) break;
    fmt::print("{}", out.push(tok.token_piece(*t)));
    std::fflush(stdout);
  }
  fmt::print("{}", out.flush());
  print_report(s.stats(), mtp_k);
  return 0;
}
