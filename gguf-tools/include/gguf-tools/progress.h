// progress.h - a one-line progress bar on stderr for the tools (only when stderr is a TTY).
//
//   gl::tools::Progress p("convert", total_bytes, n_tensors, gl::tools::stderr_is_tty());
//   for (size_t i = 0; i < n; ++i) {
//     p.begin_item(i, name);
//     ... p.add_bytes(chunk_bytes); ...
//   }
//   p.finish();
//
// Redraws at most every 100 ms: "[####......] tensor 12/733  1234.5/9000.0 MB  blk.3.attn_qkv.weight".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gl::tools {

bool stderr_is_tty();

class Progress {
 public:
  Progress(std::string label, uint64_t total_bytes, size_t n_items, bool enabled);
  void begin_item(size_t index, std::string_view name);
  void add_bytes(uint64_t n);
  // Draws the final state and ends the line.
  void finish();

 private:
  void draw(bool force);

  std::string label_;
  uint64_t total_ = 0;
  uint64_t done_ = 0;
  size_t n_items_ = 0;
  size_t item_ = 0;
  std::string name_;
  bool enabled_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace gl::tools
