// runner.cpp - step execution over a cache, with snapshot rollback for verify steps.
#include "ggml-lite/models/runner.h"

#include <fmt/format.h>

#include <algorithm>

namespace gl::qwen35 {

Runner::Runner(const Model& m, Backend& backend, int n_ctx, int kv_bucket, DType kv_type)
    : own_io_(std::make_unique<Handoff>(m, backend)),
      io_(*own_io_),
      m_(m),
      backend_(backend),
      cache_(m, n_ctx, backend, kv_type),
      ex_(io_.executor()),
      kv_bucket_(kv_bucket) {}

Runner::Runner(const Model& m, Handoff& io, int n_ctx, int kv_bucket, DType kv_type)
    : io_(io),
      m_(m),
      backend_(io.backend()),
      cache_(m, n_ctx, io.backend(), kv_type),
      ex_(io.executor()),
      kv_bucket_(kv_bucket) {}

StepGraph& Runner::step_for(const StepShape& sh) {
  const auto key = std::make_tuple(sh.n_tokens, sh.n_kv, sh.n_outputs, sh.n_states, sh.hidden_all, sh.causal);
  auto it = steps_.find(key);
  if (it == steps_.end())
    it = steps_.emplace(key, build_step(m_, cache_, sh, sh.hidden_all ? io_.hidden() : nullptr)).first;
  return it->second;
}

Status Runner::check_tokens(std::span<const int32_t> tokens, int n_steps) const {
  GL_TRY(cache_.status());
  const int n_past = cache_.n_past;
  if (n_past + n_steps > cache_.n_ctx())
    return Error(
        fmt::format("eval: {} tokens at position {} exceed the context of {}", n_steps, n_past, cache_.n_ctx()));
  for (int32_t t : tokens)
    if (t < 0 || t >= m_.hparams().n_vocab)
      return Error(fmt::format("eval: token id {} is outside the vocabulary ({})", t, m_.hparams().n_vocab));
  return {};
}

StepShape Runner::shape_for(int n_tokens, int n_outputs, const EvalOptions& opt) const {
  StepShape sh;
  sh.n_tokens = n_tokens;
  const AttnSpan span = attention_span(cache_.n_past, n_tokens, cache_.n_ctx(), kv_bucket_);
  sh.n_kv = span.n_kv;
  sh.causal = span.causal;
  sh.n_outputs = n_outputs;
  sh.n_states = opt.keep_states ? n_tokens : 1;
  sh.hidden_all = opt.hidden_all;
  return sh;
}

Result<StepGraph*> Runner::run(std::span<const int32_t> tokens, std::span<const int32_t> out_rows,
                               const EvalOptions& opt) {
  const int n = static_cast<int>(tokens.size());
  const int n_past = cache_.n_past;
  if (n == 0 || out_rows.empty()) return Error("eval: no tokens or no output rows");
  GL_TRY(check_tokens(tokens, n));
  for (int32_t r : out_rows)
    if (r < 0 || r >= n) return Error(fmt::format("eval: output row {} is outside the {} tokens", r, n));

  StepGraph& g = step_for(shape_for(n, static_cast<int>(out_rows.size()), opt));
  GL_TRY(ex_.allocate(g.graph));
  fill_step_inputs(g, ex_, tokens.data(), n_past, out_rows.data());
  GL_TRY(ex_.compute(g.graph));
  last_ = &g;
  last_start_ = n_past;
  cache_.n_past = n_past + n;
  return &g;
}

Result<std::vector<int32_t>> Runner::decode_greedy(int32_t token, int n) {
  if (n < 1) return Error("decode_greedy: no steps");
  GL_TRY(check_tokens(std::span(&token, 1), n));
  // Each step's pick goes to ids[i] on the device (the arena slot of a step's argmax may be
  // re-planned when the KV bucket changes), and from there into the next step's token input.
  Context c;
  Tensor* ids = c.new_tensor(DType::I32, {n}, "greedy_ids");
  std::unique_ptr<Buffer> buf = backend_.alloc_buffer(nbytes(*ids), BufferUsage::COMPUTE);
  if (!buf) return Error(fmt::format("decode_greedy: {} could not allocate {} bytes", backend_.name(), nbytes(*ids)));
  buf->bind(*ids, 0);
  const int32_t row0 = 0;
  // An error at step i leaves the cache as steps 0..i-1 (already queued) made it, and n_past says
  // so; their tokens are not returned, so a session that sees the error cannot continue.
  const int start = cache_.n_past;
  for (int i = 0; i < n; ++i) {
    const int n_past = start + i;
    cache_.n_past = n_past;  // shape_for() sizes the KV span from it
    StepGraph& g = step_for(shape_for(1, 1, {}));
    GL_TRY(ex_.allocate(g.graph));
    fill_step_inputs(g, ex_, &token, n_past, &row0);  // token: the first step's; later ones are replaced
    if (i > 0)
      backend_.copy_tensor(*ids, static_cast<size_t>(i - 1) * sizeof(int32_t), *g.in.tokens, 0, sizeof(int32_t));
    GL_TRY(ex_.compute_queued(g.graph));
    backend_.copy_tensor(*g.argmax, 0, *ids, static_cast<size_t>(i) * sizeof(int32_t), sizeof(int32_t));
    last_ = &g;
    last_start_ = n_past;
  }
  cache_.n_past = start + n;
  std::vector<int32_t> out(static_cast<size_t>(n));
  GL_TRY(backend_.synchronize());  // a device fault in any step comes back here, not as an abort
  backend_.get_tensor(*ids, out.data(), 0, nbytes(*ids));
  return out;
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
