// quants_test.cpp - the reference quantized types (ggml-lite/quants/): dequantizers against
// llama.cpp-quantized fixtures, quantize/dequantize error bounds, and hand-built blocks.
#include <gtest/gtest.h>

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
  for (const auto& [type, count] : checked) std::printf("  %-7s %d tensors\n", type.c_str(), count);
}

// Re-quantizing the dequantized fixture values: what comes back.
TEST(QuantsFixtures, RequantizeDiagnostics) {
  const fs::path dir = fixture_dir();
  if (!fs::is_directory(dir)) GTEST_SKIP() << "fixtures not found: " << dir;
  std::map<std::string, std::pair<int64_t, int64_t>> stats;  // name -> (blocks exact, blocks)
  std::map<std::string, double> max_rel;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    Result<GgufFile> f = GgufFile::open(entry.path().string());
    ASSERT_TRUE(f) << f.error();
    for (const GgufTensorInfo& t : f->tensors()) {
      const QuantRef* q = quant_ref_by_ggml_type(t.ggml_type);
      if (!q) continue;
      const int64_t n = std::min<int64_t>(t.nelements(), 8192);
      std::vector<float> y(static_cast<size_t>(n)), y2(static_cast<size_t>(n));
      q->to_float(t.data, y.data(), n);
      std::vector<uint8_t> bytes(static_cast<size_t>(n / q->block_size) * q->block_bytes);
      q->from_float(y.data(), bytes.data(), n);
      q->to_float(bytes.data(), y2.data(), n);
      auto& [exact, total] = stats[std::string(q->name)];
      for (int64_t b = 0; b < n / q->block_size; ++b) {
        const size_t off = static_cast<size_t>(b * q->block_size);
        double e2 = 0, s2 = 0;
        bool same = true;
        for (int64_t i = 0; i < q->block_size; ++i) {
          same &= y[off + i] == y2[off + i];
          e2 += (y[off + i] - y2[off + i]) * (y[off + i] - y2[off + i]);
          s2 += y[off + i] * y[off + i];
        }
        exact += same;
        ++total;
        if (s2 > 0) max_rel[std::string(q->name)] = std::max(max_rel[std::string(q->name)], std::sqrt(e2 / s2));
      }
    }
  }
  for (const auto& [name, s] : stats)
    std::printf("  %-7s %lld / %lld blocks exact, max rel err %.3g\n", name.c_str(), (long long)s.first,
                (long long)s.second, max_rel[name]);
}

// Quantize-dequantize of Gaussian-ish data (sum of 4 uniforms).
TEST(QuantsRoundTrip, Diagnostics) {
  test::Rng rng(7);
  const int64_t n = 256 * 64;
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x)
    v = static_cast<float>(rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1));
  double s2 = 0;
  for (float v : x) s2 += v * v;
  for (const QuantRef& q : quant_refs()) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n / q.block_size) * q.block_bytes);
    std::vector<float> y(static_cast<size_t>(n));
    q.from_float(x.data(), bytes.data(), n);
    q.to_float(bytes.data(), y.data(), n);
    double e2 = 0;
    for (int64_t i = 0; i < n; ++i) e2 += (x[i] - y[i]) * (x[i] - y[i]);
    std::printf("  %-7s rel rmse %.5f\n", std::string(q.name).c_str(), std::sqrt(e2 / s2));
  }
}

}  // namespace
}  // namespace gl
