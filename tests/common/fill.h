// fill.h - seeded random data for op-test inputs.
//
//   gl::test::Rng rng(gl::test::seed_from_name("mul_mat_f32_31x33x5"));
//   std::vector<double> v = gl::test::generate(gl::test::Fill::nonzero(), t->ne, rng);
//   std::vector<uint8_t> bytes = gl::test::encode(t->type, t->ne, v);
//
// Values are never zero unless a fill says so: a zero hides a kernel that
// skips or double-counts an element. Each kind states the range it draws from.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "ggml-lite/tensor.h"

namespace gl::test {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double uniform(double lo, double hi) {  // [lo, hi), portable across standard libraries
    return lo + (hi - lo) * static_cast<double>(gen_() >> 11) * 0x1.0p-53;
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(gen_() % static_cast<uint64_t>(n)); }
  bool coin(double p) { return uniform(0.0, 1.0) < p; }

 private:
  std::mt19937_64 gen_;
};

// FNV-1a of the name: every case gets its own fixed stream.
uint64_t seed_from_name(std::string_view name);

struct Fill {
  enum class Kind : uint8_t {
    NONZERO,       // |x| uniform in [lo, hi], random sign
    RANGE,         // x uniform in [lo, hi] (one-signed ranges: positive inputs, g <= 0)
    UNIT_ROWS,     // NONZERO, then every row (ne[0]) scaled to L2 norm lo
    DISTINCT,      // every row a random permutation of (i - n/2 + 1/2) * lo: no ties, no zero
    INTEGERS,      // integers in [lo, hi] without 0: exact ties on purpose
    MASK,          // NONZERO in [lo, hi], each entry -inf with probability p (never column 0)
    STAIR_MASK,    // MASK, and row r of n (ne[1]) -inf past its first ceil((r + 1) ne[0] / n) entries
    IDS,           // I32 uniform in [0, n)
    IDS_DISTINCT,  // I32, every row (ne[0]) distinct values from [0, n)
  };
  Kind kind = Kind::NONZERO;
  double lo = 0.1;
  double hi = 1.0;
  double p = 0.0;
  int64_t n = 0;

  static Fill nonzero(double lo = 0.1, double hi = 1.0) { return {Kind::NONZERO, lo, hi}; }
  static Fill range(double lo, double hi) { return {Kind::RANGE, lo, hi}; }
  static Fill unit_rows(double norm = 1.0) { return {Kind::UNIT_ROWS, norm}; }
  static Fill distinct(double step) { return {Kind::DISTINCT, step}; }
  static Fill integers(int lo, int hi) { return {Kind::INTEGERS, double(lo), double(hi)}; }
  static Fill mask(double p_inf) { return {Kind::MASK, 0.1, 1.0, p_inf}; }
  static Fill stair_mask(double p_inf) { return {Kind::STAIR_MASK, 0.1, 1.0, p_inf}; }
  static Fill ids(int64_t n) { return {Kind::IDS, 0, 0, 0, n}; }
  static Fill ids_distinct(int64_t n) { return {Kind::IDS_DISTINCT, 0, 0, 0, n}; }
};

// nelements(ne) values in logical order.
std::vector<double> generate(const Fill& f, const std::array<int64_t, kMaxDims>& ne, Rng& rng);
// Contiguous bytes of a tensor of this type and shape holding the values
// (rounded to the type: F16/BF16 round to nearest even, Q8_0 quantizes rows).
std::vector<uint8_t> encode(DType type, const std::array<int64_t, kMaxDims>& ne, const std::vector<double>& vals);

}  // namespace gl::test
