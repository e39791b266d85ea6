// quants_test.cpp - the reference quantized types (ggml-lite/quants/): dequantizers against
// llama.cpp-quantized fixtures, quantize/dequantize error bounds, and hand-built blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fill.h"
#include "ggml-lite/dtype.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/quants/quants.h"

namespace gl {
namespace {

namespace fs = std::filesystem;

// /work/shared sits beside the checkout (GL_SOURCE_DIR); CI has the same layout.
fs::path fixture_dir() { return fs::path(GL_SOURCE_DIR).parent_path() / "shared" / "fixtures" / "llama-quants"; }

// Every element of a tensor as floats: our reference dequantizers for the quant types, the
// dtype conversions for f32 / f16 / bf16 / q8_0. Empty when no function reads the type.
std::vector<float> dequantize(const GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.nelements()));
  if (const QuantRef* q = quant_ref_by_ggml_type(t.ggml_type)) {
    q->to_float(t.data, out.data(), t.nelements());
  } else if (std::optional<DType> dt = t.dtype()) {
    to_float(*dt, t.data, out.data(), t.nelements());
  } else {
    out.clear();
  }
  return out;
}

TEST(QuantsFixtures, DequantizeMatchesGgufPy) {
  const fs::path dir = fixture_dir();
  if (!fs::is_directory(dir)) GTEST_SKIP() << "fixtures not found: " << dir;
  std::map<std::string, int> checked;  // ggml type name -> tensors compared
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    const fs::path refs_path = fs::path(entry.path()).replace_extension(".refs.json");
    SCOPED_TRACE(entry.path().filename().string());
    Result<GgufFile> f = GgufFile::open(entry.path().string());
    ASSERT_TRUE(f) << f.error();
    std::ifstream in(refs_path);
    ASSERT_TRUE(in) << "missing " << refs_path;
    const nlohmann::json refs = nlohmann::json::parse(in);
    for (const auto& [name, ref] : refs.at("tensors").items()) {
      SCOPED_TRACE(name);
      const GgufTensorInfo* t = f->find_tensor(name);
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(t->nelements(), ref.at("n").get<int64_t>());
      const std::vector<float> y = dequantize(*t);
      ASSERT_FALSE(y.empty()) << "no dequantizer for " << ggml_type_name(t->ggml_type);
      for (const auto& s : ref.at("samples")) {
        const size_t i = s.at(0).get<size_t>();
        const float want = s.at(1).get<float>();
        // gguf-py computes in f32 in the same order, so the values agree bit for bit.
        ASSERT_EQ(y[i], want) << "element " << i;
      }
      double sum = 0.0, sumsq = 0.0;
      for (float v : y) {
        sum += v;
        sumsq += static_cast<double>(v) * v;
      }
      // Only the summation order differs from numpy's (pairwise) float64 sums.
      const double sumsq_ref = ref.at("sumsq").get<double>();
      const double scale = std::sqrt(static_cast<double>(y.size()) * sumsq_ref);  // bounds sum |x|
      EXPECT_NEAR(sum, ref.at("sum").get<double>(), 1e-12 * static_cast<double>(y.size()) * scale + 1e-30);
      EXPECT_NEAR(sumsq, sumsq_ref, 1e-12 * static_cast<double>(y.size()) * sumsq_ref + 1e-30);
      ++checked[ggml_type_name(t->ggml_type)];
    }
  }
  for (const char* type : {"q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q4_0", "q4_1", "q5_0", "iq4_nl", "iq4_xs", "mxfp4"})
    EXPECT_GT(checked[type], 0) << "no fixture tensor of type " << type;
}

