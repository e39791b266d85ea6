// runner.cpp - step execution over a cache, with snapshot rollback for verify steps.
#include "ggml-lite/models/runner.h"

#include <fmt/format.h>

#include <algorithm>

namespace gl::qwen35 {

Runner::Runner(const Model& m, Backend& backend, int n_ctx, int kv_bucket)
    : m_(m), backend_(backend), cache_(m, n_ctx, backend), ex_({&backend}), kv_bucket_(kv_bucket) {}

StepGraph& Runner::step_for(const StepShape& sh) {
  const auto key = std::make_tuple(sh.n_tokens, sh.n_kv, sh.n_outputs, sh.n_states, sh.hidden_all);
  auto it = steps_.find(key);
  if (it == steps_.end())
    it = steps_.emplace(key, build_step(m_, cache_, sh, sh.hidden_all ? hidden_sink_ : nullptr)).first;
  return it->second;
}

Result<StepGraph*> Runner::run(std::span<const int32_t> tokens, std::span<const int32_t> out_rows,
                               const EvalOptions& opt) {
  const int n = static_cast<int>(tokens.size());
  const int n_past = cache_.n_past;
  if (n == 0 || out_rows.empty()) return Error("eval: no tokens or no output rows");
  if (n_past + n > cache_.n_ctx())
    return Error(fmt::format("eval: {} tokens at position {} exceed the context of {}", n, n_past, cache_.n_ctx()));
  for (int32_t r : out_rows)
    if (r < 0 || r >= n) return Error(fmt::format("eval: output row {} is outside the {} tokens", r, n));
  for (int32_t t : tokens)
    if (t < 0 || t >= m_.hparams().n_vocab)
      return Error(fmt::format("eval: token id {} is outside the vocabulary ({})", t, m_.hparams().n_vocab));

  StepShape sh;
  sh.n_tokens = n;
  sh.n_kv = std::min(cache_.n_ctx(), (n_past + n + kv_bucket_ - 1) / kv_bucket_ * kv_bucket_);
  sh.n_outputs = static_cast<int>(out_rows.size());
  sh.n_states = opt.keep_states ? n : 1;
  sh.hidden_all = opt.hidden_all;
  StepGraph& g = step_for(sh);
  GL_TRY(ex_.allocate(g.graph));
  fill_step_inputs(g, ex_, tokens.data(), n_past, out_rows.data());
  GL_TRY(ex_.compute(g.graph));
  last_ = &g;
  last_start_ = n_past;
  cache_.n_past = n_past + n;
  return &g;
}

Result<std::vector<float>> Runner::eval(std::span<const int32_t> tokens, std::span<const int32_t> out_rows,
                                        const EvalOptions& opt) {
  Result<StepGraph*> g = run(tokens, out_rows, opt);
  if (!g) return Error(g.error());
  std::vector<float> logits(out_rows.size() * static_cast<size_t>(m_.hparams().n_vocab));
  ex_.get_output(*(*g)->logits, logits.data());
  return logits;
}

Result<std::vector<int32_t>> Runner::eval_argmax(std::span<const int32_t> tokens, std::span<const int32_t> out_rows,
                                                 const EvalOptions& opt) {
  Result<StepGraph*> g = run(tokens, out_rows, opt);
  if (!g) return Error(g.error());
  std::vector<int32_t> ids(out_rows.size());
  ex_.get_output(*(*g)->argmax, ids.data());
  return ids;
}

Status Runner::rollback(int n_keep) {
  if (!last_ || n_keep < 1 || n_keep > last_->shape.n_tokens)
    return Error(fmt::format("rollback: cannot keep {} tokens of the last step", n_keep));
  if (n_keep == last_->shape.n_tokens) return {};
  if (last_->shape.n_states != last_->shape.n_tokens) return Error("rollback: the last step kept no states");
  // Device-side copies, queued behind the verify step: no host round trip.
  const Hparams& hp = m_.hparams();
  size_t gi = 0;
  for (int il = 0; il < hp.n_layer; ++il) {
    if (!hp.is_recurrent(il)) continue;
    const Tensor* states = last_->gdn_states[gi];
    const Tensor* window = last_->conv_windows[gi++];
    const size_t state_bytes = nbytes(*cache_.state[il]);
    backend_.copy_tensor(*states, static_cast<size_t>(n_keep - 1) * state_bytes, *cache_.state[il], 0, state_bytes);
    // The conv state after token t is window columns t+1 .. t+Kc-1.
    const size_t col = static_cast<size_t>(hp.conv_dim()) * sizeof(float);
    backend_.copy_tensor(*window, static_cast<size_t>(n_keep) * col, *cache_.conv[il], 0, nbytes(*cache_.conv[il]));
  }
  cache_.n_past = last_start_ + n_keep;
  return {};
}

}  // namespace gl::qwen35
