// check.h - the one checking macro for Vulkan calls.
//
//   GL_VK_CHECK(vkQueueSubmit(queue, 1, &info, VK_NULL_HANDLE));
//
// A failed call throws VkFault ("file:line: call: VK_ERROR_..."); every entry point of the backend
// catches it and returns a Status naming its node or transfer (or aborts where it returns void).
#pragma once

#include <vulkan/vulkan.h>

#include <string>

namespace gl::vulkan {

struct VkFault {
  std::string what;
};

const char* result_name(VkResult r);
[[noreturn]] void fail(const char* file, int line, const char* call, VkResult r);

}  // namespace gl::vulkan

#define GL_VK_CHECK(call)                                                                \
  do {                                                                                   \
    const VkResult gl_vk_r_ = (call);                                                    \
    if (gl_vk_r_ != VK_SUCCESS) ::gl::vulkan::fail(__FILE__, __LINE__, #call, gl_vk_r_); \
  } while (0)
