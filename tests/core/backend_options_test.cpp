// backend_options_test.cpp - the typed run options of the Backend interface (precision) and the
// diagnostic environment switches, which read only their one "on" value.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "ggml-lite/backend.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/diag.h"

namespace gl {
namespace {

TEST(Precision, NamesRoundTrip) {
  for (Precision p : {Precision::EXACT, Precision::FAST}) EXPECT_EQ(precision_from_name(precision_name(p)), p);
  EXPECT_EQ(precision_name(Precision::EXACT), "exact");
  EXPECT_EQ(precision_name(Precision::FAST), "fast");
  EXPECT_FALSE(precision_from_name("Fast").has_value());
}

// The CPU starts exact and takes FAST (int8 activations for quantized weights) when asked.
TEST(Precision, CpuHonoursFast) {
  auto cpu = cpu::make_backend({.n_threads = 1});
  EXPECT_EQ(cpu->precision(), Precision::EXACT);
  cpu->set_precision(Precision::FAST);
  EXPECT_EQ(cpu->precision(), Precision::FAST);
  cpu->set_precision(Precision::EXACT);
  EXPECT_EQ(cpu->precision(), Precision::EXACT);
}

TEST(DiagEnv, OnlyTheOnValueTurnsASwitchOn) {
  const Diag d = Diag::CUDA_TIMING;
  ASSERT_EQ(diag_env_name(d), "GL_CUDA_TIMING");
  setenv("GL_CUDA_TIMING", "1", 1);
  EXPECT_TRUE(diag_env(d));
  setenv("GL_CUDA_TIMING", "yes", 1);
  EXPECT_FALSE(diag_env(d));
  unsetenv("GL_CUDA_TIMING");
  EXPECT_FALSE(diag_env(d));
  EXPECT_EQ(diag_env_name(Diag::CUDA_GRAPHS_OFF), "GL_CUDA_GRAPHS");
}

}  // namespace
}  // namespace gl
