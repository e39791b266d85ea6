// reduce.cpp - ARGMAX, TOP_K and SUM_ROWS through shaders/reduce.comp (one work group per row).
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct ReducePush {
  uint32_t ne[4], a_nb[4], d_nb[4];
  uint32_t a_off, d_off, types, mode, k;
};
static_assert(sizeof(ReducePush) <= kPushBytes);

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_reduce(const Tensor& node) {
  return float_operand(*node.src[0]) && strides_in_elements(node) && nelements(*node.src[0]) < (int64_t{1} << 32);
}

void reduce(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  ReducePush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = a.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.a_off = a.offset;
  pc.d_off = d.offset;
  pc.types = a.type | d.type << 4;
  pc.mode = node.op == Op::ARGMAX ? 0 : node.op == Op::TOP_K ? 1 : 2;
  pc.k = node.op == Op::TOP_K ? static_cast<uint32_t>(node.p<TopKParams>().k) : 1;
  rec.dispatch(Shader::REDUCE, {a, d}, &pc, sizeof pc, static_cast<uint32_t>(nrows(*node.src[0])));
}

}  // namespace gl::vulkan
