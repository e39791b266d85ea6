// device.cpp - instance and device selection, device memory and the made-up address ranges.
#include "device.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "check.h"
#include "coop_khr.h"
#include "ggml-lite/diag.h"
#include "pipelines.h"

namespace gl::vulkan {
namespace {

constexpr uintptr_t kRangeAlign = uintptr_t{1} << 16;

std::string type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// An instance for enumeration and compute (no layers, no surface extensions); null if no loader
// or driver answers.
VkInstance create_instance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ggml-lite";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance inst = VK_NULL_HANDLE;
  if (vkCreateInstance(&info, nullptr, &inst) != VK_SUCCESS) return VK_NULL_HANDLE;
  return inst;
}

// One instance for the whole process, never destroyed: NVIDIA's driver refuses vkCreateInstance
// after a few dozen create/destroy cycles in one process (seen on the H200, where the op harness
// creates a backend per case). Null if no loader or driver answers.
VkInstance shared_instance() {
  static const VkInstance inst = create_instance();
  return inst;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance inst) {
  uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(inst, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPhysicalDevice> out(n);
  if (vkEnumeratePhysicalDevices(inst, &n, out.data()) != VK_SUCCESS) return {};
  out.resize(n);
  return out;
}

VkPhysicalDeviceSubgroupProperties subgroup_properties(VkPhysicalDevice d) {
  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p.pNext = &sg;
  vkGetPhysicalDeviceProperties2(d, &p);
  return sg;
}

VkPhysicalDeviceProperties properties(VkPhysicalDevice d) {
  VkPhysicalDeviceProperties p{};
  vkGetPhysicalDeviceProperties(d, &p);
  return p;
}

bool has_extension(VkPhysicalDevice d, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> es(n);
  if (vkEnumerateDeviceExtensionProperties(d, nullptr, &n, es.data()) != VK_SUCCESS) return false;
  return std::any_of(es.begin(), es.begin() + n,
                     [name](const VkExtensionProperties& e) { return std::string_view(e.extensionName) == name; });
}

// f16 in shaders, the Vulkan memory model (its SPIR-V declares it), subgroups of 32, work groups
// of 512 invocations and 43,024 bytes of shared memory (the 128 x 128 tile's under EXACT: three
// 128-row arrays of 48 + 8 halves a row, and the flag): what gemm_coop.comp needs beside the
// matrices.
bool coop_basics(VkPhysicalDevice d, void* coop_features) {
  if (subgroup_properties(d).subgroupSize != 32) return false;
  const VkPhysicalDeviceLimits l = properties(d).limits;
  if (l.maxComputeWorkGroupInvocations < 512 || l.maxComputeWorkGroupSize[0] < 512 ||
      l.maxComputeSharedMemorySize < 43024)
    return false;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.pNext = coop_features;
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(d, &f);
  return f12.shaderFloat16 && f12.vulkanMemoryModel;
}

// Whether every gemm_coop.comp variant has a VK_KHR_cooperative_matrix form (coop_khr.h): checked
// before the device is created with KHR rather than NV.
bool gemm_coop_translates() {
  for (Shader s : {Shader::GEMM_COOP, Shader::GEMM_COOP64, Shader::GEMM_COOP_F, Shader::GEMM_COOP64_F})
    if (coop_nv_to_khr(spirv(s)).empty()) return false;
  return true;
}

// gemm_coop.comp's products: 16 x 8 x 16, f16 A and B, f32 accumulator and result, subgroup scope.
bool is_gemm_coop_shape(uint32_t m, uint32_t n, uint32_t k, bool f16_ab, bool f32_cd, bool subgroup) {
  return m == 16 && n == 8 && k == 16 && f16_ab && f32_cd && subgroup;
}

// VK_NV_cooperative_matrix with gemm_coop.comp's products.
bool has_nv_coop_matrix(VkInstance inst, VkPhysicalDevice d) {
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (!has_extension(d, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) || !coop_basics(d, &cm) || !cm.cooperativeMatrix)
    return false;
  const auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  uint32_t n = 0;
  if (!get || get(d, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> ps(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (get(d, &n, ps.data()) != VK_SUCCESS) return false;
  return std::any_of(ps.begin(), ps.begin() + n, [](const VkCooperativeMatrixPropertiesNV& p) {
    return is_gemm_coop_shape(p.MSize, p.NSize, p.KSize,
                              p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV,
                              p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV,
                              p.scope == VK_SCOPE_SUBGROUP_NV);
  });
}

// VK_KHR_cooperative_matrix with gemm_coop.comp's products (coop_khr.h).
bool has_khr_coop_matrix(VkInstance inst, VkPhysicalDevice d) {
  KhrCoopFeatures cm;
  if (!has_extension(d, kKhrCoopExtension) || !coop_basics(d, &cm) || !cm.cooperativeMatrix) return false;
  const auto get = reinterpret_cast<KhrCoopPropertiesFn>(
      vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  uint32_t n = 0;
  if (!get || get(d, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<KhrCoopProperties> ps(n);
  if (get(d, &n, ps.data()) != VK_SUCCESS) return false;
  return std::any_of(ps.begin(), ps.begin() + n, [](const KhrCoopProperties& p) {
    return is_gemm_coop_shape(p.MSize, p.NSize, p.KSize, p.AType == kKhrFloat16 && p.BType == kKhrFloat16,
                              p.CType == kKhrFloat32 && p.ResultType == kKhrFloat32, p.scope == kKhrScopeSubgroup);
  });
}

// The requested index, or the first discrete GPU, else the first integrated, else device 0.
int pick(const std::vector<VkPhysicalDevice>& ds) {
  for (VkPhysicalDeviceType t : {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU})
    for (size_t i = 0; i < ds.size(); ++i)
      if (properties(ds[i]).deviceType == t) return static_cast<int>(i);
  return 0;
}

int compute_queue_family(VkPhysicalDevice d) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fams(n);
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, fams.data());
  for (uint32_t i = 0; i < n; ++i)
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  return -1;
}

}  // namespace

std::vector<DeviceInfo> devices() {
  VkInstance inst = shared_instance();
  if (!inst) return {};
  std::vector<DeviceInfo> out;
  for (VkPhysicalDevice d : physical_devices(inst)) {
    const VkPhysicalDeviceProperties p = properties(d);
    out.push_back({p.deviceName, type_name(p.deviceType)});
  }
  return out;
}

bool has_gpu() {
  const std::vector<DeviceInfo> ds = devices();
  return std::any_of(ds.begin(), ds.end(),
                     [](const DeviceInfo& d) { return d.type == "discrete" || d.type == "integrated"; });
}

Result<std::shared_ptr<Device>> Device::open(const Options& opt) {
  std::shared_ptr<Device> dev(new Device());
  dev->instance_ = shared_instance();
  if (!dev->instance_) return Error("no Vulkan device: vkCreateInstance failed (no Vulkan loader or driver installed)");
  const std::vector<VkPhysicalDevice> ds = physical_devices(dev->instance_);
  if (ds.empty()) return Error("no Vulkan device: the Vulkan loader reports no physical device");
  const int index = opt.device;
  if (index >= static_cast<int>(ds.size()))
    return Error("no Vulkan device " + std::to_string(index) + ": " + std::to_string(ds.size()) + " present");
  dev->phys_ = ds[static_cast<size_t>(index < 0 ? pick(ds) : index)];
  dev->props_ = properties(dev->phys_);
  vkGetPhysicalDeviceMemoryProperties(dev->phys_, &dev->mem_);
  // Subgroup operations are core in Vulkan 1.1, but which ones a device offers in which stages is not.
  const VkPhysicalDeviceSubgroupProperties sg = subgroup_properties(dev->phys_);
  dev->subgroup_ops_ = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sg.supportedOperations : 0;
  dev->subgroup_size_ = sg.subgroupSize;
  // KHR where the device has it (NVIDIA's NV products run far below the tensor cores' rate, see
  // coop_khr.h), else NV; GL_VULKAN_COOP=nv keeps NV for A/B timing.
  if (opt.cooperative_matrix) {
    const bool khr =
        !diag_env(Diag::VULKAN_COOP_NV) && has_khr_coop_matrix(dev->instance_, dev->phys_) && gemm_coop_translates();
    dev->coop_ = khr ? Coop::KHR : has_nv_coop_matrix(dev->instance_, dev->phys_) ? Coop::NV : Coop::NONE;
  }
  dev->split_f16_ = opt.precision == Precision::EXACT;
  dev->coop_tile_ = opt.coop_tile;
  // A/B timing of the tile sizes (every output element sums the same k blocks in the same order).
  if (opt.coop_tile == 0 && diag_env(Diag::VULKAN_TILE64)) dev->coop_tile_ = 64;
  if (opt.coop_tile == 0 && diag_env(Diag::VULKAN_TILE128)) dev->coop_tile_ = 128;
  dev->gemv_rows_ = opt.gemv_rows;  // and A/B timing of the GEMV's rows per work group (same bits)
  if (opt.gemv_rows == 0 && diag_env(Diag::VULKAN_GEMV_ROWS1)) dev->gemv_rows_ = 1;
  if (opt.gemv_rows == 0 && diag_env(Diag::VULKAN_GEMV_ROWS2)) dev->gemv_rows_ = 2;
  const int fam = compute_queue_family(dev->phys_);
  if (fam < 0) return Error(std::string("Vulkan device ") + dev->props_.deviceName + " has no compute queue");
  dev->queue_family_ = static_cast<uint32_t>(fam);
  if (dev->props_.apiVersion < VK_API_VERSION_1_2)
    return Error(std::string("Vulkan device ") + dev->props_.deviceName + " supports Vulkan < 1.2 (1.2 is needed)");
  try {
    dev->create_device();
  } catch (const VkFault& f) {
    return Error(std::string("Vulkan device ") + dev->props_.deviceName + ": " + f.what);
  }
  return dev;
}

// 16-bit storage (F16/BF16 tensors) and timeline semaphores (host sync) are required.
void Device::create_device() {
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(phys_, &have);
  if (!f11.storageBuffer16BitAccess || !f12.timelineSemaphore || !have.features.shaderInt16)
    fail(__FILE__, __LINE__, "storageBuffer16BitAccess, shaderInt16 and timelineSemaphore are required",
         VK_ERROR_FEATURE_NOT_PRESENT);

  VkPhysicalDeviceVulkan12Features want12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  want12.timelineSemaphore = VK_TRUE;
  VkPhysicalDeviceVulkan11Features want11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  want11.storageBuffer16BitAccess = VK_TRUE;
  want11.pNext = &want12;
  VkPhysicalDeviceFeatures2 want{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  want.features.shaderInt16 = VK_TRUE;
  want.pNext = &want11;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV want_nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  KhrCoopFeatures want_khr;
  want_nv.cooperativeMatrix = want_khr.cooperativeMatrix = VK_TRUE;
  const char* coop_ext = coop_ == Coop::KHR ? kKhrCoopExtension : VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  if (coop_ != Coop::NONE) {
    want12.shaderFloat16 = VK_TRUE;
    want12.vulkanMemoryModel = VK_TRUE;
    want12.pNext = coop_ == Coop::KHR ? static_cast<void*>(&want_khr) : static_cast<void*>(&want_nv);
  }

  // GL_VULKAN_PROFILE: each pipeline's statistics (registers, local memory) where offered.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR want_pe{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  std::vector<const char*> exts;
  if (coop_ != Coop::NONE) exts.push_back(coop_ext);
  pipeline_stats_ =
      diag_env(Diag::VULKAN_PROFILE) && has_extension(phys_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (pipeline_stats_) {
    want_pe.pipelineExecutableInfo = VK_TRUE;
    want_pe.pNext = want.pNext;
    want.pNext = &want_pe;
    exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = queue_family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &want;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  info.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  info.ppEnabledExtensionNames = exts.empty() ? nullptr : exts.data();
  GL_VK_CHECK(vkCreateDevice(phys_, &info, nullptr, &device_));
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

Device::~Device() {
  if (device_) {
    (void)vkDeviceWaitIdle(device_);  // a lost device has nothing left to wait for
    vkDestroyDevice(device_, nullptr);
  }
}

// Device-local first (host-visible too where it can be: no staging needed); for staging, host
// visible and coherent.
uint32_t Device::memory_type(uint32_t bits, bool host_visible) const {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags want = host_visible ? host : VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT};
  for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & want) == want) return i;
  for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (!host_visible || (mem_.memoryTypes[i].propertyFlags & host) == host)) return i;
  fail(__FILE__, __LINE__, "no suitable memory type", VK_ERROR_OUT_OF_DEVICE_MEMORY);
}

std::unique_ptr<Allocation> Device::allocate(size_t bytes, bool host_visible) {
  auto a = std::make_unique<Allocation>();
  a->size = std::max<size_t>((bytes + 3) / 4 * 4, 4);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = a->size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  GL_VK_CHECK(vkCreateBuffer(device_, &bi, nullptr, &a->buffer));
  a->device = shared_from_this();  // from here on ~Allocation releases what exists
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, a->buffer, &req);
  const uint32_t type = memory_type(req.memoryTypeBits, host_visible);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  GL_VK_CHECK(vkAllocateMemory(device_, &ai, nullptr, &a->memory));
  GL_VK_CHECK(vkBindBufferMemory(device_, a->buffer, a->memory, 0));
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if ((mem_.memoryTypes[type].propertyFlags & host) == host) {
    void* p = nullptr;
    GL_VK_CHECK(vkMapMemory(device_, a->memory, 0, VK_WHOLE_SIZE, 0, &p));
    a->mapped = static_cast<char*>(p);
  }
  std::lock_guard lock(mu_);
  a->base = reinterpret_cast<char*>(next_base_);
  next_base_ += (a->size + kRangeAlign) / kRangeAlign * kRangeAlign + kRangeAlign;  // a gap between ranges
  by_base_[reinterpret_cast<uintptr_t>(a->base)] = a.get();
  return a;
}

Device::Located Device::locate(const void* p) const {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mu_);
  auto it = by_base_.upper_bound(addr);
  if (it == by_base_.begin()) return {};
  --it;
  const size_t off = addr - it->first;
  if (off > it->second->size) return {};  // one past the end is a valid (empty) position
  return {it->second, off};
}

void Device::forget(const Allocation* a) {
  std::lock_guard lock(mu_);
  by_base_.erase(reinterpret_cast<uintptr_t>(a->base));
}

Allocation::~Allocation() {
  if (!device) return;
  if (base) device->forget(this);
  // Queued work may still read or write it (an arena replaced by a larger one): the queue must
  // be done first. After a device loss there is nothing to wait for.
  (void)vkQueueWaitIdle(device->queue());
  VkDevice d = device->handle();
  if (mapped) vkUnmapMemory(d, memory);
  if (buffer) vkDestroyBuffer(d, buffer, nullptr);
  if (memory) vkFreeMemory(d, memory, nullptr);
}

}  // namespace gl::vulkan
