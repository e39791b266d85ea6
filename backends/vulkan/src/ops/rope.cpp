// rope.cpp - ROPE through shaders/rope.comp; the inverse frequencies are computed here in double
// and uploaded into the node's workspace with the command buffer.
#include <cmath>
#include <vector>

#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct RopePush {
  uint32_t ne[4], x_nb[4], d_nb[4], p_ne[4], p_nb[4];
  uint32_t x_off, p_off, d_off, types, n_dims, neox, n, f_off;
  float freq_scale;
};
static_assert(sizeof(RopePush) <= kPushBytes);

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_rope(const Tensor& node) {
  const Tensor& pos = *node.src[1];
  return float_operand(node) && float_operand(*node.src[0]) && strides_in_elements(pos) &&
         node.p<RopeParams>().n_dims <= 2 * 16384 && nelements(node) < (int64_t{1} << 32);
}

size_t rope_workspace(const Tensor& node) { return static_cast<size_t>(node.p<RopeParams>().n_dims / 2) * 4; }

void rope(Recorder& rec, const Tensor& node) {
  const RopeParams p = node.p<RopeParams>();
  const int32_t half = p.n_dims / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int32_t i = 0; i < half; ++i)
    inv_freq[i] = static_cast<float>(std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_dims));
  const Operand f = rec.upload(node.workspace, inv_freq.data(), static_cast<uint32_t>(half * 4));
  const Operand x = rec.operand(*node.src[0]);
  const Operand pos = rec.operand(*node.src[1]);
  const Operand d = rec.operand(node);
  RopePush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.x_nb[i] = x.nb[i];
    pc.d_nb[i] = d.nb[i];
    pc.p_ne[i] = pos.ne[i];
    pc.p_nb[i] = pos.nb[i];
  }
  pc.x_off = x.offset;
  pc.p_off = pos.offset;
  pc.d_off = d.offset;
  pc.types = x.type | d.type << 4;
  pc.n_dims = static_cast<uint32_t>(p.n_dims);
  pc.neox = p.mode == RopeMode::NEOX ? 1 : 0;
  pc.n = static_cast<uint32_t>(nrows(node) * (half + node.ne[0] - p.n_dims));
  pc.f_off = f.offset;
  pc.freq_scale = p.freq_scale;
  rec.dispatch(Shader::ROPE, {x, pos, d, f}, &pc, sizeof pc, (pc.n + 255) / 256);
}

}  // namespace gl::vulkan
