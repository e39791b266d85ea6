// common.cuh - shared by every CUDA source: the checking macros and the per-backend context.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "ggml-lite/tensor.h"

namespace gl::cuda {

// Programmer-level failures (a CUDA call that must not fail) abort with file:line and the call.
[[noreturn]] void fail(const char* file, int line, const char* call, const char* msg);

#define GL_CUDA_CHECK(call)                                                    \
  do {                                                                         \
    cudaError_t gl_err_ = (call);                                              \
    if (gl_err_ != cudaSuccess)                                                \
      ::gl::cuda::fail(__FILE__, __LINE__, #call, cudaGetErrorString(gl_err_)); \
  } while (0)

#define GL_CUBLAS_CHECK(call)                                                                  \
  do {                                                                                         \
    cublasStatus_t gl_st_ = (call);                                                            \
    if (gl_st_ != CUBLAS_STATUS_SUCCESS)                                                       \
      ::gl::cuda::fail(__FILE__, __LINE__, #call, cublasGetStatusString(gl_st_));             \
  } while (0)

// What a kernel entry needs: the stream to launch on and the cuBLAS handle bound to it.
struct Ctx {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  int device = 0;
};

}  // namespace gl::cuda
