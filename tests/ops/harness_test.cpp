// harness_test.cpp - the harness itself catches what it claims to: a backend that
// writes past its output, corrupts an input, or gets one element wrong must fail.
#include <gtest/gtest.h>

#include <cstring>

#include "common/backends.h"
#include "ops/cases.h"

namespace gl::test {
namespace {

enum class Fault { NONE, WRITE_PAST_OUTPUT, WRITE_INPUT, PERTURB_ONE_ELEMENT, FLIP_LOW_BIT, READ_UNWRITTEN };

// The CPU backend plus one deliberate fault after each compute (host memory only).
class FaultyBackend final : public Backend {
 public:
  explicit FaultyBackend(Fault f) : inner_(make_test_backend("cpu")), fault_(f) {}
  std::string_view name() const override { return "faulty-cpu"; }
  bool is_host() const override { return true; }
  size_t alignment() const override { return inner_->alignment(); }
  std::unique_ptr<Buffer> alloc_buffer(size_t bytes, BufferUsage u) override { return inner_->alloc_buffer(bytes, u); }
  bool supports(const Tensor& node) const override { return inner_->supports(node); }
  void set_tensor(Tensor& t, const void* src, size_t off, size_t n) override { inner_->set_tensor(t, src, off, n); }
  void get_tensor(const Tensor& t, void* dst, size_t off, size_t n) override { inner_->get_tensor(t, dst, off, n); }
  Status synchronize() override { return inner_->synchronize(); }

  Status compute(std::span<Tensor* const> nodes) override {
    GL_TRY(inner_->compute(nodes));
    Tensor& out = *nodes.back();
    auto* bytes = static_cast<uint8_t*>(out.data);
    switch (fault_) {
      case Fault::NONE: break;
      case Fault::WRITE_PAST_OUTPUT: bytes[nbytes(out)] = 0; break;
      case Fault::WRITE_INPUT: static_cast<uint8_t*>(out.src[0]->data)[0] ^= 1; break;
      case Fault::PERTURB_ONE_ELEMENT: reinterpret_cast<float*>(bytes)[17] += 0.5f; break;
      case Fault::FLIP_LOW_BIT: bytes[4 * 17] ^= 1; break;
      case Fault::READ_UNWRITTEN: {  // adds the float in the output's alignment padding, which nobody wrote
        float pad;
        std::memcpy(&pad, bytes + nbytes(out), sizeof pad);
        reinterpret_cast<float*>(bytes)[17] += pad;
        break;
      }
    }
    return {};
  }

 private:
  std::unique_ptr<Backend> inner_;
  Fault fault_;
};

// 33 x 31 f32 = 4092 bytes: the output's block has 4 bytes of alignment padding.
OpCase add_case() {
  return {.name = "harness_add",
          .op = Op::ADD,
          .build =
              [](CaseInputs& in) {
                return add(in.ctx, in.input(DType::F32, {33, 31}), in.input(DType::F32, {33, 31}));
              },
          .max_nmse = kNmseF32};
}

OpCase gather_case() {
  return {.name = "harness_get_rows",
          .op = Op::GET_ROWS,
          .build =
              [](CaseInputs& in) {
                return get_rows(in.ctx, in.input(DType::F32, {33, 9}), in.input(DType::I32, {5}, Fill::ids(9)));
              },
          .max_nmse = kExact};
}

std::string run_with(Fault f, const OpCase& c) {
  FaultyBackend be(f);
  const CaseReport r = run_case(c, be);
  std::string all;
  for (const std::string& s : r.failures) all += s + "\n";
  return all;
}

TEST(Harness, PassesACorrectBackend) {
  EXPECT_EQ(run_with(Fault::NONE, add_case()), "");
  EXPECT_EQ(run_with(Fault::NONE, gather_case()), "");
}

TEST(Harness, CatchesAWritePastTheOutput) {
  EXPECT_NE(run_with(Fault::WRITE_PAST_OUTPUT, add_case()).find("guard bytes"), std::string::npos);
}

TEST(Harness, CatchesAWriteIntoAnInput) {
  EXPECT_NE(run_with(Fault::WRITE_INPUT, add_case()).find("changed at byte"), std::string::npos);
}

TEST(Harness, CatchesOneWrongElement) {
  EXPECT_NE(run_with(Fault::PERTURB_ONE_ELEMENT, add_case()).find("nmse"), std::string::npos);
}

// Tiny under the 0xA5 sentinel (-2.9e-16 as f32), NaN under the second one.
TEST(Harness, CatchesAReadOfUnwrittenMemory) {
  const std::string why = run_with(Fault::READ_UNWRITTEN, add_case());
  EXPECT_NE(why.find("sentinel 0xff] output is"), std::string::npos) << why;
}

TEST(Harness, ExactCasesCatchOneUlp) {
  EXPECT_NE(run_with(Fault::FLIP_LOW_BIT, gather_case()).find("expected exact values"), std::string::npos);
}

}  // namespace
}  // namespace gl::test
