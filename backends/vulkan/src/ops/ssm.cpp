// ssm.cpp - SSM_CONV (shaders/ssm_conv.comp) and GATED_DELTA_RULE: prefill in chunks
// (gdr_chunked.cpp), else token by token: gdr_split.comp
// (a head's state in registers, each column's sums split over kSlices invocations) where the
// device has subgroup shuffles and Dk fits, else gdr.comp (one invocation per column).
#include <array>

#include "ops/ops.h"

namespace gl::vulkan {
namespace {

struct ConvPush {
  uint32_t x_nb[4], w_nb[4], d_nb[4];
  uint32_t x_off, w_off, d_off, types, channels, taps, n;
};
static_assert(sizeof(ConvPush) <= kPushBytes);

struct GdrPush {
  uint32_t q_nb[3], k_nb[3], v_nb[3], g_nb[2], b_nb[2], s_nb[3];
  uint32_t q_off, k_off, v_off, g_off, b_off, s_off, d_off;
  uint32_t dk, dv, hk, hv, n_tokens, n_states, types;
};
static_assert(sizeof(GdrPush) <= kPushBytes);

constexpr int64_t kMaxDk = 256;                      // gdr.comp's kMaxDk: a state column lives in private memory
constexpr uint32_t kSplitSlices = 8;                 // gdr_split.comp's kSlices (lanes of one butterfly)
constexpr uint32_t kSplitCols = 32;                  // gdr_split.comp's kCols
constexpr uint32_t kSplitMaxDk = kSplitSlices * 16;  // times its kMaxPer
constexpr VkSubgroupFeatureFlags kSplitOps = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_ssm(const Tensor& node) {
  if (node.op == Op::GATED_DELTA_RULE) {
    for (int i = 0; i < 6; ++i)
      if (!float_operand(*node.src[i])) return false;
    return node.src[0]->ne[0] <= kMaxDk && is_contiguous(node) && nelements(node) < (int64_t{1} << 32);
  }
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

void gated_delta_rule(Recorder& rec, const Tensor& node) {
  if (gdr_chunked(node)) return gated_delta_rule_chunked(rec, node);
  std::array<Operand, 6> in;
  for (size_t i = 0; i < in.size(); ++i) in[i] = rec.operand(*node.src[i]);
  const Operand d = rec.operand(node);
  const auto& [q, k, v, g, b, s] = in;
  GdrPush pc{};
  for (int i = 0; i < 3; ++i) {
    pc.q_nb[i] = q.nb[i];
    pc.k_nb[i] = k.nb[i];
    pc.v_nb[i] = v.nb[i];
    pc.s_nb[i] = s.nb[i];
  }
  for (int i = 0; i < 2; ++i) {
    pc.g_nb[i] = g.nb[i];
    pc.b_nb[i] = b.nb[i];
  }
  pc.q_off = q.offset;
  pc.k_off = k.offset;
  pc.v_off = v.offset;
  pc.g_off = g.offset;
  pc.b_off = b.offset;
  pc.s_off = s.offset;
  pc.d_off = d.offset;
  pc.dk = q.ne[0];
  pc.hk = q.ne[1];
  pc.n_tokens = q.ne[2];
  pc.dv = v.ne[0];
  pc.hv = v.ne[1];
  pc.n_states = static_cast<uint32_t>(node.p<GdrParams>().n_states);
  pc.types = q.type | k.type << 4 | v.type << 8 | g.type << 12 | b.type << 16 | s.type << 20;
  const Device& dev = rec.device();
  // gdr_split.comp clamps its loads to Dk - 1 and Dv - 1: both at least 1.
  if (pc.dk >= 1 && pc.dv >= 1 && pc.dk <= kSplitMaxDk && dev.subgroup_ops(kSplitOps) &&
      dev.subgroup_size() >= kSplitSlices) {
    const uint32_t groups = pc.hv * ((pc.dv + kSplitCols - 1) / kSplitCols);
    rec.dispatch(Shader::GDR_SPLIT, {q, k, v, g, b, s, d}, &pc, sizeof pc, groups);
  } else {
    rec.dispatch(Shader::GDR, {q, k, v, g, b, s, d}, &pc, sizeof pc, (pc.hv * pc.dv + 63) / 64);
  }
}

}  // namespace gl::vulkan
