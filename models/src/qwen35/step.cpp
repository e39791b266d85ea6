// step.cpp - the trunk step graph: embeddings, hybrid layers, output-row slicing, LM head.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "ggml-lite/executor.h"
#include "layers.h"

namespace gl::qwen35 {
namespace {

StepInputs make_inputs(Context& c, const StepShape& sh) {
  StepInputs in;
  in.tokens = c.new_tensor(DType::I32, {sh.n_tokens}, "inp_tokens");
  in.pos = c.new_tensor(DType::I32, {sh.n_tokens}, "inp_pos");
  if (!sh.causal) in.kq_mask = c.new_tensor(DType::F32, {sh.n_kv, sh.n_tokens}, "inp_kq_mask");
  in.out_ids = c.new_tensor(DType::I32, {sh.n_outputs}, "inp_out_ids");
  for (Tensor* t : {in.tokens, in.pos, in.kq_mask, in.out_ids})
    if (t) t->flags |= TENSOR_INPUT;
  return in;
}

}  // namespace

AttnSpan attention_span(int n_past, int n_tokens, int n_ctx, int bucket) {
  const int end = n_past + n_tokens;
  const int bucketed = std::min(n_ctx, (end + bucket - 1) / bucket * bucket);
  const int64_t mask_bytes = int64_t{bucketed} * n_tokens * int64_t{sizeof(float)};
  if (n_tokens > kCausalMinTokens && mask_bytes > kMaskMaxBytes) return {end, true};
  return {bucketed, false};
}

StepGraph build_step(const Model& m, Cache& cache, const StepShape& shape, Tensor* hidden_sink) {
  const Hparams& hp = m.hparams();
  GL_ASSERT(shape.n_kv <= cache.n_ctx() && shape.n_tokens <= shape.n_kv, "step does not fit the cache");
  GL_ASSERT(shape.n_outputs >= 1 && shape.n_outputs <= shape.n_tokens, "bad n_outputs");
  StepGraph sg;
  sg.ctx = std::make_unique<Context>();
  sg.shape = shape;
  Context& c = *sg.ctx;
  sg.in = make_inputs(c, shape);
  std::vector<Tensor*> effects;
  detail::StepCtx s{c, hp, sg.shape, sg.in, effects};

  Tensor* h = set_name(get_rows(c, m.tok_embd, sg.in.tokens), "embd");  // [n_embd, T]
  for (int il = 0; il < hp.n_layer; ++il) {
    const LayerWeights& w = m.layers[il];
    Tensor* a = detail::norm(s, h, w.attn_norm, "attn_norm", il);
    Tensor* mix = nullptr;
    if (hp.is_recurrent(il)) {
      detail::GdnOut g = detail::gated_delta_net(s, w, a, cache.conv[il], cache.state[il], il);
      mix = g.out;
      sg.gdn_states.push_back(g.states);
      sg.conv_windows.push_back(g.window);
    } else {
      mix = detail::attention(s, w, a, cache.k[il], cache.v[il], il);
    }
    // Rows that need no logits are dropped after the last mixer, unless the MTP head needs
    // every row's hidden state.
    if (il == hp.n_layer - 1 && !shape.hidden_all) {
      mix = get_rows(c, mix, sg.in.out_ids);
      h = get_rows(c, h, sg.in.out_ids);
    }
    Tensor* u = set_name(add(c, h, mix), fmt::format("attn_residual-{}", il));
    Tensor* f = detail::ffn(s, w, detail::norm(s, u, w.post_attention_norm, "ffn_norm", il), il);
    h = set_name(add(c, u, f), fmt::format("l_out-{}", il));
  }
  sg.hidden = set_name(h, "h_pre_norm");
  Tensor* rows = shape.hidden_all ? get_rows(c, h, sg.in.out_ids) : h;
  Tensor* hn = detail::norm(s, rows, m.output_norm, "result_norm", -1);
  sg.logits = set_name(mul_mat(c, m.output, hn), "result_output");  // [n_vocab, n_outputs]
  sg.argmax = set_name(argmax(c, sg.logits), "result_argmax");      // greedy picks, read without the logits

  std::vector<Tensor*> roots{sg.logits, sg.argmax, sg.hidden};
  if (hidden_sink) {
    GL_ASSERT(shape.hidden_all && hidden_sink->ne[1] >= shape.n_tokens, "hidden sink needs every row");
    roots.push_back(cpy(c, h, view_2d(c, hidden_sink, hp.n_embd, shape.n_tokens, hidden_sink->nb[1], 0)));
  }
  if (shape.n_states > 1)  // verify steps keep per-token states and windows for rollback
    for (size_t i = 0; i < sg.gdn_states.size(); ++i) roots.insert(roots.end(), {sg.gdn_states[i], sg.conv_windows[i]});
  roots.insert(roots.end(), effects.begin(), effects.end());
  sg.graph = Graph::build(roots);
  return sg;
}

void fill_step_inputs(const StepGraph& g, Executor& ex, const int32_t* tokens, int n_past, const int32_t* out_rows) {
  const StepShape& sh = g.shape;
  std::vector<int32_t> pos(static_cast<size_t>(sh.n_tokens));
  for (int i = 0; i < sh.n_tokens; ++i) pos[i] = n_past + i;
  GL_ASSERT(!sh.causal || sh.n_kv == n_past + sh.n_tokens, "a causal step's span ends at its last token");
  ex.set_input(*g.in.tokens, tokens);
  ex.set_input(*g.in.pos, pos.data());
  if (g.in.kq_mask) ex.set_input(*g.in.kq_mask, detail::causal_mask(sh.n_kv, sh.n_tokens, n_past).data());
  ex.set_input(*g.in.out_ids, out_rows);
}

}  // namespace gl::qwen35
