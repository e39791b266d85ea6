// util.cpp - file helpers for gguf-tools.
#include "util.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace gl::tools {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  if (!is_file(path)) return Error(fmt::format("{}: no such file", path));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) {
    text.append(buf, n);
    if (text.size() > max_bytes) return Error(fmt::format("{}: larger than {} bytes", path, max_bytes));
  }
  if (std::ferror(f.get())) return Error(fmt::format("{}: read error", path));
  return text;
}

std::string base_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace gl::tools
