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
#include "ggml-lite/quants/iq4_xs.h"
#include "ggml-lite/quants/mxfp4.h"
#include "ggml-lite/quants/q2_k.h"
#include "ggml-lite/quants/q3_k.h"
#include "ggml-lite/quants/q4_0.h"
#include "ggml-lite/quants/q4_1.h"
#include "ggml-lite/quants/q5_0.h"
#include "ggml-lite/quants/q5_1.h"
#include "ggml-lite/quants/q5_k.h"
#include "ggml-lite/quants/q6_k.h"
#include "ggml-lite/quants/q8_k.h"
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

// The same with importance weights (llama.cpp's quantize_q4_K / q5_K / q6_K given an imatrix,
// one row of 256 * 48): a fixed, uneven weight per column.
TEST(QuantsGolden, ImatrixQuantizersWriteLlamaCppBytes) {
  const int64_t n = 256 * 48;
  const std::vector<float> x = golden_input(n);
  std::vector<float> qw(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) qw[static_cast<size_t>(i)] = 0.1f + static_cast<float>((i * 37) % 101) / 10.0f;
  std::vector<uint8_t> bytes(static_cast<size_t>(n / 256) * sizeof(BlockQ6_K));
  quantize_row_q4_k_imatrix(x.data(), reinterpret_cast<BlockQ4_K*>(bytes.data()), n, qw.data());
  bytes.resize(static_cast<size_t>(n / 256) * sizeof(BlockQ4_K));
  EXPECT_EQ(fnv1a(bytes), 0xfe163a071d23ddbeull) << "q4_K";
  bytes.resize(static_cast<size_t>(n / 256) * sizeof(BlockQ5_K));
  quantize_row_q5_k_imatrix(x.data(), reinterpret_cast<BlockQ5_K*>(bytes.data()), n, qw.data());
  EXPECT_EQ(fnv1a(bytes), 0xe6399bffd89c7deeull) << "q5_K";
  bytes.resize(static_cast<size_t>(n / 256) * sizeof(BlockQ6_K));
  quantize_row_q6_k_imatrix(x.data(), reinterpret_cast<BlockQ6_K*>(bytes.data()), n, qw.data());
  EXPECT_EQ(fnv1a(bytes), 0x54f87c13d0fe1384ull) << "q6_K";
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
  for (const char* name : {"q4_K", "q5_K", "q6_K"}) EXPECT_NE(quant_ref_by_name(name)->from_float_imatrix, nullptr);
  EXPECT_EQ(quant_ref_by_name("q4_0")->from_float_imatrix, nullptr);
  EXPECT_EQ(quant_ref_by_ggml_type(0), nullptr);   // f32
  EXPECT_EQ(quant_ref_by_ggml_type(16), nullptr);  // iq2_xxs: no reference here
  EXPECT_EQ(quant_ref_by_name("Q4_K"), nullptr);   // ggml's exact spelling only
}

// ---- hand-built blocks: bytes written from the layout, values worked out by hand ----

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfMinusOne = 0xBC00;

// Nibble pattern of the 32-element layouts: element j is j % 16 for j < 16 and 15 - j for the rest.
void ramp_nibbles(uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
}
int ramp_level(int j) { return j < 16 ? j : 31 - j; }

TEST(QuantsBlocks, LegacyLayouts) {
  float y[32];
  BlockQ4_0 a{};
  a.d = kHalfOne;
  ramp_nibbles(a.qs);
  dequantize_row_q4_0(&a, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], static_cast<float>(ramp_level(j) - 8)) << j;

  BlockQ4_1 b{};
  b.d = kHalfHalf;
  b.m = kHalfMinusOne;
  ramp_nibbles(b.qs);
  dequantize_row_q4_1(&b, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * static_cast<float>(ramp_level(j)) - 1.0f) << j;

  // qh 0xAAAAAAAA: the odd elements have bit 4 set.
  BlockQ5_0 c{};
  c.d = kHalfOne;
  std::memset(c.qh, 0xAA, 4);
  ramp_nibbles(c.qs);
  dequantize_row_q5_0(&c, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], static_cast<float>(ramp_level(j) + 16 * (j % 2) - 16)) << j;

  BlockQ5_1 d{};
  d.d = kHalfOne;
  d.m = kHalfHalf;
  std::memset(d.qh, 0xAA, 4);
  ramp_nibbles(d.qs);
  dequantize_row_q5_1(&d, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], static_cast<float>(ramp_level(j) + 16 * (j % 2)) + 0.5f) << j;
}

