// common.cu - where the checking macros of common.cuh end when a CUDA or cuBLAS call fails, and
// the dependent-launch switch.
#include "common.cuh"

#include <algorithm>
#include <cstdlib>

#include "ggml-lite/diag.h"

namespace gl::cuda {

bool pdl_enabled() {
  static const bool on = !diag_env(Diag::CUDA_PDL_OFF);  // read once: every launch asks
  return on;
}

void WrittenWeights::note(const Tensor& node) {
  const Tensor* root = node.view_src;
  if (!root || !root->has_flag(TENSOR_WEIGHT) || node.op == Op::NONE || is_view_op(node.op) || overflow_) return;
  const auto b = reinterpret_cast<uintptr_t>(root->data);
  const std::pair<uintptr_t, uintptr_t> r{b, b + nbytes(*root)};
  if (std::find(ranges_.begin(), ranges_.end(), r) != ranges_.end()) return;
  if (ranges_.size() == kMaxRanges) {
    overflow_ = true;  // every weight counts as written from here on
    return;
  }
  ranges_.push_back(r);
}

bool WrittenWeights::untouched(const Tensor& w) const {
  static const bool on = !diag_env(Diag::CUDA_EARLY_W_OFF);
  const Tensor& root = w.view_src ? *w.view_src : w;
  if (!on || overflow_ || !root.has_flag(TENSOR_WEIGHT) || !w.data) return false;
  const auto b = reinterpret_cast<uintptr_t>(w.data), e = b + nbytes(w);
  return std::none_of(ranges_.begin(), ranges_.end(), [&](const auto& r) { return r.first < e && b < r.second; });
}

namespace {

thread_local int fault_scopes = 0;  // FaultScope nesting on this thread

}  // namespace

FaultScope::FaultScope() { ++fault_scopes; }
FaultScope::~FaultScope() { --fault_scopes; }

void fail(const char* file, int line, const char* call, const char* msg) {
  if (fault_scopes > 0) throw DeviceFault{std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + msg};
  std::fprintf(stderr, "%s:%d: CUDA call failed: %s: %s\n", file, line, call, msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gl::cuda
