// fill.cpp - random input generation and encoding into tensor bytes.
#include "common/fill.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ggml-lite/status.h"

namespace gl::test {

uint64_t seed_from_name(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

double signed_magnitude(Rng& rng, double lo, double hi) {
  const double m = rng.uniform(lo, hi);
  return rng.coin(0.5) ? -m : m;
}

// Row-wise fills: rows of ne[0] values.
void fill_rows(const Fill& f, int64_t n, std::vector<double>& v, Rng& rng) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (size_t r = 0; r < v.size() / static_cast<size_t>(n); ++r) {
    double* row = v.data() + r * static_cast<size_t>(n);
    if (f.kind == Fill::Kind::UNIT_ROWS) {
      double ss = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        row[i] = signed_magnitude(rng, 0.1, 1.0);
        ss += row[i] * row[i];
      }
      for (int64_t i = 0; i < n; ++i) row[i] *= f.lo / std::sqrt(ss);
      continue;
    }
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(rng.below(i + 1))]);
    if (f.kind == Fill::Kind::DISTINCT) {
      for (int64_t i = 0; i < n; ++i) row[i] = (static_cast<double>(perm[static_cast<size_t>(i)] - n / 2) + 0.5) * f.lo;
    } else {  // IDS_DISTINCT: the first ne[0] of a permutation of [0, f.n)
      GL_ASSERT(n <= f.n, "fill: more distinct ids per row than the id range holds");
      std::vector<int64_t> pool(static_cast<size_t>(f.n));
      std::iota(pool.begin(), pool.end(), 0);
      for (int64_t i = 0; i < n; ++i) {
        std::swap(pool[static_cast<size_t>(i)], pool[static_cast<size_t>(i + rng.below(f.n - i))]);
        row[i] = static_cast<double>(pool[static_cast<size_t>(i)]);
      }
    }
  }
}

double integer_nonzero(Rng& rng, double lo, double hi) {
  for (;;) {
    const double x = std::floor(rng.uniform(lo, hi + 1.0));
    if (x != 0.0) return x;
  }
}

}  // namespace

std::vector<double> generate(const Fill& f, const std::array<int64_t, kMaxDims>& ne, Rng& rng) {
  std::vector<double> v(static_cast<size_t>(ne[0] * ne[1] * ne[2] * ne[3]));
  switch (f.kind) {
    case Fill::Kind::NONZERO:
      for (double& x : v) x = signed_magnitude(rng, f.lo, f.hi);
      break;
    case Fill::Kind::RANGE:
      for (double& x : v) x = rng.uniform(f.lo, f.hi);
      break;
    case Fill::Kind::INTEGERS:
      for (double& x : v) x = integer_nonzero(rng, f.lo, f.hi);
      break;
    case Fill::Kind::MASK:
    case Fill::Kind::STAIR_MASK:
      for (size_t i = 0; i < v.size(); ++i) {
        const auto key = static_cast<int64_t>(i) % ne[0], row = (static_cast<int64_t>(i) / ne[0]) % ne[1];
        const bool tail = f.kind == Fill::Kind::STAIR_MASK && key >= ((row + 1) * ne[0] + ne[1] - 1) / ne[1];
        const bool masked = tail || (key != 0 && rng.coin(f.p));
        v[i] = masked ? -std::numeric_limits<double>::infinity() : signed_magnitude(rng, f.lo, f.hi);
      }
      break;
    case Fill::Kind::IDS:
      for (double& x : v) x = static_cast<double>(rng.below(f.n));
      break;
    case Fill::Kind::UNIT_ROWS:
    case Fill::Kind::DISTINCT:
    case Fill::Kind::IDS_DISTINCT: fill_rows(f, ne[0], v, rng); break;
  }
  return v;
}

std::vector<uint8_t> encode(DType type, const std::array<int64_t, kMaxDims>& ne, const std::vector<double>& vals) {
  const int64_t n_rows = ne[1] * ne[2] * ne[3];
  const size_t rb = row_bytes(type, ne[0]);
  std::vector<uint8_t> bytes(rb * static_cast<size_t>(n_rows));
  std::vector<float> row(static_cast<size_t>(ne[0]));
  for (int64_t r = 0; r < n_rows; ++r) {
    const double* src = vals.data() + r * ne[0];
    uint8_t* dst = bytes.data() + static_cast<size_t>(r) * rb;
    if (type == DType::I32) {
      for (int64_t i = 0; i < ne[0]; ++i) {
        const auto id = static_cast<int32_t>(src[i]);
        std::memcpy(dst + i * 4, &id, 4);
      }
      continue;
    }
    for (int64_t i = 0; i < ne[0]; ++i) row[static_cast<size_t>(i)] = static_cast<float>(src[i]);
    from_float(type, row.data(), dst, ne[0]);
  }
  return bytes;
}

}  // namespace gl::test
