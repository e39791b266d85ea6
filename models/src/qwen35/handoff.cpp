// handoff.cpp - the executor and hidden-row buffer shared by the trunk and the MTP head.
#include "ggml-lite/models/handoff.h"

#include "persistent.h"

namespace gl::qwen35 {

Handoff::Handoff(const Model& m, Backend& backend, int max_rows)
    : backend_(backend), ex_({&backend}), max_rows_(max_rows) {
  if (max_rows <= 0) return;
  hidden_ = ctx_.new_tensor(DType::F32, {m.hparams().n_embd, max_rows}, "mtp_h_trunk");
  buf_ = detail::alloc_persistent(ctx_, backend);
  status_ = detail::persistent_status(buf_.get(), ctx_, backend, "MTP hidden rows");
}

}  // namespace gl::qwen35
