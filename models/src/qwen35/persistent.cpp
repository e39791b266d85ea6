// persistent.cpp - one zeroed buffer per set of persistent tensors.
#include "persistent.h"

#include <vector>

#include <fmt/format.h>

namespace gl::qwen35::detail {

std::unique_ptr<Buffer> alloc_persistent(Context& ctx, Backend& backend) {
  const size_t align = backend.alignment();
  auto padded = [align](size_t n) { return (n + align - 1) / align * align; };
  size_t total = 0;
  for (Tensor& t : ctx) total += padded(nbytes(t));
  std::unique_ptr<Buffer> buf = backend.alloc_buffer(total, BufferUsage::ANY);
  if (!buf) return nullptr;  // out of device memory: the owner reports it
  size_t off = 0;
  for (Tensor& t : ctx) {
    t.flags |= TENSOR_WEIGHT;
    buf->bind(t, off);
    off += padded(nbytes(t));
  }
  zero_all(ctx, backend);
  return buf;
}

Status persistent_status(const Buffer* buf, Context& ctx, const Backend& backend, const char* what) {
  if (buf) return {};
  size_t total = 0;
  for (Tensor& t : ctx) total += nbytes(t);
  return Error(fmt::format("{}: out of memory on {}: {:.2f} GiB could not be allocated (use a smaller context, -c)",
                           what, backend.name(), static_cast<double>(total) / (1024.0 * 1024.0 * 1024.0)));
}

void zero_all(Context& ctx, Backend& backend) {
  for (Tensor& t : ctx) {
    if (!t.data) return;  // never allocated (see persistent_status)
    const std::vector<char> zeros(nbytes(t), 0);
    backend.set_tensor(t, zeros.data(), 0, zeros.size());
  }
}

}  // namespace gl::qwen35::detail
