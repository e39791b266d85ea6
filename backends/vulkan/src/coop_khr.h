// coop_khr.h - tensor-core products through VK_KHR_cooperative_matrix, whose GLSL extension the
// build's glslc (Debian 12's shaderc 2023.2) does not know.
//
//   std::vector<uint32_t> khr = coop_nv_to_khr(spirv(Shader::GEMM_COOP));  // empty: not translatable
//
// gemm_coop.comp is written against GL_NV_cooperative_matrix. NVIDIA's driver runs the NV
// extension's products far below the tensor cores' rate on an H100 (~31 TFLOP/s of f16 products,
// the products alone, with nothing else in the loop; docs/bench/s14.md), while its KHR extension
// is the one it builds on. The two differ in SPIR-V only in opcodes, in a matrix type's "use" (A,
// B or accumulator: KHR types say which, NV types do not) and in how a load's layout is given.
// coop_nv_to_khr rewrites the module: each NV matrix type takes the one use the module's products
// give it (a type used as two operands is not translatable, so the shader declares its A, B and
// accumulator matrices of different shapes), loads and stores take a layout constant instead of
// a column-major bool, and the capability and extension change.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gl::vulkan {

// The VK_KHR_cooperative_matrix structures, spelled out for Vulkan headers older than 1.3.255
// (Debian 12 has 1.3.239). Same layout and values as the registry's.
inline constexpr const char* kKhrCoopExtension = "VK_KHR_cooperative_matrix";
inline constexpr auto kKhrCoopFeaturesType = static_cast<VkStructureType>(1000506000);
inline constexpr auto kKhrCoopPropertiesType = static_cast<VkStructureType>(1000506001);
inline constexpr uint32_t kKhrFloat16 = 0, kKhrFloat32 = 1, kKhrScopeSubgroup = 3;

struct KhrCoopFeatures {
  VkStructureType sType = kKhrCoopFeaturesType;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct KhrCoopProperties {
  VkStructureType sType = kKhrCoopPropertiesType;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  uint32_t scope = 0;
};

using KhrCoopPropertiesFn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, KhrCoopProperties*);

// The module with its GL_NV_cooperative_matrix instructions as SPV_KHR_cooperative_matrix ones;
// empty where it cannot be translated (see the top of this file) or is not a SPIR-V module.
std::vector<uint32_t> coop_nv_to_khr(std::span<const uint32_t> words);

}  // namespace gl::vulkan
