// ssm.cpp - SSM_CONV through shaders/ssm_conv.comp. GATED_DELTA_RULE has no shader yet (declined).
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct ConvPush {
  uint32_t x_nb[4], w_nb[4], d_nb[4];
  uint32_t x_off, w_off, d_off, types, channels, taps, n;
};
static_assert(sizeof(ConvPush) <= kPushBytes);

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_ssm(const Tensor& node) {
  if (node.op != Op::SSM_CONV) return false;
  return float_operand(node) && float_operand(*node.src[0]) && float_operand(*node.src[1]) &&
         nelements(*node.src[0]) < (int64_t{1} << 32);
}

void ssm_conv(Recorder& rec, const Tensor& node) {
  const Operand x = rec.operand(*node.src[0]);
  const Operand w = rec.operand(*node.src[1]);
  const Operand d = rec.operand(node);
  ConvPush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.x_nb[i] = x.nb[i];
    pc.w_nb[i] = w.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.x_off = x.offset;
  pc.w_off = w.offset;
  pc.d_off = d.offset;
  pc.types = x.type | w.type << 4 | d.type << 8;
  pc.channels = d.ne[0];
  pc.taps = w.ne[0];
  pc.n = static_cast<uint32_t>(nelements(node));
  rec.dispatch(Shader::SSM_CONV, {x, w, d}, &pc, sizeof pc, (pc.n + 255) / 256);
}

}  // namespace gl::vulkan
