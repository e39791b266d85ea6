// mtp.cpp - the MTP head step graph and its cache (spec section 8).
#include "ggml-lite/models/mtp.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "layers.h"
#include "persistent.h"

namespace gl::qwen35 {

MtpCache::MtpCache(const Model& m, int n_ctx, Backend& backend, DType kv_type) : backend_(backend), n_ctx_(n_ctx) {
  const Hparams& hp = m.hparams();
  GL_ASSERT(m.has_mtp(), "the model has no MTP layer");
  const int64_t row = hp.head_dim * hp.n_head_kv;
  k = ctx_.new_tensor(kv_type, {row, n_ctx}, "mtp_cache_k");
  v = ctx_.new_tensor(kv_type, {row, n_ctx}, "mtp_cache_v");
  h_chain = ctx_.new_tensor(DType::F32, {hp.n_embd, 1}, "mtp_h_chain");
  buf_ = detail::alloc_persistent(ctx_, backend);
  status_ = detail::persistent_status(buf_.get(), ctx_, backend, "MTP cache");
}

void MtpCache::clear() { detail::zero_all(ctx_, backend_); }

MtpGraph build_mtp_step(const Model& m, MtpCache& mc, const Handoff& io, const MtpShape& shape) {
  const Hparams& hp = m.hparams();
  const LayerWeights& w = m.layers[static_cast<size_t>(hp.n_layer)];
  GL_ASSERT(shape.n_rows >= 1 && shape.n_rows <= shape.n_kv && shape.n_kv <= mc.n_ctx(), "bad MTP shape");
  GL_ASSERT(shape.n_outputs >= 0 && shape.n_outputs <= shape.n_rows, "bad MTP n_outputs");
  GL_ASSERT(!shape.from_trunk || (io.hidden() && io.hidden()->ne[1] >= shape.n_rows),
            "an MTP step from the trunk needs a Handoff with n_rows hidden rows");
  MtpGraph g;
  g.ctx = std::make_unique<Context>();
  g.shape = shape;
  Context& c = *g.ctx;
  const int R = shape.n_rows;
  g.in.tokens = c.new_tensor(DType::I32, {R}, "mtp_inp_tokens");
  g.in.pos = c.new_tensor(DType::I32, {R}, "mtp_inp_pos");
  g.in.h_rows = c.new_tensor(DType::I32, {R}, "mtp_inp_h_rows");
  if (!shape.causal) g.in.kq_mask = c.new_tensor(DType::F32, {shape.n_kv, R}, "mtp_inp_kq_mask");
  g.in.out_ids = c.new_tensor(DType::I32, {std::max(shape.n_outputs, 1)}, "mtp_inp_out_ids");
  for (Tensor* t : {g.in.tokens, g.in.pos, g.in.h_rows, g.in.kq_mask, g.in.out_ids})
    if (t) t->flags |= TENSOR_INPUT;

  std::vector<Tensor*> effects;
  StepShape step{.n_tokens = R, .n_kv = shape.n_kv, .n_outputs = 1, .causal = shape.causal};
  StepInputs sin{.tokens = g.in.tokens, .pos = g.in.pos, .kq_mask = g.in.kq_mask, .out_ids = g.in.out_ids};
  detail::StepCtx s{c, hp, step, sin, effects};
  const int il = hp.n_layer;

  Tensor* h = get_rows(c, shape.from_trunk ? io.hidden() : mc.h_chain, g.in.h_rows);  // [n_embd, R]
  if (shape.from_trunk && shape.tap == MtpTap::NORMED) h = detail::norm(s, h, m.output_norm, "mtp_h_normed", -1);
  Tensor* e = get_rows(c, m.tok_embd, g.in.tokens);
  Tensor* ch = concat(c, detail::norm(s, e, w.enorm, "mtp_enorm", -1), detail::norm(s, h, w.hnorm, "mtp_hnorm", -1), 0);
  Tensor* u = set_name(mul_mat(c, w.eh_proj, ch), "mtp_eh_proj");  // [n_embd, R]

  Tensor* a = detail::norm(s, u, w.attn_norm, "attn_norm", il);
  u = set_name(add(c, u, detail::attention(s, w, a, mc.k, mc.v, il)), "mtp_attn_residual");
  u = set_name(add(c, u, detail::ffn(s, w, detail::norm(s, u, w.post_attention_norm, "ffn_norm", il), il)), "mtp_out");
  Tensor* head_norm = w.shared_head_norm ? w.shared_head_norm : m.output_norm;
  g.h_mtp = detail::norm(s, u, head_norm, "mtp_h", -1);

  std::vector<Tensor*> roots{g.h_mtp};
  if (shape.n_outputs > 0) {
    // The LM head only on the rows that draft; the last row also feeds the next chained draft.
    g.logits = set_name(mul_mat(c, m.output, get_rows(c, g.h_mtp, g.in.out_ids)), "mtp_logits");
    Tensor* last = view_2d(c, g.h_mtp, hp.n_embd, 1, g.h_mtp->nb[1], static_cast<size_t>(R - 1) * g.h_mtp->nb[1]);
    g.argmax = set_name(argmax(c, g.logits), "mtp_argmax");
    roots.insert(roots.end(), {g.logits, g.argmax, cpy(c, last, mc.h_chain)});
    if (shape.confidence && shape.n_outputs == 1) {  // the draft's own probability, for adaptive K
      Tensor* probs = softmax(c, g.logits, nullptr, 1.0f, false);
      g.p_draft = set_name(get_rows(c, reshape(c, probs, {1, hp.n_vocab}), g.argmax), "mtp_p_draft");
      roots.push_back(g.p_draft);
    }
  }
  roots.insert(roots.end(), effects.begin(), effects.end());
  g.graph = Graph::build(roots);
  return g;
}

void fill_mtp_inputs(const MtpGraph& g, Executor& ex, const int32_t* tokens, int pos0, int h_row0) {
  const int R = g.shape.n_rows, n_kv = g.shape.n_kv;
  std::vector<int32_t> pos(static_cast<size_t>(R)), rows(static_cast<size_t>(R));
  for (int i = 0; i < R; ++i) {
    pos[i] = pos0 + i;
    rows[i] = h_row0 + i;
  }
  std::vector<int32_t> outs(static_cast<size_t>(std::max(g.shape.n_outputs, 1)));
  for (size_t i = 0; i < outs.size(); ++i) outs[i] = R - static_cast<int32_t>(outs.size()) + static_cast<int32_t>(i);
  ex.set_input(*g.in.tokens, tokens);
  ex.set_input(*g.in.pos, pos.data());
  ex.set_input(*g.in.h_rows, rows.data());
  GL_ASSERT(!g.shape.causal || n_kv == pos0 + R, "a causal MTP step's span ends at its last row");
  if (g.in.kq_mask) ex.set_input(*g.in.kq_mask, detail::causal_mask(n_kv, R, pos0).data());
  if (g.shape.n_outputs > 0) ex.set_input(*g.in.out_ids, outs.data());
}

}  // namespace gl::qwen35
