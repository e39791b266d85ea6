// qwen35.h - the Qwen3.5 / Qwen3.6 family (dense `qwen35`, MoE `qwen35moe`) as lazy graphs.
//
//   auto cpu = gl::cpu::make_backend();
//   gl::Result<gl::qwen35::Model> m = gl::qwen35::Model::load("model.gguf", *cpu);
//   gl::qwen35::Cache cache(*m, /*n_ctx=*/4096, *cpu);
//   gl::qwen35::StepGraph step = gl::qwen35::build_step(*m, cache, {.n_tokens = 64, .n_kv = 256});
//   // write step.in.tokens / pos / kq_mask / out_ids, then run step.graph on an Executor
//
// Hyperparameters come from GGUF metadata (llama.cpp's keys, qwen35_hparams.h); weights keep llama.cpp's layout:
// RMSNorm weights carry the +1 (except ssm_norm), ssm_a = -exp(A_log), and GDN value heads are
// in tiled order (value head j reads key head j % Hk). The math is
// docs/reference/qwen35-mtp-spec.md sections 3-7.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/executor.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/graph.h"
#include "ggml-lite/models/qwen35_hparams.h"
#include "ggml-lite/status.h"

namespace gl::qwen35 {

struct LayerWeights {
  Tensor* attn_norm = nullptr;
  Tensor* post_attention_norm = nullptr;
  // gated full attention
  Tensor* wq = nullptr;  // [n_embd, 2 * head_dim * n_head]: per head [query | gate]
  Tensor* wk = nullptr;
  Tensor* wv = nullptr;
  Tensor* wo = nullptr;
  Tensor* q_norm = nullptr;
  Tensor* k_norm = nullptr;
  // Gated DeltaNet
  Tensor* wqkv = nullptr;
  Tensor* wgate = nullptr;
  Tensor* ssm_conv1d = nullptr;
  Tensor* ssm_dt = nullptr;
  Tensor* ssm_a = nullptr;
  Tensor* ssm_beta = nullptr;
  Tensor* ssm_alpha = nullptr;
  Tensor* ssm_norm = nullptr;
  Tensor* ssm_out = nullptr;
  // dense FFN
  Tensor* ffn_gate = nullptr;
  Tensor* ffn_up = nullptr;
  Tensor* ffn_down = nullptr;
  // MoE FFN
  Tensor* ffn_gate_inp = nullptr;
  Tensor* ffn_gate_exps = nullptr;
  Tensor* ffn_up_exps = nullptr;
  Tensor* ffn_down_exps = nullptr;
  Tensor* ffn_gate_inp_shexp = nullptr;
  Tensor* ffn_gate_shexp = nullptr;
  Tensor* ffn_up_shexp = nullptr;
  Tensor* ffn_down_shexp = nullptr;
  // MTP (nextn) layer only
  Tensor* eh_proj = nullptr;
  Tensor* enorm = nullptr;
  Tensor* hnorm = nullptr;
  Tensor* shared_head_norm = nullptr;
};

class Model {
 public:
  // Writes the data of one tensor of the layout (info.nbytes bytes, GGUF/ggml layout) to dst.
  using TensorSource = std::function<Status(const GgufTensorInfo& info, void* dst)>;
  // Called after each weight is in place: bytes done so far of the total.
  using LoadProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

  // Reads hyperparameters and binds every weight; errors name the file and tensor.
  // On a host backend weights are used in place from the mapped file.
  static Result<std::unique_ptr<Model>> load(const std::string& path, Backend& backend,
                                             const LoadProgress& progress = {});
  // The same from a layout (KVs + tensor infos, no data) and a source of tensor bytes, e.g. a
  // synthetic model generated in memory:
  //   auto m = Model::load(s.layout(), [&](const GgufTensorInfo& t, void* dst) { return s.fill(t, dst); }, *cpu);
  // Host backends get one weight buffer filled in place; device backends a host staging buffer
  // per tensor, then set_tensor.
  static Result<std::unique_ptr<Model>> load(GgufFile layout, const TensorSource& src, Backend& backend,
                                             const LoadProgress& progress = {});
  // Metadata only (no weight data): for graph dumps of any GGUF.
  static Result<std::unique_ptr<Model>> load_meta(const std::string& path);

  const Hparams& hparams() const { return hp_; }
  const GgufFile& gguf() const { return file_; }
  bool has_mtp() const { return hp_.n_nextn > 0; }
  // The precision a run takes when none is asked for (the examples' `--precision auto`): FAST for a
  // file whose tensor bytes are mostly block-quantized (Q8_0, the K-quants, IQ4, MXFP4: activation
  // rows then go to int8 per block where the backend has that path, as llama.cpp runs such files;
  // greedy MTP parity holds there too), EXACT for F32 / F16 / BF16 files.
  Precision default_precision() const;

