// cache.cpp - KV cache and Gated DeltaNet state for one sequence.
#include <fmt/format.h>

#include "ggml-lite/models/qwen35.h"
#include "persistent.h"

namespace gl::qwen35 {

Cache::Cache(const Model& m, int n_ctx, Backend& backend, DType kv_type) : backend_(backend), n_ctx_(n_ctx) {
  const Hparams& hp = m.hparams();
  const auto n = static_cast<size_t>(hp.n_layer);
  k.assign(n, nullptr);
  v.assign(n, nullptr);
  conv.assign(n, nullptr);
  state.assign(n, nullptr);
  for (int il = 0; il < hp.n_layer; ++il) {
    if (hp.is_recurrent(il)) {
      conv[il] = ctx_.new_tensor(DType::F32, {hp.conv_dim(), hp.conv_kernel - 1}, fmt::format("cache_conv-{}", il));
      state[il] = ctx_.new_tensor(DType::F32, {hp.d_v, hp.d_k, hp.n_v_heads}, fmt::format("cache_state-{}", il));
    } else {
      const int64_t row = hp.head_dim * hp.n_head_kv;
      k[il] = ctx_.new_tensor(kv_type, {row, n_ctx}, fmt::format("cache_k-{}", il));
      v[il] = ctx_.new_tensor(kv_type, {row, n_ctx}, fmt::format("cache_v-{}", il));
    }
  }
  buf_ = detail::alloc_persistent(ctx_, backend);
  status_ = detail::persistent_status(buf_.get(), ctx_, backend, "KV/state cache");
}

void Cache::clear() {
  detail::zero_all(ctx_, backend_);
  n_past = 0;
}

}  // namespace gl::qwen35
