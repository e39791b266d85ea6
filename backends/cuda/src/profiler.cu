// profiler.cu - see profiler.cuh.
#include "profiler.cuh"

#include <algorithm>
#include <cstdio>

#include "common.cuh"
#include "ggml-lite/diag.h"

namespace gl::cuda {
namespace {

// printf into a std::string (fmt's compile-time format strings do not build under nvcc).
template <class... A>
std::string format(const char* f, A... a) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a...);
  return buf;
}

std::string key_of(const Tensor& n) {
  std::string k = std::string(op_name(n.op));
  for (int i = 0; i < n.n_srcs() && i < 2; ++i) {
    const Tensor& s = *n.src[i];
    k += format(" %s[%lld,%lld,%lld,%lld]", std::string(dtype_name(s.type)).c_str(), static_cast<long long>(s.ne[0]),
                static_cast<long long>(s.ne[1]), static_cast<long long>(s.ne[2]), static_cast<long long>(s.ne[3]));
  }
  return k;
}

}  // namespace

Profiler::Profiler() {
  enabled_ = diag_env(Diag::CUDA_PROFILE);
  timing_ = diag_env(Diag::CUDA_TIMING);
  if (timing_)
    for (cudaEvent_t& e : step_ev_) GL_CUDA_CHECK(cudaEventCreate(&e));
}

void Profiler::step_begin(cudaStream_t s) {
  if (!timing_ || step_open_) return;
  if (have_last_sync_) host_gap_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - last_sync_).count();
  GL_CUDA_CHECK(cudaEventRecord(step_ev_[0], s));
  step_open_ = true;
}

void Profiler::step_end(cudaStream_t s) {
  if (!timing_ || !step_open_) return;
  GL_CUDA_CHECK(cudaEventRecord(step_ev_[1], s));
  step_ended_ = true;
}

void Profiler::collect_step() {
  if (!timing_) return;
  last_sync_ = Clock::now();
  have_last_sync_ = true;
  if (!step_ended_) return;
  float ms = 0;
  GL_CUDA_CHECK(cudaEventElapsedTime(&ms, step_ev_[0], step_ev_[1]));
  device_ms_ += ms;
  ++n_steps_;
  step_open_ = step_ended_ = false;
}

Profiler::~Profiler() {
  for (cudaEvent_t e : step_ev_)
    if (e) (void)cudaEventDestroy(e);
  for (auto& [a, b] : events_) {
    (void)cudaEventDestroy(a);
    (void)cudaEventDestroy(b);
  }
}

void Profiler::before(cudaStream_t s) {
  if (used_ == events_.size()) {
    cudaEvent_t a = nullptr, b = nullptr;
    GL_CUDA_CHECK(cudaEventCreate(&a));
    GL_CUDA_CHECK(cudaEventCreate(&b));
    events_.emplace_back(a, b);
  }
  GL_CUDA_CHECK(cudaEventRecord(events_[used_].first, s));
}

void Profiler::after(cudaStream_t s, const Tensor& node) {
  GL_CUDA_CHECK(cudaEventRecord(events_[used_].second, s));
  pending_.push_back(key_of(node));
  ++used_;
}

void Profiler::collect() {
  for (size_t i = 0; i < used_; ++i) {
    float ms = 0;
    GL_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second));
    Row& r = rows_[pending_[i]];
    r.ms += ms;
    r.count += 1;
  }
  if (used_) ++n_syncs_;
  used_ = 0;
  pending_.clear();
}

std::string Profiler::report() const {
  if (timing_ && n_steps_ > 0) {
    const double n = static_cast<double>(n_steps_);
    return format("cuda timing: %lld steps, %.3f ms device per step, %.3f ms host between steps\n",
                  static_cast<long long>(n_steps_), device_ms_ / n, host_gap_ms_ / n);
  }
  std::vector<std::pair<std::string, Row>> rows(rows_.begin(), rows_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  double total = 0;
  int64_t launches = 0;
  for (const auto& [k, r] : rows) total += r.ms, launches += r.count;
  std::string out = format("cuda profile: %lld launches, %.3f ms of kernels over %lld synchronised steps\n",
                           static_cast<long long>(launches), total, static_cast<long long>(n_syncs_));
  out += format("%10s %6s %8s %9s  %s\n", "total ms", "%", "count", "avg us", "op  sources");
  for (size_t i = 0; i < rows.size() && i < 40; ++i) {
    const Row& r = rows[i].second;
    out += format("%10.3f %6.2f %8lld %9.2f  %s\n", r.ms, 100.0 * r.ms / total, static_cast<long long>(r.count),
                  1000.0 * r.ms / static_cast<double>(r.count), rows[i].first.c_str());
  }
  return out;
}

}  // namespace gl::cuda
