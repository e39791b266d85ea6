// profile.h - per-node wall times of the CPU backend, printed at exit (GL_CPU_PROFILE=1).
//
//   Profile prof;                          // enabled() reads the diag switch once
//   auto t = prof.start();  compute_node(n, p);  prof.stop(n, t);
//
// Nodes are grouped by op and operand shapes and types, sorted by total time; the table goes to
// stderr when the backend is destroyed. Diagnostics only: the switch changes no result.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "ggml-lite/tensor.h"

namespace gl::cpu {

class Profile {
 public:
  using Clock = std::chrono::steady_clock;
  Profile();
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  bool enabled() const { return enabled_; }
  Clock::time_point start() const { return enabled_ ? Clock::now() : Clock::time_point{}; }
  void stop(const Tensor& node, Clock::time_point t0);

 private:
  struct Row {
    double us = 0;
    long calls = 0;
  };
  bool enabled_ = false;
  std::map<std::string, Row> rows_;
};

}  // namespace gl::cpu
