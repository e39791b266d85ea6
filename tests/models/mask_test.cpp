// mask_test.cpp - the attention mask's kept buffer (models/src/qwen35/layers.h): after any sequence
// of calls (prefill chunks, rollback, a span's end, a new shape) it equals a mask written afresh.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "../models/src/qwen35/layers.h"

namespace gl::qwen35 {
namespace {

std::vector<float> fresh_mask(int n_kv, int n_rows, int pos0) {
  std::vector<float> m(static_cast<size_t>(n_kv) * n_rows, -std::numeric_limits<float>::infinity());
  for (int i = 0; i < n_rows; ++i)
    for (int j = 0; j < n_kv && j <= pos0 + i; ++j) m[static_cast<size_t>(i) * n_kv + j] = 0.0f;
  return m;
}

TEST(CausalMask, KeptBufferEqualsAFreshMaskAfterEveryCall) {
  struct Call {
    int n_kv, n_rows, pos0;
  };
  const Call calls[] = {{40, 5, 3}, {40, 5, 10}, {40, 5, 2},  {40, 5, 38}, {40, 5, 36},
                        {48, 5, 4}, {48, 3, 4},  {48, 3, 47}, {48, 3, 0},  {40, 5, 0}};
  for (const Call& c : calls) {
    const std::vector<float>& got = detail::causal_mask(c.n_kv, c.n_rows, c.pos0);
    EXPECT_EQ(got, fresh_mask(c.n_kv, c.n_rows, c.pos0))
        << "n_kv " << c.n_kv << ", rows " << c.n_rows << ", pos0 " << c.pos0;
  }
}

}  // namespace
}  // namespace gl::qwen35