TEST(QuantsBlocks, LegacyQuantizersHitExactGrids) {
  // Q4_0: largest magnitude -4 gives d = 0.5 and the values sit on the grid exactly.
  float x[32], y[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(j % 16 - 8);
  BlockQ4_0 a;
  quantize_row_q4_0(x, &a, 32);
  EXPECT_EQ(a.d, kHalfHalf);
  EXPECT_EQ(a.qs[3], 0x33);
  dequantize_row_q4_0(&a, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]);
  // Q5_1: range [-1, 14.5] over 31 steps of 0.5.
  for (int j = 0; j < 32; ++j) x[j] = -1.0f + 0.5f * static_cast<float>(31 - j);
  BlockQ5_1 b;
  quantize_row_q5_1(x, &b, 32);
  EXPECT_EQ(b.d, kHalfHalf);
  EXPECT_EQ(b.m, kHalfMinusOne);
  dequantize_row_q5_1(&b, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]);
}

TEST(QuantsBlocks, Q2_KAndQ3_KLayouts) {
  std::vector<float> y(256);
  // 0xE4 = 11 10 01 00: element 128h + 32k + l has level k.
  BlockQ2_K a{};
  for (int s = 0; s < 16; ++s) a.scales[s] = static_cast<uint8_t>(s | ((15 - s) << 4));
  std::memset(a.qs, 0xE4, sizeof(a.qs));
  a.d = kHalfOne;
  a.dmin = kHalfHalf;
  dequantize_row_q2_k(&a, y.data(), 256);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 16, k = (i % 128) / 32;
    EXPECT_EQ(y[i], static_cast<float>(s * k) - 0.5f * static_cast<float>(15 - s)) << i;
  }
  // Q3_K: every 6-bit scale 33 (low nibbles 1 in bytes 0-7, high bits 10 in bytes 8-11), so
  // d * (33 - 32) = 1; hmask 0x55 sets the high bit for i / 32 even, where the level is not
  // lowered by 4.
  BlockQ3_K b{};
  std::memset(b.hmask, 0x55, sizeof(b.hmask));
  std::memset(b.qs, 0xE4, sizeof(b.qs));
  std::memset(b.scales, 0x11, 8);
  std::memset(b.scales + 8, 0xAA, 4);
  b.d = kHalfOne;
  dequantize_row_q3_k(&b, y.data(), 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], static_cast<float>((i % 128) / 32 - ((i / 32) % 2 ? 4 : 0))) << i;
  // One distinct scale: sub-block 9 (low nibble in byte 1's high half, high bits in byte 9
  // bits 4-5) set to 0 -> multiplier -32.
  b.scales[1] = 0x01;
  b.scales[9] = 0x8A;
  dequantize_row_q3_k(&b, y.data(), 256);
  for (int i = 144; i < 160; ++i) EXPECT_EQ(y[i], -32.0f * static_cast<float>((i % 128) / 32 - ((i / 32) % 2 ? 4 : 0)));
  EXPECT_EQ(y[160], static_cast<float>(1 - 4));  // sub-block 10 untouched: i = 160 -> k 1, i / 32 = 5
}

// Q4_K / Q5_K scales: bytes 0-3 0x41..0x44 (scales 1..4, high bits 01), bytes 4-7 0x82..0x85
// (mins 2..5, high bits 10), bytes 8-11 0x35: scales 4-7 = 5 | 1 << 4 = 21, mins = 3 | 2 << 4 = 35.
void k4_test_scales(uint8_t* sc) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = static_cast<uint8_t>(0x40 | (j + 1));
    sc[j + 4] = static_cast<uint8_t>(0x80 | (j + 2));
    sc[j + 8] = 0x35;
  }
}
constexpr float kK4Scale[8] = {1, 2, 3, 4, 21, 21, 21, 21};
constexpr float kK4Min[8] = {2, 3, 4, 5, 35, 35, 35, 35};

