// staging.cu - the pinned ring (see staging.cuh).
#include "staging.cuh"

#include "common.cuh"

namespace gl::cuda {
namespace {

constexpr size_t kSlotAlign = 64;

}  // namespace

Staging::~Staging() {
  if (base_) (void)cudaFreeHost(base_);  // at exit the runtime may already be gone
}

void* Staging::take(size_t n, cudaStream_t stream) {
  if (n > size_ / 4) return nullptr;
  if (!base_) GL_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&base_), size_));
  const size_t off = (used_ + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  if (off + n > size_) {
    GL_CUDA_CHECK(cudaStreamSynchronize(stream));  // every queued copy out of the ring is done
    used_ = n;
    return base_;
  }
  used_ = off + n;
  return base_ + off;
}

}  // namespace gl::cuda
