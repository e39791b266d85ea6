// persistent.cpp - one zeroed buffer per set of persistent tensors.
#include "persistent.h"

#include <vector>

namespace gl::qwen35::detail {

std::unique_ptr<Buffer> alloc_persistent(Context& ctx, Backend& backend) {
  const size_t align = backend.alignment();
  auto padded = [align](size_t n) { return (n + align - 1) / align * align; };
  size_t total = 0;
  for (Tensor& t : ctx) total += padded(nbytes(t));
  std::unique_ptr<Buffer> buf = backend.alloc_buffer(total, BufferUsage::ANY);
  size_t off = 0;
  for (Tensor& t : ctx) {
    t.flags |= TENSOR_WEIGHT;
    buf->bind(t, off);
    off += padded(nbytes(t));
  }
  zero_all(ctx, backend);
  return buf;
}

void zero_all(Context& ctx, Backend& backend) {
  for (Tensor& t : ctx) {
    const std::vector<char> zeros(nbytes(t), 0);
    backend.set_tensor(t, zeros.data(), 0, zeros.size());
  }
}

}  // namespace gl::qwen35::detail
