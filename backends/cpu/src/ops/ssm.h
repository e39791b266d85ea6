// ssm.h - internals of the CPU Gated DeltaNet kernels (ssm.cpp).
//
//   gl::cpu::GdrProblem p(dst);              // dst: a GATED_DELTA_RULE node with data
//   std::vector<float> s(p.dk * p.dv);
//   p.load_state(j, s.data());               // S_j as [Dk][Dv]: s[ik * Dv + iv]
//
// gated_delta_rule (kernels.h) runs the token recurrence for every call.
#pragma once

#include <cstdint>

#include "ggml-lite/tensor.h"

namespace gl::cpu {

// Shapes of a GATED_DELTA_RULE node and strided access to its per-head inputs.
struct GdrProblem {
  explicit GdrProblem(Tensor& dst);

  const Tensor* q;
  const Tensor* k;
  const Tensor* v;
  const Tensor* g;
  const Tensor* beta;
  const Tensor* state;
  int64_t dk, hk, dv, hv, n_tokens, n_states;
  float* out;  // dst data: o [Dv, Hv, T], then n_states states [Dv, Dk, Hv]

  float* o_row(int64_t j, int64_t t) const { return out + (t * hv + j) * dv; }
  // Snapshot s (0 .. n_states-1) of head j, [Dk][Dv].
  float* state_out(int64_t s, int64_t j) const { return out + dv * hv * n_tokens + (s * hv + j) * dk * dv; }
  // Input state of value head j as [Dk][Dv].
  void load_state(int64_t j, float* s) const;
  // g and beta of head j for tokens t0 .. t0+n-1.
  void load_gates(int64_t j, int64_t t0, int64_t n, float* g_out, float* beta_out) const;
  // q, k (key head j % Hk) and v (value head j) of token t.
  void load_qkv(int64_t j, int64_t t, float* q_out, float* k_out, float* v_out) const;
};

void gated_delta_rule_recurrent(Tensor& dst);

}  // namespace gl::cpu
