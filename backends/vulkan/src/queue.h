// queue.h - the backend's queue: command buffers recycled by a timeline semaphore.
//
//   Queue q(dev);
//   Queue::Frame& f = q.begin();          // a reset command buffer + descriptor sets, recording
//   ... record into f.cmd ...
//   uint64_t v = q.submit(f);             // signals v on the timeline when done
//   q.wait(v);                            // host wait; throws VkFault on a device fault
//
// Submissions execute in order and every command buffer opens and closes with a full memory
// barrier, so work is ordered across submissions without semaphores between them.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "device.h"
#include "recorder.h"

namespace gl::vulkan {

class Queue {
 public:
  struct Frame {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    std::unique_ptr<DescriptorArena> sets;
    uint64_t value = 0;  // timeline value its last submission signals (0: never submitted)
    bool recording = false;
    bool pinned = false;  // kept by the split cache for resubmission: begin() never hands it out
  };

  explicit Queue(Device& dev);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // A reset command buffer, recording. reusable: may be submitted again, also while a submission
  // is pending (the split cache); else one-time. Throws VkFault.
  Frame& begin(bool reusable = false);
  uint64_t submit(Frame& f);    // ends and submits f; throws VkFault
  uint64_t resubmit(Frame& f);  // submits f's recorded commands again; throws VkFault
  void abandon(Frame& f);       // ends f without submitting (an error while recording)
  void wait(uint64_t value);    // throws VkFault
  void wait_all() { wait(submitted_); }
  uint64_t submitted() const { return submitted_; }
  VkSemaphore timeline() const { return timeline_; }

 private:
  uint64_t submit_recorded(Frame& f);

  Device& dev_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t submitted_ = 0;
  std::vector<std::unique_ptr<Frame>> frames_;
};

// Waits on the host until `timeline` reaches `value`; throws VkFault (a lost device).
void wait_timeline(VkDevice dev, VkSemaphore timeline, uint64_t value);

}  // namespace gl::vulkan
