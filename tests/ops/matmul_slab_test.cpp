// matmul_slab_test.cpp - the CPU's EXACT products of many activation rows (prefill) go by slabs:
// weights converted to F32 tiles, k cut into chunks whose partial sums wait in memory, register
// tiles of another shape than a decode GEMV's. Each result must still be, bit for bit, the
// product of its row alone (greedy MTP parity, and prefill equal to decode): here past one slab
// of rows, several k chunks, a k tail and short register groups, for the types with such tiles.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/matmul_product.h"

namespace gl::test {
namespace {

class MatmulSlabs : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulSlabs, RowsGiveTheBitsOfOneRowAtATime) {
  // K past two 256-element chunks with a tail of 3 (whole blocks for the quant types); M = 53:
  // more than one slab of 48 rows, then short register groups; N = 37: short weight groups.
  const DType t = GetParam();
  const int64_t k = dtype_traits(t).block_size == 1 ? 611 : 608, n = 37, m = 53;
  const std::vector<float> wf = random_floats(k * n, 3);
  std::vector<char> w(row_bytes(t, k) * n);
  from_float(t, wf.data(), w.data(), k * n);
  const std::vector<float> x = random_floats(k * m, 4);
  const std::vector<float> all = product("cpu", t, w, x, k, n, m, Precision::EXACT);
  ASSERT_EQ(all.size(), static_cast<size_t>(n * m));
  for (int64_t r = 0; r < m; r += 4) {
    const std::vector<float> row(x.begin() + r * k, x.begin() + (r + 1) * k);
    const std::vector<float> one = product("cpu", t, w, row, k, n, 1, Precision::EXACT);
    ASSERT_EQ(one.size(), static_cast<size_t>(n));
    EXPECT_EQ(std::memcmp(one.data(), all.data() + r * n, n * sizeof(float)), 0) << "row " << r;
  }
}

std::string type_name(const ::testing::TestParamInfo<DType>& p) { return std::string(dtype_name(p.param)); }

INSTANTIATE_TEST_SUITE_P(Types, MatmulSlabs,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0), type_name);

}  // namespace
}  // namespace gl::test
