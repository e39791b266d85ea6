// pipelines.h - the embedded shaders and their compute pipelines, created on first use.
//
//   Pipelines p(dev);
//   VkPipeline e = p.get(Shader::ELEMENTWISE);   // compiled by the driver once per backend
//
// Every pipeline shares one layout: kMaxBindings storage buffers (set 0, bindings 0..7) and
// kPushBytes of push constants, so a dispatch only differs in what it binds and pushes.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "device.h"

namespace gl::vulkan {

// One per shaders/<name>.comp and per variant (the lists in CMakeLists.txt).
enum class Shader : uint8_t {
  ELEMENTWISE,
  ELEMENTWISE_CHAIN,
  NORM,
  SOFTMAX,
  ROPE,
  ROWS,
  COPY,
  REDUCE,
  SSM_CONV,
  MATMUL,
  GEMV,
  GEMV2,
  GEMV2_D,
  GEMV2_BF16,
  GEMV2_BF16_D,
  GEMV2_F16,
  GEMV2_F16_D,
  GEMM,
  GEMM_COOP,
  GEMM_COOP64,
  GEMM_COOP_F,  // Precision::FAST: activations rounded to f16, one product
  GEMM_COOP64_F,
  GDR,
  GDR_SPLIT,
  GDR_PREP,
  GDR_PREP_F32,  // F32 q, k and v
  GDR_SCAN,
  FLASH_ATTN,
  FLASH_ATTN_ROWS,
  FLASH_ATTN_TILE,
  COUNT
};

inline constexpr uint32_t kMaxBindings = 8;
inline constexpr uint32_t kPushBytes = 128;  // the minimum every Vulkan device offers

std::span<const uint32_t> spirv(Shader s);
const char* shader_name(Shader s);  // "gemm_coop": the shader file's name
// gemm_coop.comp or one of its variants (tensor-core products).
inline bool is_gemm_coop(Shader s) {
  return s == Shader::GEMM_COOP || s == Shader::GEMM_COOP64 || s == Shader::GEMM_COOP_F || s == Shader::GEMM_COOP64_F;
}

class Pipelines {
 public:
  explicit Pipelines(Device& dev);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  VkPipeline get(Shader s);  // throws VkFault
  // One line per pipeline made so far with the driver's statistics (registers, local memory),
  // where Device::pipeline_stats(); else empty.
  std::string statistics() const;
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }

 private:
  Device& dev_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::array<VkPipeline, static_cast<size_t>(Shader::COUNT)> pipelines_{};
  std::array<std::string, static_cast<size_t>(Shader::COUNT)> stats_;
};

}  // namespace gl::vulkan
