// coop_khr.cpp - GL_NV_cooperative_matrix SPIR-V as SPV_KHR_cooperative_matrix (see coop_khr.h).
#include "coop_khr.h"

#include <optional>
#include <string_view>
#include <unordered_map>

namespace gl::vulkan {
namespace {

constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kHeaderWords = 5;

// SPIR-V opcodes and enumerants this file reads or writes (the unified SPIR-V grammar's values).
enum Opcode : uint16_t {
  OP_EXTENSION = 10,
  OP_CAPABILITY = 17,
  OP_CONSTANT_TRUE = 41,
  OP_CONSTANT_FALSE = 42,
  OP_CONSTANT = 43,
  OP_NV_TYPE = 5358,
  OP_NV_LOAD = 5359,
  OP_NV_STORE = 5360,
  OP_NV_MULADD = 5361,
  OP_NV_LENGTH = 5362,
  OP_KHR_TYPE = 4456,
  OP_KHR_LOAD = 4457,
  OP_KHR_STORE = 4458,
  OP_KHR_MULADD = 4459,
  OP_KHR_LENGTH = 4460,
};
constexpr uint32_t kCapNv = 5357, kCapKhr = 6022;
enum Use : uint32_t { USE_A = 0, USE_B = 1, USE_ACC = 2, USE_NONE = 3 };  // KHR's MatrixA/B/Accumulator
constexpr uint32_t kRowMajor = 0, kColumnMajor = 1;                       // KHR's memory layouts

// Opcodes whose first two operands are a result type and a result id, among those a matrix
// operand of a product can come from (after glslc's optimizer: loads, phis, copies, selects).
bool typed_result(uint16_t op) {
  switch (op) {
    case 1:    // OpUndef
    case 44:   // OpConstantComposite
    case 46:   // OpConstantNull
    case 61:   // OpLoad
    case 80:   // OpCompositeConstruct
    case 81:   // OpCompositeExtract
    case 83:   // OpCopyObject
    case 169:  // OpSelect
    case 245:  // OpPhi
    case OP_NV_LOAD:
    case OP_NV_MULADD: return true;
    default: return false;
  }
}

// Word 0 of an instruction of `words` words and opcode op.
uint32_t head(uint32_t words, uint16_t op) { return words << 16 | op; }

struct Inst {
  size_t at;  // first word
  uint16_t op, n;
  uint32_t operand(std::span<const uint32_t> w, size_t i) const { return w[at + 1 + i]; }
};

std::vector<Inst> instructions(std::span<const uint32_t> w) {
  std::vector<Inst> out;
  for (size_t at = kHeaderWords; at < w.size();) {
    const auto n = static_cast<uint16_t>(w[at] >> 16);
    if (n == 0 || at + n > w.size()) return {};
    out.push_back({at, static_cast<uint16_t>(w[at] & 0xffff), n});
    at += n;
  }
  return out;
}

std::vector<uint32_t> string_words(std::string_view s) {
  std::vector<uint32_t> out((s.size() + 4) / 4, 0);  // with the terminating zero
  for (size_t i = 0; i < s.size(); ++i)
    out[i / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(s[i])) << (8 * (i % 4));
  return out;
}

std::string_view literal_string(std::span<const uint32_t> w, const Inst& in) {
  const auto* c = reinterpret_cast<const char*>(w.data() + in.at + 1);
  const size_t max = (in.n - 1u) * 4u;
  size_t len = 0;
  while (len < max && c[len] != '\0') ++len;
  return {c, len};
}

// What the module's products make of each NV matrix type: role[type] is A, B or the accumulator.
// nullopt where a type plays two roles or an operand's type cannot be found.
std::optional<std::unordered_map<uint32_t, Use>> roles(std::span<const uint32_t> w, const std::vector<Inst>& is) {
  std::unordered_map<uint32_t, uint32_t> type_of;  // value -> its type
  for (const Inst& in : is)
    if (typed_result(in.op) && in.n >= 3) type_of[in.operand(w, 1)] = in.operand(w, 0);
  std::unordered_map<uint32_t, Use> role;
  auto give = [&role](uint32_t type, Use u) {
    auto [it, fresh] = role.emplace(type, u);
    return fresh || it->second == u;
  };
  for (const Inst& in : is) {
    if (in.op != OP_NV_MULADD) continue;
    if (in.n != 6) return std::nullopt;
    const auto a = type_of.find(in.operand(w, 2)), b = type_of.find(in.operand(w, 3));
    if (a == type_of.end() || b == type_of.end()) return std::nullopt;
    if (!give(a->second, USE_A) || !give(b->second, USE_B) || !give(in.operand(w, 0), USE_ACC)) return std::nullopt;
  }
  return role;
}

struct Constants {
  uint32_t use[3] = {0, 0, 0};  // ids of the int constants 0, 1, 2 added for the types' uses
  uint32_t layout[2] = {0, 0};  // row major (0), column major (1): the same constants
  uint32_t true_id = 0, false_id = 0;
};

}  // namespace

std::vector<uint32_t> coop_nv_to_khr(std::span<const uint32_t> w) {
  if (w.size() < kHeaderWords || w[0] != kMagic) return {};
  const std::vector<Inst> is = instructions(w);
  if (is.empty()) return {};
  const auto role = roles(w, is);
  if (!role) return {};
  // The new constants' type: that of the scope constant of the first matrix type.
  std::unordered_map<uint32_t, uint32_t> constant_type;
  Constants k;
  size_t first_type = is.size();
  for (size_t i = 0; i < is.size(); ++i) {
    const Inst& in = is[i];
    if (in.op == OP_CONSTANT && in.n >= 3) constant_type[in.operand(w, 1)] = in.operand(w, 0);
    if (in.op == OP_CONSTANT_TRUE && in.n == 3) k.true_id = in.operand(w, 1);
    if (in.op == OP_CONSTANT_FALSE && in.n == 3) k.false_id = in.operand(w, 1);
    if (in.op == OP_NV_TYPE && in.n != 6) return {};
    if (in.op == OP_NV_TYPE && first_type == is.size()) first_type = i;
  }
  if (first_type == is.size()) return {};
  const auto int_type = constant_type.find(w[is[first_type].at + 3]);  // Scope operand
  if (int_type == constant_type.end()) return {};
  uint32_t bound = w[3];
  std::vector<uint32_t> out(w.begin(), w.begin() + kHeaderWords);
  for (size_t i = 0; i < is.size(); ++i) {
    const Inst& in = is[i];
    const auto src = w.subspan(in.at, in.n);
    if (i == first_type) {  // the constants go in front of the first matrix type, which needs them
      for (uint32_t v = 0; v < 3; ++v) {
        k.use[v] = bound++;
        out.insert(out.end(), {head(4, OP_CONSTANT), int_type->second, k.use[v], v});
      }
      k.layout[kRowMajor] = k.use[kRowMajor];
      k.layout[kColumnMajor] = k.use[kColumnMajor];
    }
    auto layout_of = [&k](uint32_t column_major) -> std::optional<uint32_t> {
      if (column_major == k.true_id && k.true_id) return k.layout[kColumnMajor];
      if (column_major == k.false_id && k.false_id) return k.layout[kRowMajor];
      return std::nullopt;
    };
    switch (in.op) {
      case OP_CAPABILITY:
        out.insert(out.end(), src.begin(), src.end());
        if (in.n == 2 && src[1] == kCapNv) out.back() = kCapKhr;
        break;
      case OP_EXTENSION: {
        if (literal_string(w, in) != "SPV_NV_cooperative_matrix") {
          out.insert(out.end(), src.begin(), src.end());
          break;
        }
        const std::vector<uint32_t> s = string_words("SPV_KHR_cooperative_matrix");
        out.push_back(head(static_cast<uint32_t>(1 + s.size()), OP_EXTENSION));
        out.insert(out.end(), s.begin(), s.end());
        break;
      }
      case OP_NV_TYPE: {  // 6 words (checked above)
        const auto r = role->find(src[1]);
        const Use u = r == role->end() ? USE_A : r->second;  // an unused type: any use
        out.insert(out.end(), {head(7, OP_KHR_TYPE), src[1], src[2], src[3], src[4], src[5], k.use[u]});
        break;
      }
      case OP_NV_LOAD: {  // rt, id, pointer, stride, column major, [memory access]
        const auto lay = in.n >= 6 ? layout_of(src[5]) : std::nullopt;
        if (!lay) return {};
        out.insert(out.end(), {head(in.n, OP_KHR_LOAD), src[1], src[2], src[3], *lay, src[4]});
        out.insert(out.end(), src.begin() + 6, src.end());
        break;
      }
      case OP_NV_STORE: {  // pointer, object, stride, column major, [memory access]
        const auto lay = in.n >= 5 ? layout_of(src[4]) : std::nullopt;
        if (!lay) return {};
        out.insert(out.end(), {head(in.n, OP_KHR_STORE), src[1], src[2], *lay, src[3]});
        out.insert(out.end(), src.begin() + 5, src.end());
        break;
      }
      case OP_NV_MULADD:
      case OP_NV_LENGTH:
        out.push_back(head(in.n, in.op == OP_NV_MULADD ? OP_KHR_MULADD : OP_KHR_LENGTH));
        out.insert(out.end(), src.begin() + 1, src.end());
        break;
      default: out.insert(out.end(), src.begin(), src.end());
    }
  }
  out[3] = bound;
  return out;
}

}  // namespace gl::vulkan
