// split_cache.h - command buffers recorded once per split and submitted again when it repeats.
//
//   SplitKey key = split_key(nodes);
//   if (Queue::Frame* f = cache.find(key)) queue.resubmit(*f);   // a step graph run again
//   else { record into queue.begin(true), submit; cache.insert(std::move(key), frame, queue); }
//
// A split's commands are built only from what the key holds: per node the op, its params, and the
// dtype, shape, strides and memory address of the node, its workspace and its sources. Made-up
// addresses are never reused (device.h), so a key never matches commands that name freed memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ggml-lite/tensor.h"
#include "queue.h"

namespace gl::vulkan {

struct SplitKey {
  std::vector<uint64_t> words;
  std::vector<OpParams> params;
  bool operator==(const SplitKey&) const = default;
};

SplitKey split_key(std::span<Tensor* const> nodes);

class SplitCache {
 public:
  static constexpr size_t kCapacity = 64;  // distinct splits kept (steps x buckets x splits)
  Queue::Frame* find(const SplitKey& key);
  // Keeps frame (recorded as reusable and pinned) for key; past kCapacity the least recently used
  // entry's frame is unpinned, so the queue recycles it once the GPU is done with it.
  void insert(SplitKey key, Queue::Frame& frame);
  int64_t records() const { return records_; }
  int64_t replays() const { return replays_; }

 private:
  struct Entry {
    SplitKey key;
    uint64_t hash = 0;
    Queue::Frame* frame = nullptr;
    uint64_t last_use = 0;
  };
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  int64_t records_ = 0, replays_ = 0;
};

}  // namespace gl::vulkan
