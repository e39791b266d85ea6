// persistent.h - device memory for state that outlives step graphs (caches, hand-off buffers).
#pragma once

#include <memory>

#include "ggml-lite/backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/status.h"

namespace gl::qwen35::detail {

// One buffer holding every tensor of ctx, each flagged TENSOR_WEIGHT (persistent, owned
// outside the graphs) and zeroed; nullptr when the backend is out of memory.
std::unique_ptr<Buffer> alloc_persistent(Context& ctx, Backend& backend);
// {} when buf exists, else an out-of-memory error naming what, the backend and the size.
Status persistent_status(const Buffer* buf, Context& ctx, const Backend& backend, const char* what);
// Zeroes every tensor of ctx.
void zero_all(Context& ctx, Backend& backend);

}  // namespace gl::qwen35::detail