// Re-quantizing dequantized values lands on the same blocks for the types whose quantizer has
// a fixed point there: one scale from the extreme value (Q4_0, Q4_1, Q5_0, MXFP4) or, as it
// turns out on these files, a search that finds its own grid again (Q4_K, Q6_K). The other
// searches (Q2_K, Q3_K, Q5_K, IQ4_*) move a few percent of blocks, so they are not asserted.
TEST(QuantsFixtures, RequantizingDequantizedBlocksIsAFixedPoint) {
  const fs::path dir = fixture_dir();
  if (!fs::is_directory(dir)) GTEST_SKIP() << "fixtures not found: " << dir;
  const std::vector<std::string_view> fixed = {"q4_0", "q4_1", "q5_0", "q4_K", "q6_K", "mxfp4"};
  std::map<std::string_view, int64_t> blocks;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    Result<GgufFile> f = GgufFile::open(entry.path().string());
    ASSERT_TRUE(f) << f.error();
    for (const GgufTensorInfo& t : f->tensors()) {
      const QuantRef* q = quant_ref_by_ggml_type(t.ggml_type);
      if (!q || std::find(fixed.begin(), fixed.end(), q->name) == fixed.end()) continue;
      // The first rows are enough, and keep the search-based quantizers fast.
      const int64_t n = std::min<int64_t>(t.nelements(), 8192);
      std::vector<float> y(static_cast<size_t>(n)), y2(static_cast<size_t>(n));
      q->to_float(t.data, y.data(), n);
      std::vector<uint8_t> bytes(static_cast<size_t>(n / q->block_size) * q->block_bytes);
      q->from_float(y.data(), bytes.data(), n);
      q->to_float(bytes.data(), y2.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(y[static_cast<size_t>(i)], y2[static_cast<size_t>(i)])
            << entry.path().filename() << " " << t.name << " element " << i;
      blocks[q->name] += n / q->block_size;
    }
  }
  for (std::string_view name : fixed) EXPECT_GT(blocks[name], 0) << name;
}

// Deterministic inputs that visit the quantizers' branches: Gaussian-like, all-positive with an
// offset (the mins), sparse with exact zeros, and outliers; magnitudes 2^-6 .. 2^5 by block.
std::vector<float> golden_input(int64_t n) {
  test::Rng rng(2024);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = i / 256;
    const double mag = std::ldexp(1.0, static_cast<int>(b % 12) - 6);
    double v = 0.0;
    switch (b % 4) {
      case 0: v = rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1); break;
      case 1: v = 0.5 + rng.uniform(0, 1); break;
      case 2: v = rng.coin(0.2) ? 0.0 : rng.uniform(-1, 1); break;
      default: v = i % 32 == 5 ? 8.0 : rng.uniform(-1, 1); break;
    }
    x[static_cast<size_t>(i)] = static_cast<float>(v * mag);
  }
  return x;
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// FNV-1a of the blocks that llama.cpp's reference quantizers (ggml-quants.c, as llama-quantize
// calls them without an imatrix: quantize_row_*_ref, quantize_iq4_nl / quantize_iq4_xs) write
// for golden_input(256 * 48); recorded by linking that file into a throwaway harness.
TEST(QuantsGolden, QuantizersWriteLlamaCppBytes) {
  const std::map<std::string_view, uint64_t> want = {
      {"q4_0", 0x35d23348a9f93340ull},  {"q4_1", 0x683615ed12c482f6ull},   {"q5_0", 0xf214b5708b8dc2ccull},
      {"q5_1", 0xb632256fa7a21201ull},  {"q2_K", 0xf345fd85da9a26feull},   {"q3_K", 0xa359637f6fcb2122ull},
      {"q4_K", 0xb6e48a4c9b743d41ull},  {"q5_K", 0x1cf571ed7ea3949dull},   {"q6_K", 0x1d899a84c6e17720ull},
      {"q8_K", 0x0498186e076b4ba9ull},  {"iq4_nl", 0x72e57d435a8e2785ull}, {"iq4_xs", 0x5a229d23c5dfce56ull},
      {"mxfp4", 0xda732e387145798bull},
  };
  const int64_t n = 256 * 48;
  const std::vector<float> x = golden_input(n);
  ASSERT_EQ(want.size(), quant_refs().size());
  for (const QuantRef& q : quant_refs()) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n / q.block_size) * q.block_bytes);
    q.from_float(x.data(), bytes.data(), n);
    EXPECT_EQ(fnv1a(bytes), want.at(q.name)) << q.name;
  }
}

