// profiler.h - per-dispatch GPU times, for finding where a step's time goes (GL_VULKAN_PROFILE=1).
//
//   Profiler prof(dev);               // enabled() reads GL_VULKAN_PROFILE
//   prof.begin_split(cmd);            // resets the query pool inside the command buffer
//   prof.before(cmd); vkCmdDispatch(...); prof.after(cmd, "MUL_MAT gemm bf16[..] ...");
//   ... submit, wait ...
//   prof.collect();                   // reads the timestamps of the split just waited for
//   // the backend prints prof.report() when it is destroyed
//
// Each dispatch is bracketed by two bottom-of-pipe timestamps and its time added to a row keyed by
// op, shader and source shapes. While profiling, the backend records every split afresh, puts a
// barrier before every dispatch (so one dispatch's time is not another's) and waits for each split,
// so the totals are kernel times without overlap: compare their sum per step with a plain run.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device.h"

namespace gl::vulkan {

class Profiler {
 public:
  explicit Profiler(Device& dev);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  bool enabled() const { return enabled_; }
  void begin_split(VkCommandBuffer cmd);
  void before(VkCommandBuffer cmd);
  void after(VkCommandBuffer cmd, std::string key);
  void collect();  // the split's command buffer must have completed; throws VkFault
  std::string report() const;
  int64_t splits() const { return n_splits_; }

 private:
  static constexpr uint32_t kMaxDispatches = 8192;  // timed per split; the rest are counted
  struct Row {
    double ms = 0;
    int64_t count = 0;
  };
  Device& dev_;
  bool enabled_ = false;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  std::vector<std::string> pending_;  // key of each timed dispatch of the split, in order
  std::map<std::string, Row> rows_;
  int64_t n_splits_ = 0, untimed_ = 0;
};

}  // namespace gl::vulkan
