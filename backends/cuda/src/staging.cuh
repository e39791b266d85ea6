// staging.cuh - pinned host memory for small transfers, so writing step inputs never waits.
//
//   Staging st(8 << 20);
//   if (void* slot = st.take(n, stream)) { memcpy(slot, src, n); cudaMemcpyAsync(dev, slot, n, H2D, stream); }
//   st.reset();   // after the stream was synchronised: every slot is free again
//
// A step writes a few small inputs (tokens, positions, mask, row ids) before its kernels. From
// pageable memory each copy would have to finish before set_tensor returns; copied first into a
// pinned slot, it is queued and the caller's memory is free at once. Slots are handed out in
// order and freed all together when the stream is known to be idle (synchronize, or take()
// itself waiting when the ring is full).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace gl::cuda {

class Staging {
 public:
  explicit Staging(size_t bytes) : size_(bytes) {}
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // A pinned slot of n bytes, or nullptr when n is too large for staging (copy directly).
  // Waits for stream when the ring is full.
  void* take(size_t n, cudaStream_t stream);
  void reset() { used_ = 0; }
  size_t capacity() const { return size_; }

 private:
  size_t size_;
  size_t used_ = 0;
  char* base_ = nullptr;  // allocated on first use
};

}  // namespace gl::cuda