  Tensor* tok_embd = nullptr;
  Tensor* output_norm = nullptr;
  Tensor* output = nullptr;          // token_embd when tied
  std::vector<LayerWeights> layers;  // n_layer + n_nextn

 private:
  using Bound = std::vector<std::pair<Tensor*, const GgufTensorInfo*>>;
  // Reads hyperparameters and binds names and shapes; then places the data unless backend is null.
  static Result<std::unique_ptr<Model>> open(GgufFile f, Backend* backend, const TensorSource* src,
                                             const LoadProgress& progress);
  Result<Bound> bind();
  // src null: the infos point at mapped data (used in place on a host backend).
  Status place(const Bound& bound, Backend& backend, const TensorSource* src, const LoadProgress& progress);
  Hparams hp_;
  GgufFile file_;
  Context ctx_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
};

// Per-sequence state: KV of the full-attention layers, conv windows and recurrent states of the
// Gated DeltaNet layers. Slots are positions (one sequence). K and V rows are stored as kv_type
// (F32, or F16: half the bytes an attention step reads, each value rounded to F16).
class Cache {
 public:
  Cache(const Model& m, int n_ctx, Backend& backend, DType kv_type = DType::F32);
  int n_ctx() const { return n_ctx_; }
  int n_past = 0;  // committed positions
  void clear();    // zero everything, n_past = 0
  Backend& backend() { return backend_; }
  // An out-of-memory error when the cache could not be allocated (steps then refuse to run).
  const Status& status() const { return status_; }

  std::vector<Tensor*> k, v;         // per layer (null for GDN layers): [head_dim * n_head_kv, n_ctx]
  std::vector<Tensor*> conv, state;  // per layer (null for attention layers): [conv_dim, Kc-1], [Dv, Dk, Hv]

 private:
  Backend& backend_;
  Context ctx_;
  std::unique_ptr<Buffer> buf_;
  int n_ctx_;
  Status status_;
};

struct StepShape {
  int n_tokens = 1;
  int n_kv = 0;             // attention span (>= n_past + n_tokens), a bucket of the cache
  int n_outputs = 1;        // rows that need logits
  int n_states = 1;         // GDN states kept per token at the end of the step (K+1 for verify)
  bool hidden_all = false;  // keep the pre-norm hidden state of every row (MTP); else slice early
  bool causal = false;      // n_kv is exactly n_past + n_tokens: causal attention, no mask input
};

// The attention span of a step of n_tokens rows at position n_past: rounded up to a bucket, so
// that steps share graphs (decode, verify, drafts), or, for a prefill chunk (more than
// kCausalMinTokens rows) whose [span, n_tokens] F32 mask would pass kMaskMaxBytes (68 MB for 512
// rows at a 32k span: writing and uploading it cost a quarter of the step on the H100), exactly
// n_past + n_tokens with causal attention and no mask. Such a chunk's graph is built for its span.
struct AttnSpan {
  int n_kv = 0;
  bool causal = false;
};
inline constexpr int64_t kMaskMaxBytes = int64_t{4} << 20;
inline constexpr int kCausalMinTokens = 16;
AttnSpan attention_span(int n_past, int n_tokens, int n_ctx, int bucket);

struct StepInputs {
  Tensor* tokens = nullptr;   // I32 [n_tokens]
  Tensor* pos = nullptr;      // I32 [n_tokens] positions, also the cache slots
  Tensor* kq_mask = nullptr;  // F32 [n_kv, n_tokens]: 0 where visible, -inf elsewhere (null: causal)
  Tensor* out_ids = nullptr;  // I32 [n_outputs]: rows that get logits
};

struct StepGraph {
  std::unique_ptr<Context> ctx;
  Graph graph;
  StepShape shape;
  StepInputs in;
  Tensor* logits = nullptr;           // F32 [n_vocab, n_outputs]
  Tensor* argmax = nullptr;           // I32 [n_outputs]: each output row's most likely token
  Tensor* hidden = nullptr;           // F32 [n_embd, rows]: pre-norm, all rows when hidden_all
  std::vector<Tensor*> gdn_states;    // per GDN layer: [Dv, Dk, Hv, n_states] snapshots
  std::vector<Tensor*> conv_windows;  // per GDN layer: [conv_dim, Kc-1+n_tokens] (old state + inputs)
};

// Builds one step (prefill chunk, decode, verify). Topology depends only on the shape.
// hidden_sink (optional, needs shape.hidden_all): a persistent [n_embd, >= n_tokens] tensor that
// receives the step's pre-norm hidden rows on the device, for the MTP head.
StepGraph build_step(const Model& m, Cache& cache, const StepShape& shape, Tensor* hidden_sink = nullptr);

// Writes the step inputs (after Executor::allocate): tokens at positions n_past.., a causal mask
// over the cache, and the rows that get logits.
void fill_step_inputs(const StepGraph& g, Executor& ex, const int32_t* tokens, int n_past, const int32_t* out_rows);

}  // namespace gl::qwen35
