// norm.cpp - RMS_NORM / L2_NORM (shaders/norm.comp) and SOFTMAX (shaders/softmax.comp): one work
// group per row.
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct NormPush {
  uint32_t ne[4], a_nb[4], d_nb[4];
  uint32_t a_off, d_off, types, rms;
  float eps;
};
static_assert(sizeof(NormPush) <= kPushBytes);

struct SoftmaxPush {
  uint32_t ne[4], a_nb[4], d_nb[4];
  uint32_t m_nb0, m_nb1, a_off, m_off, d_off, types, has_mask, causal;
  float scale;
};
static_assert(sizeof(SoftmaxPush) <= kPushBytes);

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

uint32_t row_count(const Tensor& t) { return static_cast<uint32_t>(t.ne[1] * t.ne[2] * t.ne[3]); }

}  // namespace

bool supports_norm(const Tensor& node) {
  if (!float_operand(node) || !float_operand(*node.src[0])) return false;
  if (nelements(node) >= (int64_t{1} << 32)) return false;  // the shaders index in 32 bits
  const Tensor* mask = node.op == Op::SOFTMAX ? node.src[1] : nullptr;
  return !mask || (mask->type == DType::F32 && strides_in_elements(*mask));
}

void norm(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  NormPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.a_off = a.offset;
  pc.d_off = d.offset;
  pc.types = a.type | d.type << 4;
  pc.rms = node.op == Op::RMS_NORM ? 1 : 0;
  pc.eps = node.p<NormParams>().eps;
  rec.dispatch(Shader::NORM, {a, d}, &pc, sizeof pc, row_count(node));
}

void softmax(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  const bool has_mask = node.src[1] != nullptr;
  const Operand m = has_mask ? rec.operand(*node.src[1]) : a;
  SoftmaxPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.m_nb0 = m.nb[0];
  pc.m_nb1 = m.nb[1];
  pc.a_off = a.offset;
  pc.m_off = m.offset;
  pc.d_off = d.offset;
  pc.types = a.type | d.type << 4;
  pc.has_mask = has_mask ? 1 : 0;
  pc.causal = node.p<SoftmaxParams>().causal ? 1 : 0;
  pc.scale = node.p<SoftmaxParams>().scale;
  rec.dispatch(Shader::SOFTMAX, {a, m, d}, &pc, sizeof pc, row_count(node));
}

}  // namespace gl::vulkan
