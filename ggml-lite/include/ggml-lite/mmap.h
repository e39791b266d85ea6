// mmap.h - a read-only memory map of a whole file (RAII).
//
//   gl::Result<gl::MappedFile> m = gl::MappedFile::open("model.gguf");
//   if (!m) return gl::Error(m.error());
//   std::span<const uint8_t> bytes = m->bytes();
//
// The mapping is private and read-only; it lives until the object is destroyed
// or moved from. Moving keeps the address stable, so pointers into bytes()
// stay valid in the moved-to object. An empty file maps to an empty span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ggml-lite/status.h"

namespace gl {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data(), size_}; }
  const std::string& path() const { return path_; }

 private:
  void reset();

  void* addr_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace gl
