// coop_khr_test.cpp - gemm_coop.comp's SPIR-V translated from GL_NV_cooperative_matrix to
// SPV_KHR_cooperative_matrix (backends/vulkan/src/coop_khr.h), checked against the SPIR-V
// specification's encoding of both extensions. Needs no device: lavapipe has no cooperative
// matrices, so the GPU runs the translated shader (gl_test_vulkan's prefill product tests).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "coop_khr.h"
#include "pipelines.h"

namespace gl::vulkan {
namespace {

struct Op {
  uint16_t code;
  std::vector<uint32_t> operands;
};

std::vector<Op> parse(std::span<const uint32_t> w) {
  std::vector<Op> ops;
  for (size_t at = 5; at < w.size();) {
    const uint32_t n = w[at] >> 16;
    EXPECT_GT(n, 0u);
    if (n == 0 || at + n > w.size()) break;
    ops.push_back({static_cast<uint16_t>(w[at] & 0xffff), {w.begin() + at + 1, w.begin() + at + n}});
    at += n;
  }
  return ops;
}

std::string literal(const std::vector<uint32_t>& words) {
  std::string s;
  for (uint32_t word : words)
    for (int b = 0; b < 4; ++b)
      if (const char c = static_cast<char>(word >> (8 * b) & 0xff)) s += c;
  return s;
}

// SPIR-V opcodes (the unified grammar's numbers).
constexpr uint16_t kExtension = 10, kCapability = 17, kTrue = 41, kConstant = 43;
constexpr uint16_t kNvType = 5358, kNvLoad = 5359, kNvMulAdd = 5361;
constexpr uint16_t kKhrType = 4456, kKhrLoad = 4457, kKhrMulAdd = 4459;

size_t count(const std::vector<Op>& ops, uint16_t code) {
  size_t n = 0;
  for (const Op& o : ops) n += o.code == code;
  return n;
}

TEST(CoopKhr, GemmCoopTranslatesOpForOp) {
  for (Shader s : {Shader::GEMM_COOP, Shader::GEMM_COOP64, Shader::GEMM_COOP_F, Shader::GEMM_COOP64_F}) {
    SCOPED_TRACE(shader_name(s));
    const std::span<const uint32_t> nv_words = spirv(s);
    const std::vector<uint32_t> khr_words = coop_nv_to_khr(nv_words);
    ASSERT_FALSE(khr_words.empty());
    const std::vector<Op> nv = parse(nv_words), khr = parse(khr_words);
    // No NV instruction, capability or extension is left; every product and load has its KHR twin.
    for (const Op& o : khr) {
      EXPECT_TRUE(o.code < 5358 || o.code > 5362) << o.code;
      if (o.code == kCapability) {
        EXPECT_NE(o.operands[0], 5357u);
      }
      if (o.code == kExtension) {
        EXPECT_NE(literal(o.operands), "SPV_NV_cooperative_matrix");
      }
    }
    EXPECT_EQ(count(khr, kCapability), count(nv, kCapability));
    EXPECT_EQ(count(khr, kKhrMulAdd), count(nv, kNvMulAdd));
    EXPECT_EQ(count(khr, kKhrLoad), count(nv, kNvLoad));
    bool has_khr_ext = false, has_khr_cap = false;
    std::map<uint32_t, uint32_t> value;  // int constants
    uint32_t true_id = 0;
    for (const Op& o : khr) {
      has_khr_ext |= o.code == kExtension && literal(o.operands) == "SPV_KHR_cooperative_matrix";
      has_khr_cap |= o.code == kCapability && o.operands[0] == 6022;
      if (o.code == kConstant) value[o.operands[1]] = o.operands[2];
      if (o.code == kTrue) true_id = o.operands[1];
    }
    EXPECT_TRUE(has_khr_ext);
    EXPECT_TRUE(has_khr_cap);
    // Three matrix types: A 16 x 16 and B 16 x 8 of f16, the accumulator 16 x 8 of f32, each with
    // its use (0 A, 1 B, 2 accumulator), the use constants defined before the types.
    std::map<uint32_t, uint32_t> use_of;  // type -> use
    for (const Op& o : khr) {
      if (o.code != kKhrType) continue;
      ASSERT_EQ(o.operands.size(), 6u);
      ASSERT_TRUE(value.count(o.operands[5])) << "use constant not defined before the type";
      const uint32_t use = value[o.operands[5]], rows = value[o.operands[3]], cols = value[o.operands[4]];
      use_of[o.operands[0]] = use;
      EXPECT_EQ(rows, 16u);
      EXPECT_EQ(cols, use == 0 ? 16u : 8u) << "use " << use;
    }
    ASSERT_EQ(use_of.size(), 3u);
    for (const Op& o : khr)
      if (o.code == kKhrMulAdd) {
        ASSERT_EQ(o.operands.size(), 5u);
        EXPECT_EQ(use_of[o.operands[0]], 2u);
      }
    // Each load keeps its pointer and stride; the layout is column major exactly where the NV load
    // said column major.
    std::vector<const Op*> nv_loads, khr_loads;
    for (const Op& o : nv)
      if (o.code == kNvLoad) nv_loads.push_back(&o);
    for (const Op& o : khr)
      if (o.code == kKhrLoad) khr_loads.push_back(&o);
    ASSERT_EQ(nv_loads.size(), khr_loads.size());
    for (size_t i = 0; i < nv_loads.size(); ++i) {
      const std::vector<uint32_t>& a = nv_loads[i]->operands;
      const std::vector<uint32_t>& b = khr_loads[i]->operands;
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(b[2], a[2]);  // pointer
      EXPECT_EQ(b[4], a[3]);  // stride
      EXPECT_EQ(value.at(b[3]), a[4] == true_id ? 1u : 0u);
    }
    EXPECT_EQ(khr_words[3], nv_words[3] + 3);  // id bound: the three constants
  }
}

// A matrix type used both as A and as B has no single KHR use: not translatable.
TEST(CoopKhr, TypeInTwoRolesIsRefused) {
  const std::vector<uint32_t> m = {
      0x07230203,
      0x00010500,
      0,
      20,
      0,
      (3u << 16) | 21,
      1,
      32,
      0,  // %1 = OpTypeInt 32 0
      (3u << 16) | 22,
      2,
      16,  // %2 = OpTypeFloat 16
      (3u << 16) | 22,
      3,
      32,  // %3 = OpTypeFloat 32
      (4u << 16) | 43,
      1,
      4,
      3,  // %4 = OpConstant %1 3
      (4u << 16) | 43,
      1,
      5,
      16,  // %5 = OpConstant %1 16
      (6u << 16) | kNvType,
      6,
      2,
      4,
      5,
      5,  // %6 = f16 16 x 16
      (6u << 16) | kNvType,
      7,
      3,
      4,
      5,
      5,  // %7 = f32 16 x 16
      (3u << 16) | 1,
      6,
      8,  // %8 = OpUndef %6
      (3u << 16) | 1,
      7,
      9,  // %9 = OpUndef %7
      (6u << 16) | kNvMulAdd,
      7,
      10,
      8,
      8,
      9,  // %10 = %8 * %8 + %9
  };
  EXPECT_TRUE(coop_nv_to_khr(m).empty());
  std::vector<uint32_t> not_spirv = m;
  not_spirv[0] = 0;
  EXPECT_TRUE(coop_nv_to_khr(not_spirv).empty());
}

}  // namespace
}  // namespace gl::vulkan
