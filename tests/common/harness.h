// harness.h - the op test harness: one case, one backend, checked against float64.
//
//   gl::test::OpCase c{
//       .name = "add_f32_33x31", .op = gl::Op::ADD,
//       .build = [](gl::test::CaseInputs& in) {
//         return gl::add(in.ctx, in.input(gl::DType::F32, {33, 31}), in.input(gl::DType::F32, {33, 1}));
//       },
//       .max_nmse = 1e-12};   // justify every threshold in one line where the case is declared
//   gl::test::CaseReport r = gl::test::run_case(c, *backend);
//
// run_case builds the graph, allocates it with gl::Executor on the backend,
// fills the whole arena with a sentinel byte, writes the inputs, computes, then
// checks: (a) the output against reference_eval() on the actual source data,
// (b) every arena byte outside the planned tensors still holds the sentinel
// (out-of-bounds writes), (c) no NaN/Inf in the output, (d) inputs unchanged
// (outside what a CPY/SET_ROWS output writes), (e) every view on the way to the
// tested node agrees with its op's meaning. It runs twice, with two sentinels
// (kSentinels), so an output that depends on memory the kernels never wrote fails.
#pragma once

#include <algorithm>

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/fill.h"
#include "common/ref_array.h"
#include "ggml-lite/backend.h"
#include "ggml-lite/context.h"

namespace gl::test {

// Arena fill before each run: 0xA5, then 0xFF (NaN as f32, f16 and bf16; -1 as i32).
inline constexpr uint8_t kSentinels[] = {0xA5, 0xFF};

// Handed to OpCase::build: the context to build in and random leaf inputs.
class CaseInputs {
 public:
  CaseInputs(Context& c, Rng& r) : ctx(c), rng_(r) {}
  Context& ctx;

  // A leaf flagged TENSOR_INPUT; its data is drawn from fill now and written by the harness.
  Tensor* input(DType type, std::initializer_list<int64_t> ne, const Fill& fill = Fill::nonzero());
  // Bytes drawn for leaf t (nullptr: t was not made by input()).
  const std::vector<uint8_t>* data_of(const Tensor* t) const;
  // The case's random stream (seeded from its name), for random shapes or parameters.
  Rng& rng() { return rng_; }

 private:
  Rng& rng_;
  std::unordered_map<const Tensor*, std::vector<uint8_t>> data_;
};

// Compares a backend's output with the reference; returns "" on success, else why not.
using CompareFn = std::function<std::string(const RefArray& got, const RefArray& want)>;

struct OpCase {
  std::string name;                           // [A-Za-z0-9_]; becomes part of the test name
  Op op = Op::NONE;                           // the op this case covers (view ops: through a CONT)
  std::function<Tensor*(CaseInputs&)> build;  // returns the node under test
  double max_nmse = 0.0;                      // on the CPU reference; 0 means bit-exact values
  double max_nmse_device = -1.0;              // on other backends; < 0: same as max_nmse
  double max_nmse_fast = -1.0;                // on the CPU under Precision::FAST; < 0: same as max_nmse
  CompareFn compare;                          // replaces the NMSE check when set
  bool allow_nonfinite = false;

  // A device under Precision::FAST rounds the activations of its 16-bit GEMMs once to the weight
  // format (BF16: unit roundoff 2^-9, NMSE <= 2^-18 = 3.8e-6 per product term) and a quantized
  // weight's dequantized values to F16 (2^-12); its tensor-core attention rounds Q and the
  // probabilities to F16 (2^-11 each, NMSE ~1e-7 on the op cases): kDeviceFastNmse bounds all
  // three with margin.
  static constexpr double kDeviceFastNmse = 1e-5;

  // A device under FAST may also take the CPU's FAST rounding (int8 activations: CUDA's K-quant
  // GEMV rows), so its bound is the largest of the three.
  double threshold(std::string_view backend_name, Precision p = Precision::EXACT) const {
    if (backend_name == "cpu" && p == Precision::FAST && max_nmse_fast >= 0.0) return max_nmse_fast;
    const double t = backend_name == "cpu" || max_nmse_device < 0.0 ? max_nmse : max_nmse_device;
    if (backend_name == "cpu" || p != Precision::FAST) return t;
    return std::max({t, kDeviceFastNmse, max_nmse_fast});
  }
};

struct CaseReport {
  bool skipped = false;  // the backend does not support a node of the case
  std::string skip_reason;
  double nmse = 0.0;
  std::vector<std::string> failures;  // empty: passed
};

CaseReport run_case(const OpCase& c, Backend& backend);

// sum((got - want)^2) / sum(want^2) (the plain squared error when want is all zero).
double nmse(const RefArray& got, const RefArray& want);
// Exact element equality, naming the first mismatches (for I32 outputs and copies).
std::string compare_exact(const RefArray& got, const RefArray& want);

}  // namespace gl::test
