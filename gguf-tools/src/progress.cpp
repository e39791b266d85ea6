// progress.cpp - the stderr progress bar.
#include "gguf-tools/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace gl::tools {

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, uint64_t total_bytes, size_t n_items, bool enabled)
    : label_(std::move(label)), total_(total_bytes), n_items_(n_items), enabled_(enabled) {}

void Progress::begin_item(size_t index, std::string_view name) {
  item_ = index;
  name_ = name;
  draw(false);
}

void Progress::add_bytes(uint64_t n) {
  done_ += n;
  draw(false);
}

void Progress::finish() {
  if (!enabled_) return;
  item_ = n_items_ == 0 ? 0 : n_items_ - 1;
  name_.clear();
  draw(true);
  std::fputc('\n', stderr);
  drawn_ = false;
}

void Progress::draw(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double frac = total_ ? std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)) : 1.0;
  const int filled = static_cast<int>(frac * kWidth);
  const std::string bar =
      std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
  std::string name = name_.size() > 40 ? name_.substr(0, 40) : name_;
  fmt::print(stderr, "\r{} [{}] tensor {}/{}  {:.1f}/{:.1f} MB  {:<40}", label_, bar, item_ + 1, n_items_,
             static_cast<double>(done_) / 1e6, static_cast<double>(total_) / 1e6, name);
  std::fflush(stderr);
}

}  // namespace gl::tools
