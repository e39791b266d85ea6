// gdr_chunked.cpp - GATED_DELTA_RULE for prefill in chunked (WY / UT) form (spec section 6.5; the
// CPU runs the token recurrence): gdr_prep.comp does the state-free work of every chunk at once, gdr_scan.comp
// carries the state across chunks (n_tokens / 64 sequential steps instead of n_tokens). Only for
// calls that emit the final state alone (n_states = 1) and have kMinTokens tokens or more: verify
// (K + 1 <= 4 tokens, a state per token) stays token by token, so its rows keep the bits of decode.
// Long inputs go in passes of kPassTokens (each from the state the last one wrote) so the
// workspace stays bounded (~75 MB at Qwen3.5-9B's shape).
#include <algorithm>
#include <array>

#include "check.h"
#include "ops/ops.h"

namespace gl::vulkan {
namespace {

constexpr int64_t kC = 64;             // gdr_chunk.glsl's kC
constexpr int64_t kMinTokens = 16;     // tokens from which the chunked form runs
constexpr int64_t kPassTokens = 1024;  // tokens per pass (bounds the workspace)
constexpr int64_t kScanTv = 16;        // gdr_scan.comp's kTv
constexpr int64_t kScanMaxDk = 256;    // gdr_scan.comp's kMaxDk

struct PrepPush {
  uint32_t q_nb[3], k_nb[3], v_nb[3], g_nb[2], b_nb[2];
  uint32_t q_off, k_off, v_off, g_off, b_off, ws_off;
  uint32_t dk, dv, hk, hv, n_tokens, n_chunks, types;
};
static_assert(sizeof(PrepPush) <= kPushBytes);

struct ScanPush {
  uint32_t s_nb[3], s_off, ws_off, o_off, snap_off;
  uint32_t dk, dv, hv, n_tokens, n_chunks, s_type;
};
static_assert(sizeof(ScanPush) <= kPushBytes);

int64_t block_floats(int64_t dk, int64_t dv) { return 3 * dk * kC + kC * kC + kC * dv + 4; }  // gdr_block()

Operand workspace(Recorder& rec, const Tensor& node) {
  const Operand o = rec.workspace(node, gdr_chunked_workspace(node));
  if (o.offset % 4 != 0) throw VkFault{"gated_delta_rule: workspace not on a 16-byte boundary"};
  return o;
}

PrepPush prep_push(const std::array<Operand, 5>& in, const Operand& ws, int64_t t_begin, int64_t n) {
  const auto& [q, k, v, g, b] = in;
  PrepPush pc{};
  for (int i = 0; i < 3; ++i) {
    pc.q_nb[i] = q.nb[i];
    pc.k_nb[i] = k.nb[i];
    pc.v_nb[i] = v.nb[i];
  }
  for (int i = 0; i < 2; ++i) {
    pc.g_nb[i] = g.nb[i];
    pc.b_nb[i] = b.nb[i];
  }
  const auto t = static_cast<uint32_t>(t_begin);
  pc.q_off = q.offset + t * q.nb[2];
  pc.k_off = k.offset + t * k.nb[2];
  pc.v_off = v.offset + t * v.nb[2];
  pc.g_off = g.offset + t * g.nb[1];
  pc.b_off = b.offset + t * b.nb[1];
  pc.ws_off = ws.offset;
  pc.dk = q.ne[0];
  pc.hk = q.ne[1];
  pc.dv = v.ne[0];
  pc.hv = v.ne[1];
  pc.n_tokens = static_cast<uint32_t>(n);
  pc.n_chunks = static_cast<uint32_t>((n + kC - 1) / kC);
  pc.types = q.type | k.type << 4 | v.type << 8 | g.type << 12 | b.type << 16;
  return pc;
}

}  // namespace

bool gdr_chunked(const Tensor& node) {
  const Tensor& q = *node.src[0];
  const int64_t dv = node.src[2]->ne[0];
  return node.p<GdrParams>().n_states == 1 && q.ne[2] >= kMinTokens && q.ne[0] > 0 && q.ne[0] % 4 == 0 &&
         q.ne[0] <= kScanMaxDk && dv > 0;
}

size_t gdr_chunked_workspace(const Tensor& node) {
  if (!gdr_chunked(node)) return 0;
  const int64_t dk = node.src[0]->ne[0], dv = node.src[2]->ne[0], hv = node.src[2]->ne[1];
  const int64_t chunks = (std::min(node.src[0]->ne[2], kPassTokens) + kC - 1) / kC;
  return static_cast<size_t>(hv * chunks * block_floats(dk, dv)) * sizeof(float);
}

void gated_delta_rule_chunked(Recorder& rec, const Tensor& node) {
  std::array<Operand, 5> in;
  for (size_t i = 0; i < in.size(); ++i) in[i] = rec.operand(*node.src[i]);
  const Operand s = rec.operand(*node.src[5]);
  const Operand d = rec.operand(node);
  const Operand ws = workspace(rec, node);
  const int64_t n_tokens = in[0].ne[2], dk = in[0].ne[0], dv = in[2].ne[0], hv = in[2].ne[1];
  const auto snap_off = static_cast<uint32_t>(d.offset + dv * hv * n_tokens);
  const bool f32 = in[0].type == TYPE_F32 && in[1].type == TYPE_F32 && in[2].type == TYPE_F32;
  const Shader prep_shader = f32 ? Shader::GDR_PREP_F32 : Shader::GDR_PREP;
  for (int64_t t_begin = 0; t_begin < n_tokens; t_begin += kPassTokens) {
    const int64_t n = std::min(kPassTokens, n_tokens - t_begin);
    const PrepPush pp = prep_push(in, ws, t_begin, n);
    rec.dispatch(prep_shader, {in[0], in[1], in[2], in[3], in[4], ws}, &pp, sizeof pp,
                 static_cast<uint32_t>(hv) * pp.n_chunks);
    // The first pass reads the input state; later ones the state the last pass wrote into d.
    ScanPush sp{};
    const bool first = t_begin == 0;
    for (int i = 0; i < 3; ++i)
      sp.s_nb[i] = first ? s.nb[i] : static_cast<uint32_t>(i == 0 ? 1 : i == 1 ? dv : dk * dv);
    sp.s_off = first ? s.offset : snap_off;
    sp.s_type = first ? s.type : TYPE_F32;
    sp.ws_off = ws.offset;
    sp.o_off = static_cast<uint32_t>(d.offset + t_begin * hv * dv);
    sp.snap_off = snap_off;
    sp.dk = static_cast<uint32_t>(dk);
    sp.dv = static_cast<uint32_t>(dv);
    sp.hv = static_cast<uint32_t>(hv);
    sp.n_tokens = pp.n_tokens;
    sp.n_chunks = pp.n_chunks;
    const auto groups = static_cast<uint32_t>(hv * ((dv + kScanTv - 1) / kScanTv));
    rec.dispatch(Shader::GDR_SCAN, {first ? s : d, d, ws}, &sp, sizeof sp, groups);
  }
}

}  // namespace gl::vulkan
