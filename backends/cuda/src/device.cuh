// device.cuh - makes a backend's device current for a scope.
//
//   DeviceScope on(ctx.device);   // calls below run on ctx.device; the caller's device is restored
//
// Several CUDA backends may share a host thread, and the current device is per-thread state.
#pragma once

#include "common.cuh"

namespace gl::cuda {

class DeviceScope {
 public:
  explicit DeviceScope(int device) : device_(device) {
    GL_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device_) GL_CUDA_CHECK(cudaSetDevice(device_));
  }
  ~DeviceScope() {
    if (prev_ != device_) GL_CUDA_CHECK(cudaSetDevice(prev_));
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int device_;
  int prev_ = 0;
};

}  // namespace gl::cuda
