// vulkan.h - the Vulkan backend.
//
//   auto gpu = gl::vulkan::make_backend();          // discrete GPU first, then any device
//   if (!gpu) { fmt::print(stderr, "{}\n", gpu.error()); return 1; }   // no driver, no device
//   gl::Executor ex({gpu->get()});                  // ops Vulkan declines run on a CPU the scheduler adds
//
// Compute shaders are GLSL compiled to SPIR-V at build time and embedded in the library. Every
// Vulkan call is checked: a failure while recording or submitting a split comes back from
// compute() naming the node; a device fault (lost device) from synchronize() or an event's
// host_wait(). set_tensor/get_tensor (void) abort on a failed call. Shaders compute in f32 (no
// float64); prefill products on tensor cores take f16 operands, the activations split in two
// unless Options::precision is FAST: the op harness states the bound per op (OpCase::max_nmse_device).
//
// A split is recorded into a command buffer once and submitted again whenever the same split
// (ops, params, shapes, strides and memory) comes back: a step graph replayed costs no recording.
//
// Memory: one VkBuffer per Buffer (a planner arena or a weight buffer), device-local. Where that
// memory is also host-visible (lavapipe, integrated GPUs) transfers are memcpy on the mapping;
// otherwise they go through a host-visible staging buffer and a copy on the queue.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ggml-lite/backend.h"
#include "ggml-lite/status.h"

namespace gl::vulkan {

struct Options {
  int device = -1;             // index into devices(); -1: the first discrete GPU, else the first device
  bool force_staging = false;  // transfers through the staging buffer even where memory is mapped (tests)
  // Prefill products of F16/BF16 weights on tensor cores (VK_NV_cooperative_matrix) where the
  // device offers them (elsewhere, lavapipe included, the f32 tiled shader); false: the f32
  // tiled shader always.
  bool cooperative_matrix = true;
  // EXACT: on tensor cores each activation is split into two f16 halves (two products, ~22 bits
  // of x: within f32 rounding of the CPU). FAST: one product of x rounded to f16 (11 bits; on the
  // H200 that put the moe-MXFP4_MOE fixture's logits 3.4e-3 from the exact math).
  Precision precision = Precision::EXACT;
  // Output tile of the tensor-core products: 0 picks by shape (128 x 128 where that still gives
  // the GPU enough work groups, else 64 x 64); 64 or 128 takes that one always (tests, timing).
  uint32_t coop_tile = 0;
  // Weight rows per work group of the decode/verify GEMV: 0 picks by shape (2 where that still
  // gives the GPU enough work groups, else 1); 1 or 2 takes that one always (tests, timing).
  // Every output sums the same chunks in the same order at any of them.
  uint32_t gemv_rows = 0;
};

struct DeviceInfo {
  std::string name;  // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
};

// The Vulkan devices the loader reports, in its order (empty when there is no loader or driver).
std::vector<DeviceInfo> devices();
// Whether a GPU (discrete or integrated, not a CPU driver such as lavapipe) is present: what
// `--backend auto` asks before choosing Vulkan.
bool has_gpu();
// The backend on the chosen device, or why there is none ("no Vulkan device: ...").
Result<std::unique_ptr<Backend>> make_backend(const Options& opt = {});

struct ReplayStats {
  int64_t records = 0, replays = 0;  // splits recorded into command buffers, and resubmitted
};
// A Vulkan backend's split cache so far ({} for any other backend).
ReplayStats replay_stats(const Backend& backend);

}  // namespace gl::vulkan