// Quantize-dequantize of Gaussian-like data (a sum of 4 uniforms, sigma = 1.155). Bounds are
// relative RMSE, about 10% above what the reference quantizers reach; the scale behind each:
// a uniform grid of step D has RMSE ~ D / sqrt(12), and for 32 such samples |max| ~ 2 sigma.
TEST(QuantsRoundTrip, RelativeRmseWithinBound) {
  const std::map<std::string_view, double> bound = {
      {"q4_0", 0.090},    // D = |max| / 8 ~ 0.26 sigma -> 0.074, plus the unused +8 level
      {"q4_1", 0.083},    // D = range / 15 ~ 0.27 sigma -> 0.078 (the fit is a touch better)
      {"q5_0", 0.045},    // half of Q4_0's step
      {"q5_1", 0.040},    // half of Q4_1's step
      {"q2_K", 0.320},    // 4 levels per 16 with 4-bit scales and mins
      {"q3_K", 0.160},    // 8 levels per 16
      {"q4_K", 0.076},    // 16 levels per 32 with a searched scale and min, 6-bit quantized
      {"q5_K", 0.038},    // 32 levels per 32
      {"q6_K", 0.019},    // 64 levels per 16, 8-bit scales
      {"q8_K", 0.007},    // D = |max| / 127 over 256 (|max| <= 4): D / sqrt(12) / sigma ~ 0.0064
      {"iq4_nl", 0.082},  // 16 non-uniform levels, denser near 0, per 32
      {"iq4_xs", 0.082},  // the same levels, 6-bit sub-block scales per 256
      {"mxfp4", 0.121},   // E2M1 levels with a power-of-two scale: coarse top binade
  };
  test::Rng rng(7);
  const int64_t n = 256 * 64;
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x)
    v = static_cast<float>(rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1));
  double s2 = 0.0;
  for (float v : x) s2 += static_cast<double>(v) * v;
  ASSERT_EQ(bound.size(), quant_refs().size());
  for (const QuantRef& q : quant_refs()) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n / q.block_size) * q.block_bytes);
    std::vector<float> y(static_cast<size_t>(n));
    q.from_float(x.data(), bytes.data(), n);
    q.to_float(bytes.data(), y.data(), n);
    double e2 = 0.0;
    for (size_t i = 0; i < x.size(); ++i) e2 += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    EXPECT_LT(std::sqrt(e2 / s2), bound.at(q.name)) << q.name;
  }
}

TEST(QuantsRoundTrip, ZerosStayZero) {
  const std::vector<float> x(512, 0.0f);
  for (const QuantRef& q : quant_refs()) {
    std::vector<uint8_t> bytes(static_cast<size_t>(512 / q.block_size) * q.block_bytes);
    std::vector<float> y(512, 1.0f);
    q.from_float(x.data(), bytes.data(), 512);
    q.to_float(bytes.data(), y.data(), 512);
    for (float v : y) ASSERT_EQ(v, 0.0f) << q.name;
  }
}

TEST(QuantsTable, LookupsAgreeWithTheGgufTypeTable) {
  for (const QuantRef& q : quant_refs()) {
    EXPECT_EQ(quant_ref_by_ggml_type(q.ggml_type), &q);
    EXPECT_EQ(quant_ref_by_name(q.name), &q);
    const GgmlTypeInfo* info = ggml_type_info(q.ggml_type);
    ASSERT_NE(info, nullptr) << q.name;
    EXPECT_EQ(info->name, q.name);
    EXPECT_EQ(info->block_size, q.block_size) << q.name;
    EXPECT_EQ(info->block_bytes, q.block_bytes) << q.name;
  }
  EXPECT_EQ(quant_ref_by_ggml_type(0), nullptr);   // f32
  EXPECT_EQ(quant_ref_by_ggml_type(16), nullptr);  // iq2_xxs: no reference here
  EXPECT_EQ(quant_ref_by_name("Q4_K"), nullptr);   // ggml's exact spelling only
}

}  // namespace
}  // namespace gl
