// mtp.h - the Qwen3.5 MTP (multi-token prediction) head as its own step graph.
//
//   gl::qwen35::Handoff io(*model, *cpu, /*max_rows=*/256);  // executor + trunk hidden rows
//   gl::qwen35::Runner trunk(*model, io, n_ctx);              // hidden_all steps write io.hidden()
//   gl::qwen35::MtpCache mc(*model, n_ctx, *cpu);             // MTP KV + the chained row
//   auto g = gl::qwen35::build_mtp_step(*model, mc, io, {.n_rows = 3, .n_kv = 256, .from_trunk = true});
//
// One MTP row pairs the hidden state h_t with the embedding of token x_{t+1}, sits at position t,
// and predicts x_{t+2} (docs/reference/qwen35-mtp-spec.md section 8):
//   eh_proj(concat(enorm(embed(x_{t+1})), hnorm(h_t))) -> one gated full-attention layer with its
//   own KV cache -> dense FFN or MoE -> shared_head_norm -> the shared LM head (drafting rows only).
// Hidden rows come from the trunk (pre-norm rows the trunk step copied into io.hidden(); the head applies
// output_norm first when the model declares it, as Qwen3.5 does) or from the previous draft step
// (h_chain: the post-shared_head_norm row, fed back as is). Nothing crosses to the host.
#pragma once

#include "ggml-lite/models/handoff.h"
#include "ggml-lite/models/qwen35.h"

namespace gl::qwen35 {

// Which trunk hidden state the MTP head was trained on. Qwen3.5 checkpoints use the final-normed
// state (vLLM, SGLang, llama.cpp PR #24025); RAW is kept for A/B measurements.
enum class MtpTap : uint8_t { NORMED, RAW };
inline constexpr MtpTap kQwen35MtpTap = MtpTap::NORMED;

class MtpCache {
 public:
  MtpCache(const Model& m, int n_ctx, Backend& backend, DType kv_type = DType::F32);  // K/V as Cache's
  Tensor* k = nullptr;                                                                // [head_dim * n_head_kv, n_ctx]
  Tensor* v = nullptr;
  Tensor* h_chain = nullptr;  // [n_embd, 1]: post-norm MTP row of the last draft step
  int n_ctx() const { return n_ctx_; }
  void clear();
  const Status& status() const { return status_; }  // out of memory when allocating

 private:
  Backend& backend_;
  Context ctx_;
  std::unique_ptr<Buffer> buf_;
  int n_ctx_;
  Status status_;
};

struct MtpShape {
  int n_rows = 1;          // MTP rows in this step
  int n_kv = 0;            // attention span over the MTP cache
  bool from_trunk = true;  // hidden rows from the Handoff's trunk rows (else h_chain)
  int n_outputs = 1;       // LM head rows: the last n_outputs rows (0: none; 1: the drafting row)
  MtpTap tap = kQwen35MtpTap;
  bool confidence = false;  // with n_outputs 1: also the draft's probability (p_draft)
  bool causal = false;      // n_kv is exactly pos0 + n_rows: causal attention, no mask (attention_span)
};

struct MtpInputs {
  Tensor* tokens = nullptr;   // I32 [n_rows]: x_{t+1} of each row
  Tensor* pos = nullptr;      // I32 [n_rows]: t, also the MTP cache slot
  Tensor* h_rows = nullptr;   // I32 [n_rows]: which rows of the hidden source to read
  Tensor* kq_mask = nullptr;  // F32 [n_kv, n_rows] (null: causal)
  Tensor* out_ids = nullptr;  // I32 [n_outputs]: the last rows (the drafting row last)
};

struct MtpGraph {
  std::unique_ptr<Context> ctx;
  Graph graph;
  MtpShape shape;
  MtpInputs in;
  Tensor* logits = nullptr;   // F32 [n_vocab, n_outputs] (null when n_outputs is 0)
  Tensor* argmax = nullptr;   // I32 [n_outputs]: the greedy drafts (null when n_outputs is 0)
  Tensor* p_draft = nullptr;  // F32 [1, 1]: softmax(logits) at the draft (MtpShape::confidence)
  Tensor* h_mtp = nullptr;    // F32 [n_embd, n_rows] post shared_head_norm
};

// from_trunk steps read io.hidden(), which must hold at least n_rows rows.
MtpGraph build_mtp_step(const Model& m, MtpCache& mc, const Handoff& io, const MtpShape& shape);

// Writes the MTP step inputs: row i at position pos0 + i reads hidden row h_row0 + i and token
// tokens[i]; the drafting row is the last one.
void fill_mtp_inputs(const MtpGraph& g, Executor& ex, const int32_t* tokens, int pos0, int h_row0);

}  // namespace gl::qwen35
