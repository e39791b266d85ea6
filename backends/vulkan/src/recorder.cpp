// recorder.cpp - operands, descriptor sets and dispatches.
#include "recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "check.h"

namespace gl::vulkan {
namespace {

constexpr uint32_t kSetsPerPool = 256;

size_t elem_bytes(DType t) { return t == DType::F16 || t == DType::BF16 ? 2 : 4; }

}  // namespace

bool has_type_code(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::I32; }

TypeCode type_code(DType t) {
  if (t == DType::F16) return TYPE_F16;
  if (t == DType::BF16) return TYPE_BF16;
  if (t == DType::I32) return TYPE_I32;
  return TYPE_F32;
}

uint32_t quant_code(DType t) {
  switch (t) {
    case DType::Q8_0: return 4;
    case DType::Q4_0: return 5;
    case DType::Q4_1: return 6;
    case DType::Q5_0: return 7;
    case DType::Q5_1: return 8;
    case DType::Q2_K: return 9;
    case DType::Q3_K: return 10;
    case DType::Q4_K: return 11;
    case DType::Q5_K: return 12;
    case DType::Q6_K: return 13;
    case DType::IQ4_NL: return 14;
    case DType::IQ4_XS: return 15;
    default: return 0;
  }
}

uint32_t shader_type(DType t, const Operand& o) { return dtype_traits(t).is_quant ? quant_code(t) : o.type; }

bool quant_rows(const Tensor& t) {
  const DTypeTraits& tr = dtype_traits(t.type);
  if (quant_code(t.type) == 0 || t.ne[0] % tr.block_size != 0 || t.nb[0] != tr.block_bytes) return false;
  if (nelements(t) >= (int64_t{1} << 32)) return false;
  return t.nb[1] % 2 == 0 && t.nb[2] % 2 == 0 && t.nb[3] % 2 == 0;
}

bool strides_in_elements(const Tensor& t) {
  if (!has_type_code(t.type)) return false;
  const size_t e = elem_bytes(t.type);
  return std::all_of(t.nb.begin(), t.nb.end(), [e](size_t nb) { return nb % e == 0; });
}

DescriptorArena::~DescriptorArena() {
  for (VkDescriptorPool p : pools_) vkDestroyDescriptorPool(dev_, p, nullptr);
}

VkDescriptorSet DescriptorArena::allocate(VkDescriptorSetLayout layout) {
  for (;; ++current_) {
    if (current_ == pools_.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
      VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      pi.maxSets = kSetsPerPool;
      pi.poolSizeCount = 1;
      pi.pPoolSizes = &size;
      VkDescriptorPool p = VK_NULL_HANDLE;
      GL_VK_CHECK(vkCreateDescriptorPool(dev_, &pi, nullptr, &p));
      pools_.push_back(p);
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pools_[current_];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult r = vkAllocateDescriptorSets(dev_, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) GL_VK_CHECK(r);
  }
}

void DescriptorArena::reset() {
  for (VkDescriptorPool p : pools_) GL_VK_CHECK(vkResetDescriptorPool(dev_, p, 0));
  current_ = 0;
}

// Whether the current node's dispatches may write t (at: where t is): it overlaps the node's own
// memory (its output, or an input it works in place on) or is its workspace. Without a node
// (no begin_node) everything counts as written: a barrier after every dispatch.
bool Recorder::node_writes(const Device::Located& at, const Tensor& t) const {
  if (!node_) return true;
  if (node_->workspace && t.data == node_->workspace) return true;
  const Device::Located n = dev_.locate(node_->data);
  return n.alloc == at.alloc && n.offset < at.offset + nbytes(t) && at.offset < n.offset + nbytes(*node_);
}

Operand Recorder::workspace(const Tensor& node, size_t bytes) const {
  Tensor ws;
  ws.ne = {static_cast<int64_t>(bytes / sizeof(float)), 1, 1, 1};
  set_contiguous_strides(ws);
  ws.data = node.workspace;
  ws.name = node.name + " (workspace)";
  return operand(ws);
}

Operand Recorder::operand(const Tensor& t) const {
  const Device::Located at = dev_.locate(t.data);
  if (!at.alloc) throw VkFault{"tensor '" + t.name + "' is not in this Vulkan device's memory"};
  const size_t align = std::max<size_t>(dev_.limits().minStorageBufferOffsetAlignment, 4);
  const size_t e = has_type_code(t.type) ? elem_bytes(t.type) : 2;  // quantized blocks: 16-bit words
  Operand o;
  o.buffer = at.alloc->buffer;
  o.bind_offset = at.offset / align * align;
  const size_t rest = at.alloc->size - o.bind_offset;
  o.range = std::min<size_t>(rest, dev_.limits().maxStorageBufferRange / 4 * 4);
  const size_t lead = at.offset - o.bind_offset;
  if (lead % e != 0) throw VkFault{"tensor '" + t.name + "' is not aligned to its element size"};
  if (at.offset + nbytes(t) > o.bind_offset + o.range)
    throw VkFault{"tensor '" + t.name + "' lies beyond the device's maxStorageBufferRange from its binding"};
  o.offset = static_cast<uint32_t>(lead / e);
  o.lo = at.offset;
  o.hi = at.offset + nbytes(t);
  o.written = node_writes(at, t);
  o.type = type_code(t.type);
  for (int i = 0; i < 4; ++i) {
    o.nb[i] = static_cast<uint32_t>(t.nb[i] / e);
    o.ne[i] = static_cast<uint32_t>(t.ne[i]);
  }
  return o;
}

Operand Recorder::upload(void* dst, const void* data, uint32_t bytes) {
  Tensor t;
  t.ne = {bytes / 4, 1, 1, 1};
  set_contiguous_strides(t);
  t.data = dst;
  t.name = "workspace";
  const Device::Located at = dev_.locate(dst);
  if (!at.alloc || at.offset % 4 != 0) throw VkFault{"workspace is not 4-byte aligned memory of this device"};
  barrier();  // dispatches before may still read or write that memory
  vkCmdUpdateBuffer(cmd_, at.alloc->buffer, at.offset, bytes, data);
  barrier();
  return operand(t);
}

bool Recorder::has_pipeline(Shader s) {
  try {
    pipes_.get(s);
    return true;
  } catch (const VkFault&) {
    return false;
  }
}

// "MUL_MAT gemm bf16[4096,12288,1,1] f32[4096,512,1,1]": the op, the shader and the first two
// sources (a profile row).
std::string Recorder::profile_key(Shader s) const {
  if (!node_) return fmt::format("(no node) {}", shader_name(s));
  std::string k = fmt::format("{} {}", op_name(node_->op), shader_name(s));
  for (int i = 0; i < node_->n_srcs() && i < 2; ++i) {
    const Tensor& t = *node_->src[i];
    k += fmt::format(" {}[{},{},{},{}]", dtype_name(t.type), t.ne[0], t.ne[1], t.ne[2], t.ne[3]);
  }
  return k;
}

bool Recorder::overlaps(const Operand& o, const std::vector<Range>& rs) {
  return std::any_of(rs.begin(), rs.end(),
                     [&o](const Range& r) { return r.buffer == o.buffer && r.lo < o.hi && o.lo < r.hi; });
}

void Recorder::barrier() {
  reads_.clear();
  writes_.clear();
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(
      cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
      nullptr, 0, nullptr);
}

void Recorder::dispatch(Shader s, std::initializer_list<Operand> operands, const void* push, uint32_t push_bytes,
                        uint32_t groups) {
  GL_ASSERT(operands.size() > 0 && operands.size() <= kMaxBindings && push_bytes <= kPushBytes,
            "vulkan: dispatch with too many operands or push bytes");
  if (groups == 0) return;
  const bool hazard = std::any_of(operands.begin(), operands.end(), [this](const Operand& o) {
    return overlaps(o, writes_) || (o.written && overlaps(o, reads_));
  });
  if (hazard || prof_) barrier();
  VkPipeline pipe = pipes_.get(s);
  VkDescriptorSet set = sets_.allocate(pipes_.set_layout());
  std::array<VkDescriptorBufferInfo, kMaxBindings> infos{};
  std::array<VkWriteDescriptorSet, kMaxBindings> writes{};
  for (uint32_t i = 0; i < kMaxBindings; ++i) {
    const Operand& o = *(operands.begin() + std::min<size_t>(i, operands.size() - 1));
    infos[i] = {o.buffer, o.bind_offset, o.range};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(dev_.handle(), kMaxBindings, writes.data(), 0, nullptr);
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipes_.layout(), 0, 1, &set, 0, nullptr);
  std::array<char, kPushBytes> pc{};
  std::copy_n(static_cast<const char*>(push), push_bytes, pc.data());
  vkCmdPushConstants(cmd_, pipes_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes, pc.data());
  const uint32_t max_x = dev_.limits().maxComputeWorkGroupCount[0];
  const uint32_t gx = std::min(groups, max_x);
  if (prof_) prof_->before(cmd_);
  vkCmdDispatch(cmd_, gx, (groups + gx - 1) / gx, 1);
  if (prof_) prof_->after(cmd_, profile_key(s));
  for (const Operand& o : operands) {
    reads_.push_back({o.buffer, o.lo, o.hi});
    if (o.written) writes_.push_back({o.buffer, o.lo, o.hi});
  }
}

}  // namespace gl::vulkan
