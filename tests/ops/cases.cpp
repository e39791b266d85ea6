// cases.cpp - the case registry: every family, in a fixed order.
#include "ops/cases.h"

namespace gl::test {

std::vector<OpCase> all_cases() {
  std::vector<OpCase> all;
  for (auto family : {elementwise_cases, matmul_cases, layout_cases, attention_cases, reduce_cases, ssm_cases}) {
    std::vector<OpCase> cs = family();
    all.insert(all.end(), std::make_move_iterator(cs.begin()), std::make_move_iterator(cs.end()));
  }
  return all;
}

}  // namespace gl::test
