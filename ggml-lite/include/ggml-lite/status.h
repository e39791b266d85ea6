// status.h - errors for untrusted input (files, CLI and API arguments).
//
//   gl::Result<Model> load(const std::string& path) {
//     if (!exists(path)) return gl::Error(fmt::format("{}: no such file", path));
//     ...
//   }
//   auto m = load(p); if (!m) { fmt::print(stderr, "{}\n", m.error()); }
//
// Programmer errors use GL_ASSERT instead, which aborts with file:line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace gl {

struct Error {
  std::string message;
  explicit Error(std::string m) : message(std::move(m)) {}
};

// A value or an Error (std::expected arrives with C++23).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_).message; }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : msg_(std::move(e.message)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& error() const { return msg_; }

 private:
  std::string msg_;
  bool ok_ = true;
};

[[noreturn]] inline void assert_fail(const char* file, int line, const char* expr, const char* msg) {
  std::fprintf(stderr, "%s:%d: GL_ASSERT(%s) failed: %s\n", file, line, expr, msg);
  std::abort();
}

}  // namespace gl

#define GL_ASSERT(cond, msg)                                        \
  do {                                                              \
    if (!(cond)) ::gl::assert_fail(__FILE__, __LINE__, #cond, msg); \
  } while (0)

// Propagates an error from a Status-returning expression, from a function that
// returns Status or Result<T>.
#define GL_TRY(expr)                                            \
  do {                                                          \
    ::gl::Status gl_try_s_ = (expr);                            \
    if (!gl_try_s_.ok()) return ::gl::Error(gl_try_s_.error()); \
  } while (0)