TEST(QuantsBlocks, Q4_KAndQ5_KLayouts) {
  std::vector<float> y(256);
  BlockQ4_K a{};
  a.d = kHalfOne;
  a.dmin = kHalfHalf;
  k4_test_scales(a.scales);
  for (int i = 0; i < 128; ++i) a.qs[i] = static_cast<uint8_t>((i % 16) | ((15 - i % 16) << 4));
  dequantize_row_q4_k(&a, y.data(), 256);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32, l = i % 32, q = s % 2 == 0 ? l % 16 : 15 - l % 16;
    EXPECT_EQ(y[i], kK4Scale[s] * static_cast<float>(q) - 0.5f * kK4Min[s]) << i;
  }
  // Q5_K: qh 0x55 on even bytes sets bit 4 of element 64c + l (l even) only.
  BlockQ5_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  k4_test_scales(b.scales);
  for (int l = 0; l < 32; l += 2) b.qh[l] = 0x55;
  std::memcpy(b.qs, a.qs, sizeof(b.qs));
  dequantize_row_q5_k(&b, y.data(), 256);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32, l = i % 32;
    const int q = (s % 2 == 0 ? l % 16 : 15 - l % 16) + (s % 2 == 0 && l % 2 == 0 ? 16 : 0);
    EXPECT_EQ(y[i], kK4Scale[s] * static_cast<float>(q) - 0.5f * kK4Min[s]) << i;
  }
}

TEST(QuantsBlocks, Q6_KAndQ8_KLayouts) {
  std::vector<float> y(256);
  // ql 0x21 everywhere: low nibble 1 (k < 2) or 2 (k >= 2); qh 0xE4: high bits k.
  BlockQ6_K a{};
  std::memset(a.ql, 0x21, sizeof(a.ql));
  std::memset(a.qh, 0xE4, sizeof(a.qh));
  for (int s = 0; s < 16; ++s) a.scales[s] = static_cast<int8_t>(s - 8);
  a.d = kHalfHalf;
  dequantize_row_q6_k(&a, y.data(), 256);
  for (int i = 0; i < 256; ++i) {
    const int k = (i % 128) / 32, q = (k < 2 ? 1 : 2) | (k << 4);
    EXPECT_EQ(y[i], 0.5f * static_cast<float>((i / 16 - 8) * (q - 32))) << i;
  }
  BlockQ8_K b{};
  b.d = 0.25f;
  for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>(i - 128);
  dequantize_row_q8_k(&b, y.data(), 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.25f * static_cast<float>(i - 128));
  // Quantizing: d = max / -127 and bsums are the sums of 16 quants.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 64) - 31.75f;  // max |x| at -31.75
  quantize_row_q8_k(x.data(), &b, 256);
  EXPECT_FLOAT_EQ(b.d, 31.75f / 127.0f);
  EXPECT_EQ(b.qs[0], -127);
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += b.qs[16 * j + i];
    EXPECT_EQ(b.bsums[j], sum) << j;
  }
}

TEST(QuantsBlocks, NonLinearLayouts) {
  std::vector<float> y(256);
  BlockIQ4_NL a{};
  a.d = kHalfOne;
  ramp_nibbles(a.qs);
  dequantize_row_iq4_nl(&a, y.data(), 32);
  const float levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], levels[ramp_level(j)]) << j;
  // IQ4_XS: sub-block s gets scale 28 + s (multiplier s - 4): low nibbles in scales_l, high
  // 2 bits (1 for 28..31, 2 for 32..35) in scales_h.
  BlockIQ4_XS b{};
  b.d = kHalfHalf;
  for (int s = 0; s < 8; ++s) {
    const int ls = 28 + s;
    b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | ((ls & 0xF) << (4 * (s % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((ls >> 4) << (2 * s)));
    ramp_nibbles(b.qs + 16 * s);
  }
  EXPECT_EQ(b.scales_h, 0xAA55);
  dequantize_row_iq4_xs(&b, y.data(), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(y[i], 0.5f * static_cast<float>(i / 32 - 4) * levels[ramp_level(i % 32)]) << i;
  // MXFP4: e = 127 is scale 1, so the values are plain E2M1; e = 0 is the subnormal 2^-128 (halved).
  BlockMXFP4 c{};
  c.e = 127;
  ramp_nibbles(c.qs);
  dequantize_row_mxfp4(&c, y.data(), 32);
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], e2m1[ramp_level(j)]) << j;
  c.e = 0;
  dequantize_row_mxfp4(&c, y.data(), 32);
  EXPECT_EQ(y[7], std::ldexp(12.0f, -128));
  // Quantizing a block whose largest magnitude is 6: e = floor(log2 6) - 2 + 127 = 127, exact grid.
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = e2m1[j % 16];
  quantize_row_mxfp4(x, &c, 32);
  EXPECT_EQ(c.e, 127);
  dequantize_row_mxfp4(&c, y.data(), 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]) << j;
}

}  // namespace
}  // namespace gl
