// builder.h - shared checks for op builders (private to ggml-lite/src/ops).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "ggml-lite/context.h"
#include "ggml-lite/status.h"

namespace gl::detail {

// Builders receive shapes from code, so a violation is a programmer error:
// print "[op] message" and abort.
template <class... Args>
[[noreturn]] void op_fail(Op op, fmt::format_string<Args...> f, Args&&... args) {
  std::fprintf(stderr, "[%.*s] %s\n", static_cast<int>(op_name(op).size()), op_name(op).data(),
               fmt::format(f, std::forward<Args>(args)...).c_str());
  std::abort();
}

inline std::array<int64_t, kMaxDims> shape(std::initializer_list<int64_t> ne) {
  std::array<int64_t, kMaxDims> s{1, 1, 1, 1};
  std::copy(ne.begin(), ne.end(), s.begin());
  return s;
}

inline void require_float(Op op, const Tensor* t, const char* what) {
  if (!dtype_traits(t->type).is_float) op_fail(op, "{} must be f32/f16/bf16, got {}", what, dtype_name(t->type));
}
inline void require_type(Op op, const Tensor* t, DType type, const char* what) {
  if (t->type != type) op_fail(op, "{} must be {}, got {}", what, dtype_name(type), dtype_name(t->type));
}

}  // namespace gl::detail

#define GL_OP_CHECK(cond, op, ...)                       \
  do {                                                   \
    if (!(cond)) ::gl::detail::op_fail(op, __VA_ARGS__); \
  } while (0)
