// split_cache.cpp - split keys and the least-recently-used cache of recorded command buffers.
#include "split_cache.h"

#include <algorithm>

namespace gl::vulkan {
namespace {

uint64_t ptr_word(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

void describe(std::vector<uint64_t>& w, const Tensor& t) {
  w.push_back(ptr_word(t.data));
  w.push_back(static_cast<uint64_t>(t.type));
  for (int64_t n : t.ne) w.push_back(static_cast<uint64_t>(n));
  for (size_t b : t.nb) w.push_back(b);
}

uint64_t hash_words(const std::vector<uint64_t>& w) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t x : w) h = (h ^ x) * 0x100000001b3ull;
  return h;
}

}  // namespace

SplitKey split_key(std::span<Tensor* const> nodes) {
  SplitKey k;
  for (const Tensor* n : nodes) {
    if (n->op == Op::NONE || is_view_op(n->op)) continue;
    k.words.push_back(static_cast<uint64_t>(n->op) << 8 | static_cast<uint64_t>(n->n_srcs()));
    describe(k.words, *n);
    k.words.push_back(ptr_word(n->workspace));
    for (int i = 0; i < n->n_srcs(); ++i) describe(k.words, *n->src[i]);
    k.params.push_back(n->params);
  }
  return k;
}

Queue::Frame* SplitCache::find(const SplitKey& key) {
  const uint64_t h = hash_words(key.words);
  for (Entry& e : entries_)
    if (e.hash == h && e.key == key) {
      e.last_use = ++clock_;
      ++replays_;
      return e.frame;
    }
  return nullptr;
}

void SplitCache::insert(SplitKey key, Queue::Frame& frame) {
  ++records_;
  if (entries_.size() >= kCapacity) {
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    lru->frame->pinned = false;
    entries_.erase(lru);
  }
  frame.pinned = true;
  const uint64_t h = hash_words(key.words);
  entries_.push_back({std::move(key), h, &frame, ++clock_});
}

}  // namespace gl::vulkan
