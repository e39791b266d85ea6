// profiler.cpp - see profiler.h.
#include "profiler.h"

#include <fmt/format.h>

#include <algorithm>

#include "check.h"
#include "ggml-lite/diag.h"

namespace gl::vulkan {

Profiler::Profiler(Device& dev) : dev_(dev), enabled_(diag_env(Diag::VULKAN_PROFILE)) {
  if (!enabled_) return;
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2 * kMaxDispatches;
  GL_VK_CHECK(vkCreateQueryPool(dev_.handle(), &qi, nullptr, &pool_));
}

Profiler::~Profiler() {
  if (pool_) vkDestroyQueryPool(dev_.handle(), pool_, nullptr);
}

void Profiler::begin_split(VkCommandBuffer cmd) {
  pending_.clear();
  vkCmdResetQueryPool(cmd, pool_, 0, 2 * kMaxDispatches);
}

void Profiler::before(VkCommandBuffer cmd) {
  if (pending_.size() < kMaxDispatches)
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 2 * static_cast<uint32_t>(pending_.size()));
}

void Profiler::after(VkCommandBuffer cmd, std::string key) {
  if (pending_.size() >= kMaxDispatches) {
    ++untimed_;
    return;
  }
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 2 * static_cast<uint32_t>(pending_.size()) + 1);
  pending_.push_back(std::move(key));
}

void Profiler::collect() {
  if (pending_.empty()) return;
  std::vector<uint64_t> ts(2 * pending_.size());
  GL_VK_CHECK(vkGetQueryPoolResults(dev_.handle(), pool_, 0, static_cast<uint32_t>(ts.size()),
                                    ts.size() * sizeof(uint64_t), ts.data(), sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const double ns_per_tick = dev_.limits().timestampPeriod;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Row& r = rows_[pending_[i]];
    r.ms += static_cast<double>(ts[2 * i + 1] - ts[2 * i]) * ns_per_tick * 1e-6;
    r.count += 1;
  }
  ++n_splits_;
  pending_.clear();
}

std::string Profiler::report() const {
  std::vector<std::pair<std::string, Row>> rows(rows_.begin(), rows_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  double total = 0;
  int64_t dispatches = 0;
  for (const auto& [k, r] : rows) total += r.ms, dispatches += r.count;
  std::string out =
      fmt::format("vulkan profile ({}): {} dispatches, {:.3f} ms of shaders over {} splits ({} untimed)\n",
                  diag_env_name(Diag::VULKAN_PROFILE), dispatches, total, n_splits_, untimed_);
  out += fmt::format("{:>10} {:>6} {:>8} {:>9}  {}\n", "total ms", "%", "count", "avg us", "op  shader  sources");
  for (size_t i = 0; i < rows.size() && i < 50; ++i) {
    const Row& r = rows[i].second;
    out += fmt::format("{:10.3f} {:6.2f} {:8} {:9.2f}  {}\n", r.ms, 100.0 * r.ms / total, r.count,
                       1000.0 * r.ms / static_cast<double>(r.count), rows[i].first);
  }
  return out;
}

}  // namespace gl::vulkan
