// queue.cpp - command buffers, submission and host waits on the timeline semaphore.
#include "queue.h"

#include "check.h"

namespace gl::vulkan {

void wait_timeline(VkDevice dev, VkSemaphore timeline, uint64_t value) {
  if (value == 0) return;
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  wi.pSemaphores = &timeline;
  wi.pValues = &value;
  GL_VK_CHECK(vkWaitSemaphores(dev, &wi, UINT64_MAX));
}

Queue::Queue(Device& dev) : dev_(dev) {
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = dev_.queue_family();
  GL_VK_CHECK(vkCreateCommandPool(dev_.handle(), &pi, nullptr, &pool_));
  VkSemaphoreTypeCreateInfo ti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  si.pNext = &ti;
  GL_VK_CHECK(vkCreateSemaphore(dev_.handle(), &si, nullptr, &timeline_));
}

Queue::~Queue() {
  (void)vkQueueWaitIdle(dev_.queue());  // after a device loss there is nothing to wait for
  frames_.clear();
  if (timeline_) vkDestroySemaphore(dev_.handle(), timeline_, nullptr);
  if (pool_) vkDestroyCommandPool(dev_.handle(), pool_, nullptr);  // frees the command buffers
}

Queue::Frame& Queue::begin(bool reusable) {
  uint64_t done = 0;
  GL_VK_CHECK(vkGetSemaphoreCounterValue(dev_.handle(), timeline_, &done));
  Frame* f = nullptr;
  for (auto& fr : frames_)
    if (!fr->recording && !fr->pinned && fr->value <= done) {
      f = fr.get();
      break;
    }
  if (!f) {
    auto fr = std::make_unique<Frame>();
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    GL_VK_CHECK(vkAllocateCommandBuffers(dev_.handle(), &ai, &fr->cmd));
    fr->sets = std::make_unique<DescriptorArena>(dev_.handle());
    frames_.push_back(std::move(fr));
    f = frames_.back().get();
  }
  GL_VK_CHECK(vkResetCommandBuffer(f->cmd, 0));
  f->sets->reset();
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = reusable ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  GL_VK_CHECK(vkBeginCommandBuffer(f->cmd, &bi));
  f->recording = true;
  return *f;
}

uint64_t Queue::submit(Frame& f) {
  f.recording = false;
  GL_VK_CHECK(vkEndCommandBuffer(f.cmd));
  return submit_recorded(f);
}

uint64_t Queue::resubmit(Frame& f) { return submit_recorded(f); }

uint64_t Queue::submit_recorded(Frame& f) {
  const uint64_t value = submitted_ + 1;
  VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ti.signalSemaphoreValueCount = 1;
  ti.pSignalSemaphoreValues = &value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &ti;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &f.cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &timeline_;
  GL_VK_CHECK(vkQueueSubmit(dev_.queue(), 1, &si, VK_NULL_HANDLE));
  submitted_ = value;
  f.value = value;
  return value;
}

void Queue::abandon(Frame& f) {
  f.recording = false;
  (void)vkEndCommandBuffer(f.cmd);  // reset on its next begin() either way
}

void Queue::wait(uint64_t value) { wait_timeline(dev_.handle(), timeline_, value); }

}  // namespace gl::vulkan
