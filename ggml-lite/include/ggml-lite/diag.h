// diag.h - the environment switches, all of them, read in one place.
//
//   if (gl::diag_env(gl::Diag::CUDA_TIMING)) prof.start_timing();   // GL_CUDA_TIMING=1
//   bool capture = !gl::diag_env(gl::Diag::CUDA_GRAPHS_OFF);        // GL_CUDA_GRAPHS=0
//
// Environment variables may only switch diagnostics that cannot change results (capture, fusion
// and dependent launches off for A/B timing, profiling, rewriting golden files in tests).
// Anything that changes results is a typed option (RunConfig, backend Options). A new switch is
// a row here, so `grep -rn getenv` finds this file alone.
#pragma once

#include <cstdint>
#include <string_view>

namespace gl {

enum class Diag : uint8_t {
  CUDA_GRAPHS_OFF,     // GL_CUDA_GRAPHS=0: launch every split eagerly, no CUDA graph capture
  CUDA_FUSION_OFF,     // GL_CUDA_FUSION=0: launch every node on its own
  CUDA_PDL_OFF,        // GL_CUDA_PDL=0: no programmatic dependent launches
  CUDA_EARLY_W_OFF,    // GL_CUDA_EARLY_WEIGHTS=0: GEMVs load no weights before the previous kernel ends
  CUDA_STAGED_OFF,     // GL_CUDA_STAGED_GEMV=0: no int8 GEMV stages its weight rows in shared memory (same bits)
  CUDA_RAW_STAGE_OFF,  // GL_CUDA_RAW_STAGE=0: MoE tensor-core tiles read quantized weights per thread (same bits)
  CUDA_PROFILE,        // GL_CUDA_PROFILE=1: per-node kernel times at exit
  CUDA_TIMING,         // GL_CUDA_TIMING=1: device and host time per step at exit
  CPU_PROFILE,         // GL_CPU_PROFILE=1: per-node times of the CPU backend at exit
  VULKAN_REPLAY_OFF,   // GL_VULKAN_REPLAY=0: record every Vulkan split afresh, no command-buffer reuse
  VULKAN_PROFILE,      // GL_VULKAN_PROFILE=1: per-dispatch shader times of the Vulkan backend at exit, and
                       // each pipeline's driver statistics (registers, local memory) where offered
  VULKAN_TILE64,       // GL_VULKAN_COOP_TILE=64: every Vulkan tensor-core product on 64 x 64 tiles (same bits)
  VULKAN_TILE128,      // GL_VULKAN_COOP_TILE=128: on 128 x 128 tiles (same bits; A/B timing)
  VULKAN_GEMV_ROWS1,   // GL_VULKAN_GEMV_ROWS=1: one weight row per Vulkan GEMV work group (same bits)
  VULKAN_GEMV_ROWS2,   // GL_VULKAN_GEMV_ROWS=2: two (same bits; A/B timing)
  VULKAN_COOP_NV,      // GL_VULKAN_COOP=nv: Vulkan tensor-core products through VK_NV_cooperative_matrix, not KHR
  UPDATE_GOLDEN,       // GL_UPDATE_GOLDEN=1: tests rewrite their golden files instead of comparing
};

// Whether the switch is on: its variable is set to exactly its "on" value.
bool diag_env(Diag d);
// The variable behind a switch, for messages ("GL_CUDA_GRAPHS").
std::string_view diag_env_name(Diag d);

}  // namespace gl
