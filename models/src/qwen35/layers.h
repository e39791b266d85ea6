// layers.h - Qwen3.5 layer builders shared by the trunk and the MTP head (private to models/).
#pragma once

#include <vector>
#include "ggml-lite/models/qwen35.h"

#include "ggml-lite/ops.h"

namespace gl::qwen35::detail {

// Per-step tensors every layer reads.
struct StepCtx {
  Context& ctx;
  const Hparams& hp;
  const StepShape& shape;
  const StepInputs& in;
  std::vector<Tensor*>& effects;  // cache writes no output depends on; built into the graph too
};

// The F32 [n_kv, n_rows] attention mask of rows at positions pos0, pos0 + 1, ..: 0 where row i
// may see cache slot j (j <= pos0 + i), -inf elsewhere. The trunk and the MTP head both use it.
// The result is this thread's buffer, valid until its next call. It is kept between calls and
// only the slots between the last call's bounds and these are rewritten when the shape repeats:
// at a 32k span a 512-row mask is 68 MB, and writing it afresh (page faults included) every
// step cost more than the step's attention.
const std::vector<float>& causal_mask(int n_kv, int n_rows, int pos0);

// RMSNorm with a stored weight (GGUF weights already carry the +1).
Tensor* norm(StepCtx& s, Tensor* x, Tensor* w, const char* name, int il);

// Gated full attention over a KV cache: x [n_embd, T] -> [n_embd, T]; writes K, V at in.pos.
Tensor* attention(StepCtx& s, const LayerWeights& w, Tensor* x, Tensor* k_cache, Tensor* v_cache, int il);

struct GdnOut {
  Tensor* out;     // [n_embd, T]
  Tensor* states;  // [Dv, Dk, Hv, n_states]
  Tensor* window;  // [conv_dim, Kc-1+T]
};
// Gated DeltaNet over the conv window and recurrent state caches; writes the final state back.
GdnOut gated_delta_net(StepCtx& s, const LayerWeights& w, Tensor* x, Tensor* conv_cache, Tensor* state_cache, int il);

// Dense SwiGLU FFN or the MoE block, whichever the layer has.
Tensor* ffn(StepCtx& s, const LayerWeights& w, Tensor* x, int il);

}  // namespace gl::qwen35::detail
