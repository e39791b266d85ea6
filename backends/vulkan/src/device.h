// device.h - one Vulkan instance + logical device + compute queue, and the device memory it hands out.
//
//   Result<std::shared_ptr<Device>> dev = Device::open(Options{});  // discrete GPU first
//   std::unique_ptr<Allocation> a = (*dev)->allocate(bytes, false);  // device-local VkBuffer
//   Device::Located at = (*dev)->locate(t.data);                     // tensor pointer -> buffer + offset
//
// Tensors carry a `void* data`; device memory has no host address, so each allocation gets a
// range of made-up addresses (never dereferenced, like a CUDA device pointer) from which locate()
// recovers the VkBuffer and the byte offset. Allocations keep the Device alive (shared_ptr).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ggml-lite/status.h"
#include "ggml-lite/vulkan.h"

namespace gl::vulkan {

class Device;

// One VkBuffer with its own memory. `mapped` is its host mapping where the memory is host-visible
// and coherent (else nullptr: transfers go through staging).
struct Allocation {
  std::shared_ptr<Device> device;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  size_t size = 0;
  char* mapped = nullptr;
  char* base = nullptr;  // made-up address of byte 0 (see locate)
  ~Allocation();
};

class Device : public std::enable_shared_from_this<Device> {
 public:
  // The device opt.device (-1: discrete GPU first), with VK_KHR_cooperative_matrix (else
  // VK_NV_cooperative_matrix) enabled where opt.cooperative_matrix asks and the device offers
  // what gemm_coop.comp needs; keeps
  // opt.precision and opt.coop_tile for the ops.
  static Result<std::shared_ptr<Device>> open(const Options& opt);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // A buffer of `bytes` (rounded up to 4) usable as storage and transfer source/destination.
  // host_visible: from a host-visible coherent type (staging); else device-local, mapped when that
  // type is host-visible too. Throws VkFault when the device is out of memory.
  std::unique_ptr<Allocation> allocate(size_t bytes, bool host_visible);

  struct Located {
    Allocation* alloc = nullptr;  // nullptr: not memory of this device
    size_t offset = 0;
  };
  Located locate(const void* p) const;

  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceLimits& limits() const { return props_.limits; }
  std::string name() const { return props_.deviceName; }
  // Whether compute shaders may use all the subgroup operations in `ops` (VK_SUBGROUP_FEATURE_*).
  bool subgroup_ops(VkSubgroupFeatureFlags ops) const { return (subgroup_ops_ & ops) == ops; }
  uint32_t subgroup_size() const { return subgroup_size_; }
  // Whether gemm_coop.comp may run (asked for at open() and offered by the device).
  bool coop_matrix() const { return coop_ != Coop::NONE; }
  // GL_VULKAN_PROFILE on a device with VK_KHR_pipeline_executable_properties (enabled then).
  bool pipeline_stats() const { return pipeline_stats_; }
  // Through which extension: gemm_coop.comp's SPIR-V is translated to KHR's (coop_khr.h) for KHR.
  enum class Coop : uint8_t { NONE, NV, KHR };
  Coop coop() const { return coop_; }
  // Whether tensor-core products split the activations into two f16 halves (Precision::EXACT).
  bool split_f16() const { return split_f16_; }
  uint32_t coop_tile() const { return coop_tile_; }  // Options::coop_tile
  uint32_t gemv_rows() const { return gemv_rows_; }  // Options::gemv_rows

 private:
  Device() = default;
  void create_device();
  uint32_t memory_type(uint32_t bits, bool host_visible) const;
  friend struct Allocation;
  void forget(const Allocation* a);

  VkInstance instance_ = VK_NULL_HANDLE;  // the process-wide instance (device.cpp), not owned
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties mem_{};
  VkSubgroupFeatureFlags subgroup_ops_ = 0;  // in compute shaders
  uint32_t subgroup_size_ = 0;
  Coop coop_ = Coop::NONE;
  bool split_f16_ = true;
  uint32_t coop_tile_ = 0;
  bool pipeline_stats_ = false;
  uint32_t gemv_rows_ = 0;

  mutable std::mutex mu_;                     // buffers may be freed from any thread
  std::map<uintptr_t, Allocation*> by_base_;  // made-up base address -> allocation
  uintptr_t next_base_ = uintptr_t{1} << 44;  // far from any host mapping, 64 KiB aligned ranges
};

}  // namespace gl::vulkan
