// report.cpp - streams generated text and prints speed and MTP acceptance.
#include "report.h"

#include <fmt/format.h>

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

}  // namespace

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
