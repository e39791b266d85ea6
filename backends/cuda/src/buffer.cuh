// buffer.cuh - device memory of the CUDA backend: a caching pool and the Buffer over it.
//
//   auto pool = std::make_shared<Pool>(/*device=*/0);
//   void* p = pool->alloc(bytes);          // a cached block of bytes' size class, else cudaMalloc
//   pool->release(p, bytes);               // back into the cache, no cudaFree
//   auto buf = std::make_unique<DeviceBuffer>(backend, pool, bytes, BufferUsage::COMPUTE);
//
// Buffers come and go in a few large sizes (an arena that grows, weights once per model), and
// cudaFree synchronises the whole device, so freed blocks are kept and handed out again for a
// request of the same size class. Everything cached is freed when the pool dies (the backend
// and its last buffer hold it), or when cudaMalloc runs out of memory and retries. Blocks are
// only reused by the pool's own backend, whose work is ordered on one stream, so a reused block
// is never written while earlier kernels still read it. Not thread-safe (nor is a Backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "common.cuh"
#include "ggml-lite/backend.h"

namespace gl::cuda {

// Requests round up to 4 classes per power of two (at most 25% more), at least 256 bytes.
size_t size_class(size_t bytes);

class Pool {
 public:
  explicit Pool(int device) : device_(device) {}
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A block of at least size_class(bytes); nullptr when the device is out of memory even
  // after every cached block was freed.
  void* alloc(size_t bytes);
  // Returns a block from alloc(bytes) to the cache.
  void release(void* p, size_t bytes);
  size_t cached_bytes() const { return cached_bytes_; }
  // cudaMalloc calls made so far and their bytes (cache hits not counted): the backend's device
  // allocations, since kernels take their scratch from the planner's arena.
  int64_t n_mallocs() const { return n_mallocs_; }
  size_t malloc_bytes() const { return malloc_bytes_; }

 private:
  void free_cached();
  int device_;
  int64_t n_mallocs_ = 0;
  size_t malloc_bytes_ = 0;
  std::multimap<size_t, void*> cached_;  // size class -> free block
  size_t cached_bytes_ = 0;
};

class DeviceBuffer final : public Buffer {
 public:
  // p: a block of pool (from pool->alloc(bytes)); the buffer gives it back when destroyed.
  DeviceBuffer(Backend& backend, std::shared_ptr<Pool> pool, void* p, size_t bytes, BufferUsage u);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* base() override { return ptr_; }
  size_t size() const override { return size_; }
  Backend& backend() override { return backend_; }

 private:
  Backend& backend_;
  std::shared_ptr<Pool> pool_;
  void* ptr_;
  size_t size_;
};

}  // namespace gl::cuda
