// backends.cpp - the test-backend registry.
#include "common/backends.h"

#include <iostream>

#include "ggml-lite/cpu.h"
#ifdef GL_HAVE_CUDA
#include "ggml-lite/cuda.h"
#endif
#ifdef GL_HAVE_VULKAN
#include "ggml-lite/vulkan.h"
#endif

namespace gl::test {

std::vector<std::string> compiled_backend_names() {
  std::vector<std::string> names{"cpu"};
#ifdef GL_HAVE_CUDA
  if (cuda::device_count() > 0) names.emplace_back("cuda");
#endif
#ifdef GL_HAVE_VULKAN
  if (!vulkan::devices().empty()) names.emplace_back("vulkan");
#endif
  return names;
}

std::unique_ptr<Backend> make_test_backend(std::string_view name) {
  if (name == "cpu") return cpu::make_backend({.n_threads = 2});
  if (name == "cpu-fast") {
    std::unique_ptr<Backend> be = cpu::make_backend({.n_threads = 2});
    be->set_precision(Precision::FAST);
    return be;
  }
#ifdef GL_HAVE_CUDA
  if (name == "cuda" && cuda::device_count() > 0) return cuda::make_backend();
  if (name == "cuda-fast" && cuda::device_count() > 0) {
    std::unique_ptr<Backend> be = cuda::make_backend();
    be->set_precision(Precision::FAST);
    return be;
  }
#endif
#ifdef GL_HAVE_VULKAN
  if (name == "vulkan") {
    Result<std::unique_ptr<Backend>> vk = vulkan::make_backend();
    if (vk) return std::move(*vk);
    std::cerr << "make_test_backend: " << vk.error() << "\n";
  }
#endif
  return nullptr;
}

bool software_device(std::string_view name) {
#ifdef GL_HAVE_VULKAN
  if (name == "vulkan") return !vulkan::has_gpu();
#endif
  return false;
}

std::vector<NamedBackend> compiled_backends() {
  std::vector<NamedBackend> out;
  for (std::string& name : compiled_backend_names()) {
    std::unique_ptr<Backend> be = make_test_backend(name);
    out.push_back({std::move(name), std::move(be)});
  }
  return out;
}

}  // namespace gl::test
