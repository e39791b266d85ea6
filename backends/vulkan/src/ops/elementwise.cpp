// elementwise.cpp - binary, unary and SwiGLU nodes through shaders/elementwise.comp.
#include <algorithm>
#include <array>
#include <vector>

#include "ops/ops.h"

namespace gl::vulkan {
namespace {

// Mirrors the Push block of elementwise.comp.
struct ElementwisePush {
  uint32_t ne[4], a_nb[4], b_ne[4], b_nb[4], d_nb[4];
  uint32_t a_off, b_off, d_off, types, op, n;
  float p0, p1;
};
static_assert(sizeof(ElementwisePush) <= kPushBytes);

constexpr size_t kChainSteps = 3;  // elementwise.comp's kSteps (CHAIN)

// Mirrors the CHAIN Push block of elementwise.comp.
struct ChainPush {
  uint32_t n, steps, in_off;
  uint32_t out_off[kChainSteps], other_off[kChainSteps], op[kChainSteps];
  uint32_t other_first;
  uint32_t skip_store;  // bit s: step s's result is overwritten in place by a later step's
  float p0[kChainSteps], p1[kChainSteps];
};
static_assert(sizeof(ChainPush) <= kPushBytes);

// The shader's OP_* codes.
uint32_t op_code(Op op) {
  switch (op) {
    case Op::ADD: return 0;
    case Op::SUB: return 1;
    case Op::MUL: return 2;
    case Op::DIV: return 3;
    case Op::SCALE: return 4;
    case Op::SILU: return 5;
    case Op::SIGMOID: return 6;
    case Op::SOFTPLUS: return 7;
    case Op::EXP: return 8;
    default: return 9;  // SWIGLU: supports_elementwise admits nothing else
  }
}

bool is_binary(Op op) { return op == Op::ADD || op == Op::SUB || op == Op::MUL || op == Op::DIV || op == Op::SWIGLU; }

bool chainable(const Tensor& n) {
  switch (n.op) {
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV:
    case Op::SCALE:
    case Op::SILU:
    case Op::SIGMOID:
    case Op::SOFTPLUS:
    case Op::EXP:
    case Op::SWIGLU: return dense_f32(n) && dense_f32(*n.src[0]) && (!is_binary(n.op) || dense_f32(*n.src[1]));
    default: return false;
  }
}

// One step of a chain: node n reads the chain's value `prev` (its input for the first step).
struct Step {
  const Tensor* node;
  const Tensor* other;  // a binary node's other source (same shape), else nullptr
  bool other_first;     // other is src[0] (the chain's value src[1])
};

// n as a step after prev: prev is exactly one of its sources, and a binary node's other source
// has the chain's shape.
bool as_step(const Tensor& n, const Tensor& prev, Step& st) {
  if (!chainable(n) || n.ne != prev.ne) return false;
  st = {&n, nullptr, false};
  if (!is_binary(n.op)) return n.src[0] == &prev;
  if ((n.src[0] == &prev) == (n.src[1] == &prev)) return false;  // neither, or both (x * x)
  st.other_first = n.src[1] == &prev;
  st.other = st.other_first ? n.src[0] : n.src[1];
  return st.other->ne == n.ne;
}

// The chain's memory. The shader loads the input and every other operand before its first store,
// then stores each step's result in step order to bindings it may not assume alias. So:
// - every output is in place or apart from every tensor the chain reads, and from every other
//   output (one in place of an earlier one is dead after the chain: elementwise_chain skips the
//   earlier store);
// - a step's other operand is apart from every earlier step's output (it would need the new
//   value, as y = sigmoid(a) * a does).
bool safe_memory(const Tensor& in, const std::vector<Step>& steps) {
  for (size_t j = 0; j < steps.size(); ++j) {
    const Tensor& out = *steps[j].node;
    if (!in_place_or_apart(out, in)) return false;
    for (size_t k = 0; k < steps.size(); ++k) {
      if (k != j && !in_place_or_apart(out, *steps[k].node)) return false;
      if (const Tensor* other = steps[k].other; other && !in_place_or_apart(out, *other)) return false;
      if (const Tensor* other = steps[k].other; other && j < k && !apart(out, *other)) return false;
    }
  }
  return true;
}

bool float_operand(const Tensor& t) {
  return (t.type == DType::F32 || t.type == DType::F16 || t.type == DType::BF16) && strides_in_elements(t);
}

}  // namespace

bool supports_elementwise(const Tensor& node) {
  if (!float_operand(node) || !float_operand(*node.src[0])) return false;
  if (nelements(node) >= (int64_t{1} << 32)) return false;  // the shader indexes in 32 bits
  return !is_binary(node.op) || float_operand(*node.src[1]);
}

size_t elementwise_chain(Recorder& rec, std::span<Tensor* const> nodes) {
  if (nodes.size() < 2 || !chainable(*nodes[0]) || nelements(*nodes[0]) >= (int64_t{1} << 32)) return 0;
  const Tensor& first = *nodes[0];
  // The first node's value operand: src[0] (a binary first node's src[1] is its other operand).
  const Tensor& in = *first.src[0];
  if (in.ne != first.ne || (is_binary(first.op) && first.src[1]->ne != first.ne)) return 0;
  std::vector<Step> steps{{&first, is_binary(first.op) ? first.src[1] : nullptr, false}};
  Step st{};
  while (steps.size() < kChainSteps && steps.size() < nodes.size() &&
         as_step(*nodes[steps.size()], *steps.back().node, st))
    steps.push_back(st);
  if (steps.size() < 2 || !safe_memory(in, steps)) return 0;
  rec.begin_node(*steps.back().node);
  const Operand a = rec.operand(in);
  std::array<Operand, kChainSteps> outs{a, a, a}, others{a, a, a};
  ChainPush pc{};
  pc.n = static_cast<uint32_t>(nelements(first));
  pc.steps = static_cast<uint32_t>(steps.size());
  pc.in_off = a.offset;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Tensor& n = *steps[k].node;
    outs[k] = rec.output(n);
    pc.out_off[k] = outs[k].offset;
    if (steps[k].other) {
      others[k] = rec.operand(*steps[k].other);
      pc.other_off[k] = others[k].offset;
    }
    pc.op[k] = op_code(n.op);
    pc.other_first |= steps[k].other_first ? 1u << k : 0u;
    for (size_t later = k + 1; later < steps.size(); ++later)
      if (steps[later].node->data == n.data) pc.skip_store |= 1u << k;
    if (n.op == Op::SCALE) {
      pc.p0[k] = n.p<ScaleParams>().scale;
      pc.p1[k] = n.p<ScaleParams>().bias;
    }
  }
  rec.dispatch(Shader::ELEMENTWISE_CHAIN, {a, outs[0], outs[1], outs[2], others[0], others[1], others[2]}, &pc,
               sizeof pc, (pc.n + 255) / 256);
  return steps.size();
}

void elementwise(Recorder& rec, const Tensor& node) {
  const Operand a = rec.operand(*node.src[0]);
  const Operand d = rec.operand(node);
  const Operand b = is_binary(node.op) ? rec.operand(*node.src[1]) : a;
  ElementwisePush pc{};
  for (int i = 0; i < 4; ++i) {
    pc.ne[i] = d.ne[i];
    pc.a_nb[i] = a.nb[i];
    pc.b_ne[i] = b.ne[i];
    pc.b_nb[i] = b.nb[i];
    pc.d_nb[i] = d.nb[i];
  }
  pc.a_off = a.offset;
  pc.b_off = b.offset;
  pc.d_off = d.offset;
  pc.types = a.type | b.type << 4 | d.type << 8;
  pc.op = op_code(node.op);
  pc.n = static_cast<uint32_t>(nelements(node));
  if (node.op == Op::SCALE) {
    pc.p0 = node.p<ScaleParams>().scale;
    pc.p1 = node.p<ScaleParams>().bias;
  }
  rec.dispatch(Shader::ELEMENTWISE, {a, b, d}, &pc, sizeof pc, (pc.n + 255) / 256);
}

}  // namespace gl::vulkan
