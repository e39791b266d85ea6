// buffer.cu - the caching device-memory pool and device buffers (see buffer.cuh).
#include "buffer.cuh"

#include <algorithm>
#include <bit>

#include "device.cuh"

namespace gl::cuda {
namespace {

constexpr size_t kMinBlock = 256;

}  // namespace

size_t size_class(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  const int top = static_cast<int>(std::bit_width(bytes - 1)) - 1;  // bytes - 1 < 2^(top+1)
  const size_t step = std::max(kMinBlock, size_t{1} << std::max(top - 2, 0));
  return (bytes + step - 1) / step * step;
}

Pool::~Pool() { free_cached(); }

void* Pool::alloc(size_t bytes) {
  const size_t cls = size_class(bytes);
  if (auto it = cached_.find(cls); it != cached_.end()) {
    void* p = it->second;
    cached_.erase(it);
    cached_bytes_ -= cls;
    return p;
  }
  DeviceScope on(device_);
  void* p = nullptr;
  // Not GL_CUDA_CHECK: out of memory is an answer here (free the cache, retry, else nullptr for the
  // caller to report); every other error is checked by GL_CUDA_CHECK(e) below.
  cudaError_t e = cudaMalloc(&p, cls);
  if (e == cudaErrorMemoryAllocation && !cached_.empty()) {
    (void)cudaGetLastError();  // out of memory is not sticky: clear it so no later launch check reports it
    free_cached();
    e = cudaMalloc(&p, cls);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  GL_CUDA_CHECK(e);
  ++n_mallocs_;
  malloc_bytes_ += cls;
  return p;
}

void Pool::release(void* p, size_t bytes) {
  const size_t cls = size_class(bytes);
  cached_.emplace(cls, p);
  cached_bytes_ += cls;
}

void Pool::free_cached() {
  if (cached_.empty()) return;
  int prev = 0;
  const cudaError_t e = cudaGetDevice(&prev);
  if (e == cudaErrorCudartUnloading) {
    // Process exit with the runtime already gone (a static owner): the driver frees it all.
    cached_.clear();
    cached_bytes_ = 0;
    return;
  }
  GL_CUDA_CHECK(e);
  if (prev != device_) GL_CUDA_CHECK(cudaSetDevice(device_));
  for (auto& [cls, p] : cached_) GL_CUDA_CHECK(cudaFree(p));  // waits for the device: no kernel still reads p
  if (prev != device_) GL_CUDA_CHECK(cudaSetDevice(prev));
  cached_.clear();
  cached_bytes_ = 0;
}

DeviceBuffer::DeviceBuffer(Backend& backend, std::shared_ptr<Pool> pool, void* p, size_t bytes, BufferUsage u)
    : backend_(backend), pool_(std::move(pool)), ptr_(p), size_(bytes) {
  usage = u;
}

DeviceBuffer::~DeviceBuffer() { pool_->release(ptr_, size_); }

}  // namespace gl::cuda
