// backend.cpp - the Backend defaults that need no device.
#include "ggml-lite/backend.h"

#include <vector>

namespace gl {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::EXACT: return "exact";
    case Precision::FAST: return "fast";
  }
  return "?";  // not reached: every value returns above
}

std::optional<Precision> precision_from_name(std::string_view s) {
  for (Precision p : {Precision::EXACT, Precision::FAST})
    if (precision_name(p) == s) return p;
  return std::nullopt;
}

void Backend::copy_tensor(const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off, size_t n) {
  if (n == 0) return;
  std::vector<unsigned char> tmp(n);
  get_tensor(src, tmp.data(), src_off, n);
  set_tensor(dst, tmp.data(), dst_off, n);
}

// Through the host: host memory is read or written in place, device to device goes through a
// temporary. get_tensor waits for src_backend's queued work, so the data is there.
Status Backend::copy_from(Backend* src_backend, const Tensor& src, size_t src_off, Tensor& dst, size_t dst_off,
                          size_t n) {
  if (n == 0) return {};
  if (src_backend == nullptr || src_backend->is_host()) {
    set_tensor(dst, static_cast<const char*>(src.data) + src_off, dst_off, n);
    return {};
  }
  if (is_host()) {
    src_backend->get_tensor(src, static_cast<char*>(dst.data) + dst_off, src_off, n);
    return {};
  }
  std::vector<unsigned char> tmp(n);
  src_backend->get_tensor(src, tmp.data(), src_off, n);
  set_tensor(dst, tmp.data(), dst_off, n);
  return {};
}

}  // namespace gl
