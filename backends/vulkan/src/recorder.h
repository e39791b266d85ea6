// recorder.h - records one split's dispatches into a command buffer.
//
//   Recorder rec(dev, pipes, cmd, sets);
//   Operand a = rec.operand(*node.src[0]);           // binding + element offset, type, strides
//   rec.dispatch(Shader::ELEMENTWISE, {a, d}, &push, sizeof push, n_groups);
//
// A tensor is bound from its byte offset rounded down to the device's storage-buffer offset
// alignment; the shader adds Operand::offset (elements of the tensor's type) to every index.
// Barriers go in only where a dispatch touches memory a dispatch since the last barrier wrote, or
// writes memory one since then read (the writes of a node's dispatches are its own memory and its
// workspace: begin_node says which node comes next). Independent nodes (the q, k, v products of
// one input) then run without a pipeline drain between them.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "device.h"
#include "ggml-lite/tensor.h"
#include "pipelines.h"
#include "profiler.h"

namespace gl::vulkan {

// The dtype codes the shaders read (common.glsl): how a binding's words are interpreted.
enum TypeCode : uint32_t { TYPE_F32 = 0, TYPE_F16 = 1, TYPE_BF16 = 2, TYPE_I32 = 3 };
// Whether t's dtype has a shader code (F32, F16, BF16, I32); quantized types have none.
bool has_type_code(DType t);
TypeCode type_code(DType t);
// The shader code of a quantized dtype (quants.glsl: Q8_0 and the types after it), 0 for one the
// shaders cannot decode (MXFP4, whose 17-byte blocks do not fall on 16-bit words).
uint32_t quant_code(DType t);
// Whether t holds rows of whole blocks of a decodable quantized type with every stride on a 16-bit
// word (such operands are indexed in words: Recorder::operand).
bool quant_rows(const Tensor& t);
// Whether every stride of t is a whole number of its elements (the shaders index in elements).
bool strides_in_elements(const Tensor& t);

struct Operand {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize bind_offset = 0, range = 0;
  uint32_t offset = 0;  // elements from the bound start to t's first element
  uint32_t type = TYPE_F32;
  std::array<uint32_t, 4> nb{};  // strides in elements
  std::array<uint32_t, 4> ne{};
  VkDeviceSize lo = 0, hi = 0;  // the tensor's bytes in `buffer` (hazard tracking)
  bool written = false;         // the node's memory or workspace: what its dispatches write
};

// The shader code of operand o of dtype t: its quant_code when quantized, else o's plain type.
uint32_t shader_type(DType t, const Operand& o);

// Descriptor sets for one command buffer; reset() once the GPU is done with it.
class DescriptorArena {
 public:
  explicit DescriptorArena(VkDevice dev) : dev_(dev) {}
  ~DescriptorArena();
  DescriptorArena(const DescriptorArena&) = delete;
  DescriptorArena& operator=(const DescriptorArena&) = delete;
  VkDescriptorSet allocate(VkDescriptorSetLayout layout);  // throws VkFault
  void reset();

 private:
  VkDevice dev_;
  std::vector<VkDescriptorPool> pools_;
  size_t current_ = 0;
};

class Recorder {
 public:
  // prof: times every dispatch (a barrier before each) where not null and enabled.
  Recorder(Device& dev, Pipelines& pipes, VkCommandBuffer cmd, DescriptorArena& sets, Profiler* prof = nullptr)
      : dev_(dev), pipes_(pipes), cmd_(cmd), sets_(sets), prof_(prof && prof->enabled() ? prof : nullptr) {}

  // The node whose dispatches are recorded next (see the top of this file).
  void begin_node(const Tensor& node) { node_ = &node; }
  // t's memory as a shader operand; throws VkFault when t is not memory of this device.
  Operand operand(const Tensor& t) const;
  // The same, written by the dispatch whichever node t is (a fused record writes every node's
  // output).
  Operand output(const Tensor& t) const {
    Operand o = operand(t);
    o.written = true;
    return o;
  }
  // The first `bytes` of node's planned workspace as an F32 operand.
  Operand workspace(const Tensor& node, size_t bytes) const;
  // Records an upload of `bytes` (a multiple of 4, at most 64 KiB) from host `data` into device
  // memory at `dst` (a node's workspace), ordered before the dispatches after it; its operand.
  Operand upload(void* dst, const void* data, uint32_t bytes);
  // Up to kMaxBindings operands (binding i = operands[i]; the rest repeat the last one), the
  // push constants, and groups_x * groups_y work groups (x is split over y past the device limit).
  void dispatch(Shader s, std::initializer_list<Operand> operands, const void* push, uint32_t push_bytes,
                uint32_t groups);
  // Orders everything recorded so far before everything after (shader, transfer and host access).
  // Also what ends every split's commands.
  void barrier();
  VkCommandBuffer cmd() const { return cmd_; }
  const Device& device() const { return dev_; }
  // Whether the driver builds s's pipeline (a shader for an optional device feature may fail
  // where the feature is offered but the driver rejects the shader: the caller takes another).
  bool has_pipeline(Shader s);

 private:
  Device& dev_;
  Pipelines& pipes_;
  VkCommandBuffer cmd_;
  DescriptorArena& sets_;
  Profiler* prof_;
  struct Range {
    VkBuffer buffer;
    VkDeviceSize lo, hi;
  };
  static bool overlaps(const Operand& o, const std::vector<Range>& rs);
  bool node_writes(const Device::Located& at, const Tensor& t) const;
  std::string profile_key(Shader s) const;
  const Tensor* node_ = nullptr;
  std::vector<Range> reads_, writes_;  // by the dispatches since the last barrier
};

}  // namespace gl::vulkan
