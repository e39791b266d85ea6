// norm.cpp - RMS_NORM / L2_NORM (shaders/norm.comp) and SOFTMAX (shaders/softmax.comp): one work
// group per row. norm_fused records a layer's [ADD,] norm, MUL by its weight as one dispatch.
#include "ops/ops.h"

#include <vector>

namespace gl::vulkan {
namespace {

struct NormPush {
  uint32_t ne[4], a_nb[4], d_nb[4];
  uint32_t a_off, d_off, types, rms;
  float eps;
  uint32_t fuse;  // norm_fused: bit 0 times the weight, bit 1 the residual add first
  uint32_t w_off, m_off, b_off, s_off;
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

namespace {

NormPush norm_push(const Tensor& node, const Operand& a, const Operand& d) {
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
  return pc;
}

// Widest row norm.comp fuses: 256 invocations x kCache elements held in registers.
constexpr int64_t kFusedRow = 256 * 16;

// The weight product after a norm: mul = nrm * w, w one dense row of the norm's width.
bool weight_product(const Tensor& nrm, const Tensor& mul) {
  if (mul.op != Op::MUL || mul.src[0] != &nrm || mul.src[1] == &nrm || !dense_f32(mul)) return false;
  const Tensor& w = *mul.src[1];
  return dense_f32(w) && w.ne[0] == nrm.ne[0] && nelements(w) == w.ne[0] && mul.ne == nrm.ne;
}

}  // namespace

bool dense_f32(const Tensor& t) { return t.type == DType::F32 && is_contiguous(t); }

bool apart(const Tensor& x, const Tensor& y) {
  const auto* xs = static_cast<const char*>(x.data);
  const auto* ys = static_cast<const char*>(y.data);
  return xs + nbytes(x) <= ys || ys + nbytes(y) <= xs;
}

bool in_place_or_apart(const Tensor& x, const Tensor& y) { return apart(x, y) || (x.data == y.data && x.ne == y.ne); }

size_t norm_fused(Recorder& rec, std::span<Tensor* const> nodes) {
  if (nodes.size() < 2) return 0;
  const bool add = nodes.size() >= 3 && nodes[0]->op == Op::ADD && nodes[1]->src[0] == nodes[0];
  const Tensor& nrm = *nodes[add ? 1 : 0];
  const Tensor& mul = *nodes[add ? 2 : 1];
  if ((nrm.op != Op::RMS_NORM && nrm.op != Op::L2_NORM) || !dense_f32(nrm) || nrm.ne[0] == 0 || nrm.ne[0] > kFusedRow ||
      !weight_product(nrm, mul))
    return 0;
  const Tensor& x = add ? *nodes[0]->src[0] : *nrm.src[0];
  const Tensor* y = add ? nodes[0]->src[1] : nullptr;
  if (!dense_f32(x) || x.ne != nrm.ne || (y && (!dense_f32(*y) || y->ne != nrm.ne || !dense_f32(*nodes[0])))) return 0;
  std::vector<const Tensor*> ins{&x, mul.src[1]}, outs{&nrm, &mul};
  if (y) ins.push_back(y), outs.push_back(nodes[0]);
  for (const Tensor* o : outs) {
    for (const Tensor* i : ins)
      if (!in_place_or_apart(*o, *i)) return 0;
    for (const Tensor* p : outs)
      if (p != o && !in_place_or_apart(*o, *p)) return 0;
  }
  if (nelements(mul) >= (int64_t{1} << 32)) return 0;
  rec.begin_node(mul);
  const Operand a = rec.operand(x), d = rec.output(nrm), w = rec.operand(*mul.src[1]), m = rec.output(mul);
  const Operand b = y ? rec.operand(*y) : a, s = y ? rec.output(*nodes[0]) : d;
  NormPush pc = norm_push(nrm, a, d);
  pc.fuse = 1u | (y ? 2u : 0u);
  pc.w_off = w.offset;
  pc.m_off = m.offset;
  pc.b_off = b.offset;
  pc.s_off = s.offset;
  rec.dispatch(Shader::NORM, {a, d, w, m, b, s}, &pc, sizeof pc, row_count(nrm));
  return y ? 3 : 2;
}

void norm(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  const NormPush pc = norm_push(node, a, d);
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
