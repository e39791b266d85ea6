// ops_test.cpp - every op case on every compiled backend against the float64 reference,
// plus the coverage checks that keep the case list complete.
//
//   gl_test_ops --gtest_filter='OpsTest.Run/mul_mat_q8_0*'
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include "common/backends.h"
#include "ops/cases.h"

namespace gl::test {
namespace {

struct OpsParam {
  OpCase c;
  std::string backend;
};

void PrintTo(const OpsParam& p, std::ostream* os) { *os << p.c.name << " on " << p.backend; }

// Every case on every compiled backend, and the ops with a FAST path once more under
// Precision::FAST: on the CPU (matrix products: int8 activations for quantized weights; fused
// attention: vector sums in another order, within the same f32 bounds) and on CUDA (products of
// up to 8 rows with Q8_0 and K-quant weights: int8 activations, kNmseQ8Out; matrix products of more
// than 8 rows: one 16-bit GEMM; prefill attention over an F16 cache: Q and P rounded to F16 for the
// tensor cores; both OpCase::kDeviceFastNmse). Other ops have one path.
std::vector<OpsParam> all_params() {
  std::vector<OpsParam> ps;
  const std::vector<std::string> names = compiled_backend_names();
  for (const std::string& b : names)
    for (OpCase& c : all_cases()) ps.push_back({std::move(c), b});
  for (OpCase& c : all_cases())
    if (c.op == Op::MUL_MAT || c.op == Op::MUL_MAT_ID || c.op == Op::FLASH_ATTN)
      ps.push_back({std::move(c), "cpu-fast"});
  if (std::find(names.begin(), names.end(), "cuda") != names.end())
    for (OpCase& c : all_cases())
      if (c.op == Op::MUL_MAT || c.op == Op::MUL_MAT_ID || c.op == Op::FLASH_ATTN)
        ps.push_back({std::move(c), "cuda-fast"});
  return ps;
}

class OpsTest : public ::testing::TestWithParam<OpsParam> {};

TEST_P(OpsTest, Run) {
  const OpsParam& p = GetParam();
  std::unique_ptr<Backend> backend = make_test_backend(p.backend);
  ASSERT_NE(backend, nullptr) << p.backend << " is not compiled in";
  const CaseReport r = run_case(p.c, *backend);
  if (r.skipped) GTEST_SKIP() << r.skip_reason;
  RecordProperty("nmse", fmt::format("{:.3g}", r.nmse));
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

std::string param_name(const ::testing::TestParamInfo<OpsParam>& p) {
  std::string b = p.param.backend;
  std::replace(b.begin(), b.end(), '-', '_');
  return p.param.c.name + "__" + b;
}

INSTANTIATE_TEST_SUITE_P(, OpsTest, ::testing::ValuesIn(all_params()), param_name);

TEST(OpsCoverage, EveryOpHasACase) {
  std::set<Op> covered;
  for (const OpCase& c : all_cases()) covered.insert(c.op);
  std::string missing;
  for (int i = 0; i < kOpCount; ++i) {
    const auto op = static_cast<Op>(i);
    if (op == Op::NONE || covered.count(op)) continue;
    missing += ' ';
    missing += op_name(op);
  }
  EXPECT_TRUE(missing.empty()) << "ops without a case:" << missing;
}

// Scenarios the harness must keep, each matched by case name.
TEST(OpsCoverage, RequiredScenarios) {
  const std::vector<std::pair<std::string, std::string>> required = {
      {"mul_mat with f32 weights", "^mul_mat_f32_"},
      {"mul_mat with f16 weights", "^mul_mat_f16_"},
      {"mul_mat with bf16 weights", "^mul_mat_bf16_"},
      {"mul_mat with q8_0 weights", "^mul_mat_q8_0_"},
      {"mul_mat batch broadcast", "^mul_mat_.*_w2x1_x6x3"},
      {"mul_mat strided x", "^mul_mat_.*(permuted|transposed)_x"},
      {"mul_mat_id with q8_0 experts", "^mul_mat_id_q8_0_"},
      {"mul_mat_id with f16 experts", "^mul_mat_id_f16_"},
      {"get_rows from q8_0", "^get_rows_q8_0_"},
      {"get_rows from f16", "^get_rows_f16_"},
      {"get_rows from bf16", "^get_rows_bf16_"},
      {"set_rows into an f32 cache", "^set_rows_f32_"},
      {"set_rows into an f16 cache", "^set_rows_f16_"},
      {"cpy f32 -> f16", "^cpy_f32_to_f16_"},
      {"cpy f32 -> bf16", "^cpy_f32_to_bf16_"},
      {"cpy f32 -> q8_0", "^cpy_f32_to_q8_0_"},
      {"cpy into a strided view", "^cpy_.*strided_view"},
      {"binary broadcast", "^add_.*bcast"},
      {"binary with a strided operand", "^(add|sub|mul|div)_.*(permuted|transposed)"},
      {"softmax with a mask", "^softmax_.*mask"},
      {"softmax causal", "^softmax_.*causal"},
      {"rope NEOX with partial n_dims", "^rope_neox_.*_D256_n64"},
      {"rope NORMAL with partial n_dims", "^rope_normal_.*_D256_n64"},
      {"ssm_conv on concat(state, x)", "^ssm_conv_.*_K4_.*concat_state"},
      {"gated delta rule T=1", "^gated_delta_rule_T1_"},
      {"gated delta rule T=5", "^gated_delta_rule_T5_"},
      {"gated delta rule T=64", "^gated_delta_rule_T64_"},
      {"gated delta rule T=65", "^gated_delta_rule_T65_"},
      {"gated delta rule T=130", "^gated_delta_rule_T130_"},
      {"gated delta rule with Hv = 2 Hk", "^gated_delta_rule_.*_Hk2_Hv4_"},
      {"gated delta rule n_states = 4", "^gated_delta_rule_.*_s4$"},
      {"gated delta rule chunked (T >= 64, n_states 1)",
       "^gated_delta_rule_T(6[4-9]|[7-9][0-9]|[1-9][0-9]{2,})_.*_s1$"},
      {"argmax with ties", "^argmax_.*ties"},
      {"top_k with ties", "^top_k_.*ties"},
  };
  std::vector<std::string> names;
  for (const OpCase& c : all_cases()) names.push_back(c.name);
  for (const auto& [what, pattern] : required) {
    const std::regex re(pattern);
    const bool found =
        std::any_of(names.begin(), names.end(), [&](const std::string& n) { return std::regex_search(n, re); });
    EXPECT_TRUE(found) << "no case for: " << what << " (pattern " << pattern << ")";
  }
}

TEST(OpsCoverage, CaseNamesAreUniqueAndValid) {
  std::set<std::string> seen;
  const std::regex valid("^[A-Za-z0-9_]+$");
  for (const OpCase& c : all_cases()) {
    EXPECT_TRUE(seen.insert(c.name).second) << "duplicate case name " << c.name;
    EXPECT_TRUE(std::regex_match(c.name, valid)) << "case name " << c.name << " is not [A-Za-z0-9_]+";
    EXPECT_TRUE(c.build) << c.name << " has no build function";
    EXPECT_TRUE(c.compare || c.max_nmse >= 0.0) << c.name;
  }
}

}  // namespace
}  // namespace gl::test
