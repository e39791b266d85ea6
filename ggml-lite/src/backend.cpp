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

}  // namespace gl
