// profile.cpp - see profile.h.
#include "profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "ggml-lite/diag.h"

namespace gl::cpu {
namespace {

std::string key_of(const Tensor& n) {
  std::string k(op_name(n.op));
  for (int i = 0; i < n.n_srcs() && i < 2; ++i) {
    const Tensor& s = *n.src[i];
    k += fmt::format(" {}[{},{},{},{}]", dtype_name(s.type), s.ne[0], s.ne[1], s.ne[2], s.ne[3]);
  }
  return k;
}

}  // namespace

Profile::Profile() : enabled_(diag_env(Diag::CPU_PROFILE)) {}

void Profile::stop(const Tensor& node, Clock::time_point t0) {
  if (!enabled_) return;
  Row& r = rows_[key_of(node)];
  r.us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  ++r.calls;
}

Profile::~Profile() {
  if (!enabled_ || rows_.empty()) return;
  std::vector<std::pair<std::string, Row>> v(rows_.begin(), rows_.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
  double total = 0;
  for (const auto& [k, r] : v) total += r.us;
  std::fputs(
      fmt::format("cpu profile ({}): {:.1f} ms in nodes\n", diag_env_name(Diag::CPU_PROFILE), total / 1e3).c_str(),
      stderr);
  for (const auto& [k, r] : v)
    std::fputs(fmt::format("{:6.2f}% {:10.1f} us {:8} calls {:9.2f} us/call  {}\n", 100 * r.us / total, r.us, r.calls,
                           r.us / static_cast<double>(r.calls), k)
                   .c_str(),
               stderr);
}

}  // namespace gl::cpu
