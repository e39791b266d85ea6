// util.h - small helpers shared by the gguf-tools sources (not installed).
#pragma once

#include <string>
#include <string_view>

#include "ggml-lite/status.h"

namespace gl::tools {

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool is_directory(const std::string& path);
bool is_file(const std::string& path);
// The whole file; errors name the path ("<path>: no such file").
Result<std::string> read_text_file(const std::string& path, size_t max_bytes = size_t{1} << 30);
// The last path component, without a trailing slash.
std::string base_name(std::string path);

}  // namespace gl::tools

// GL_TRY for functions returning Result<T>: propagates a failed Status as an Error.
#define GLT_TRY(expr)                                             \
  do {                                                            \
    ::gl::Status glt_try_s_ = (expr);                             \
    if (!glt_try_s_.ok()) return ::gl::Error(glt_try_s_.error()); \
  } while (0)
