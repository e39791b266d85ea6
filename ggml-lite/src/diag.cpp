// diag.cpp - the one getenv of the tree (see diag.h).
#include "ggml-lite/diag.h"

#include <cstdlib>
#include <string>

namespace gl {
namespace {

struct Switch {
  std::string_view name;
  std::string_view on;  // the value that turns the diagnostic on
};

// No default: a new Diag without a row fails to compile (-Werror=switch).
Switch switch_of(Diag d) {
  switch (d) {
    case Diag::CUDA_GRAPHS_OFF: return {"GL_CUDA_GRAPHS", "0"};
    case Diag::CUDA_FUSION_OFF: return {"GL_CUDA_FUSION", "0"};
    case Diag::CUDA_PDL_OFF: return {"GL_CUDA_PDL", "0"};
    case Diag::CUDA_EARLY_W_OFF: return {"GL_CUDA_EARLY_WEIGHTS", "0"};
    case Diag::CUDA_STAGED_OFF: return {"GL_CUDA_STAGED_GEMV", "0"};
    case Diag::CUDA_RAW_STAGE_OFF: return {"GL_CUDA_RAW_STAGE", "0"};
    case Diag::CUDA_PROFILE: return {"GL_CUDA_PROFILE", "1"};
    case Diag::CUDA_TIMING: return {"GL_CUDA_TIMING", "1"};
    case Diag::CPU_PROFILE: return {"GL_CPU_PROFILE", "1"};
    case Diag::VULKAN_REPLAY_OFF: return {"GL_VULKAN_REPLAY", "0"};
    case Diag::VULKAN_PROFILE: return {"GL_VULKAN_PROFILE", "1"};
    case Diag::VULKAN_TILE64: return {"GL_VULKAN_COOP_TILE", "64"};
    case Diag::VULKAN_TILE128: return {"GL_VULKAN_COOP_TILE", "128"};
    case Diag::VULKAN_GEMV_ROWS1: return {"GL_VULKAN_GEMV_ROWS", "1"};
    case Diag::VULKAN_GEMV_ROWS2: return {"GL_VULKAN_GEMV_ROWS", "2"};
    case Diag::VULKAN_COOP_NV: return {"GL_VULKAN_COOP", "nv"};
    case Diag::UPDATE_GOLDEN: return {"GL_UPDATE_GOLDEN", "1"};
  }
  return {};  // not reached: every switch returns above
}

}  // namespace

bool diag_env(Diag d) {
  const Switch s = switch_of(d);
  const char* v = std::getenv(std::string(s.name).c_str());
  return v != nullptr && s.on == v;
}

std::string_view diag_env_name(Diag d) { return switch_of(d).name; }

}  // namespace gl
