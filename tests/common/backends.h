// backends.h - the backends compiled into this build, for tests that run on each.
//
//   for (gl::test::NamedBackend& nb : gl::test::compiled_backends())
//     run_on(*nb.backend);                       // "cpu", then "cuda" where built
//   auto cpu = gl::test::make_test_backend("cpu");
//
// The CPU backend is always present (2 threads: the test machines share their
// cores). Device backends join when their build flag is set and a device is
// present, so one test binary runs on machines with and without a GPU.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/backend.h"

namespace gl::test {

struct NamedBackend {
  std::string name;
  std::unique_ptr<Backend> backend;
};

// A fresh instance of every compiled backend, the CPU reference first.
std::vector<NamedBackend> compiled_backends();
// Their names, without creating them (for test-name generation).
std::vector<std::string> compiled_backend_names();
// A fresh backend by name; nullptr for a name not compiled in. "cpu-fast" and "cuda-fast" are the
// CPU and CUDA backends under Precision::FAST (the op tests run the matrix products on them too).
std::unique_ptr<Backend> make_test_backend(std::string_view name);
// Whether the named device backend runs on a CPU driver (Vulkan on lavapipe): tests that would
// take minutes there (long decodes) run a subset, and say so.
bool software_device(std::string_view name);

}  // namespace gl::test
