// reference_nn.cpp - reference for the matrix products, attention pieces and the Gated DeltaNet ops.
#include <cmath>
#include <limits>
#include <vector>

#include "common/reference_ops.h"
#include "ggml-lite/status.h"

namespace gl::test::ref {

// out[n, m, b2, b3] = sum_k w[k, n, b2 / (B2 / W2), b3 / (B3 / W3)] * x[k, m, b2, b3]
// (consecutive x batches share a w batch, as in grouped-query attention).
RefArray mul_mat(const Tensor& node, Srcs s) {
  const RefArray& w = s[0];
  const RefArray& x = s[1];
  const int64_t r2 = x.ne[2] / w.ne[2];
  const int64_t r3 = x.ne[3] / w.ne[3];
  RefArray out(node.ne);
  for_each_index(node.ne, [&](int64_t n, int64_t m, int64_t b2, int64_t b3) {
    double sum = 0.0;
    for (int64_t k = 0; k < x.ne[0]; ++k) sum += w.at(k, n, b2 / r2, b3 / r3) * x.at(k, m, b2, b3);
    out.at(n, m, b2, b3) = sum;
  });
  return out;
}

// out[n, u, t] = sum_k experts[k, n, ids[u, t]] * x[k, u % X1, t]
RefArray mul_mat_id(const Tensor& node, Srcs s) {
  const RefArray& e = s[0];
  const RefArray& x = s[1];
  const RefArray& ids = s[2];
  RefArray out(node.ne);
  for_each_index(node.ne, [&](int64_t n, int64_t u, int64_t t, int64_t) {
    const double id = ids.at(u, t);
    const auto ex = static_cast<int64_t>(id);
    GL_ASSERT(static_cast<double>(ex) == id && ex >= 0 && ex < e.ne[2], "ref::mul_mat_id: expert id out of range");
    double sum = 0.0;
    for (int64_t k = 0; k < x.ne[0]; ++k) sum += e.at(k, n, ex) * x.at(k, u % x.ne[1], t);
    out.at(n, u, t) = sum;
  });
  return out;
}

// Row i of [n_kv, n_q, H, B]: softmax_j(x * scale + mask[j, i]), with -inf
// where causal and j > i + n_kv - n_q.
RefArray softmax(const Tensor& node, Srcs s) {
  const SoftmaxParams& p = node.p<SoftmaxParams>();
  const RefArray& x = s[0];
  const RefArray* mask = s.size() > 1 ? &s[1] : nullptr;
  const int64_t n_kv = x.ne[0], n_q = x.ne[1];
  RefArray out(node.ne);
  std::vector<double> z(static_cast<size_t>(n_kv));
  for (int64_t b = 0; b < x.ne[3]; ++b)
    for (int64_t h = 0; h < x.ne[2]; ++h)
      for (int64_t i = 0; i < n_q; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n_kv; ++j) {
          double v = x.at(j, i, h, b) * static_cast<double>(p.scale) + (mask ? mask->at(j, i) : 0.0);
          if (p.causal && j > i + n_kv - n_q) v = -std::numeric_limits<double>::infinity();
          z[static_cast<size_t>(j)] = v;
          mx = std::max(mx, v);
        }
        GL_ASSERT(std::isfinite(mx), "ref::softmax: a row with every entry masked is outside the contract");
        double sum = 0.0;
        for (double& v : z) sum += (v = std::exp(v - mx));
        for (int64_t j = 0; j < n_kv; ++j) out.at(j, i, h, b) = z[static_cast<size_t>(j)] / sum;
      }
  return out;
}

// q [Dk, H, T], k [Dk, Hkv, N], v [Dv, Hkv, N], mask [N, T]: for query head h (kv head
// h / (H / Hkv)) and token t, softmax_j(scale q.k_j + mask[j, t]) over the unmasked keys (causal:
// j <= t + N - T) weighs the v rows; no unmasked key gives zeros.
RefArray flash_attn(const Tensor& node, Srcs s) {
  const SoftmaxParams& p = node.p<SoftmaxParams>();
  const RefArray &q = s[0], &k = s[1], &v = s[2];
  const RefArray* mask = s.size() > 3 ? &s[3] : nullptr;
  const int64_t dk = q.ne[0], n_head = q.ne[1], n_q = q.ne[2], n_kv = k.ne[2], dv = v.ne[0];
  const int64_t group = n_head / k.ne[1];
  RefArray out(node.ne);
  std::vector<double> z(static_cast<size_t>(n_kv));
  for (int64_t t = 0; t < n_q; ++t)
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t kv = h / group;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n_kv; ++j) {
        double dot = 0.0;
        for (int64_t i = 0; i < dk; ++i) dot += q.at(i, h, t) * k.at(i, kv, j);
        double x = dot * static_cast<double>(p.scale) + (mask ? mask->at(j, t) : 0.0);
        if (p.causal && j > t + n_kv - n_q) x = -std::numeric_limits<double>::infinity();
        z[static_cast<size_t>(j)] = x;
        mx = std::max(mx, x);
      }
      if (!std::isfinite(mx)) continue;  // every key masked: zeros
      double sum = 0.0;
      for (double& x : z) sum += (x = std::exp(x - mx));
      for (int64_t i = 0; i < dv; ++i) {
        double o = 0.0;
        for (int64_t j = 0; j < n_kv; ++j) o += z[static_cast<size_t>(j)] * v.at(i, kv, j);
        out.at(i, h, t) = o / sum;
      }
    }
  return out;
}

// x [D, H, T], pos [T]: pair p of the first n_dims rotates by
// theta = pos * freq_scale * base^(-2p / n_dims); NORMAL pairs (2p, 2p+1),
// NEOX pairs (p, p + n_dims/2); dims from n_dims on pass through.
RefArray rope(const Tensor& node, Srcs s) {
  const RopeParams& p = node.p<RopeParams>();
  const RefArray& x = s[0];
  const RefArray& pos = s[1];
  RefArray out = x;
  out.ne = node.ne;
  const int64_t half = p.n_dims / 2;
  for (int64_t t = 0; t < x.ne[2]; ++t)
    for (int64_t h = 0; h < x.ne[1]; ++h)
      for (int64_t q = 0; q < half; ++q) {
        const double freq =
            std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(q) / static_cast<double>(p.n_dims));
        const double theta = pos.v[static_cast<size_t>(t)] * static_cast<double>(p.freq_scale) * freq;
        const int64_t a = p.mode == RopeMode::NORMAL ? 2 * q : q;
        const int64_t b = p.mode == RopeMode::NORMAL ? 2 * q + 1 : q + half;
        const double x0 = x.at(a, h, t), x1 = x.at(b, h, t);
        out.at(a, h, t) = x0 * std::cos(theta) - x1 * std::sin(theta);
        out.at(b, h, t) = x0 * std::sin(theta) + x1 * std::cos(theta);
      }
  return out;
}

// xs [C, Kc-1+T], w [Kc, C]: out[c, t] = sum_j w[j, c] * xs[c, t + j]
RefArray ssm_conv(const Tensor& node, Srcs s) {
  const RefArray& xs = s[0];
  const RefArray& w = s[1];
  RefArray out(node.ne);
  for (int64_t t = 0; t < node.ne[1]; ++t)
    for (int64_t c = 0; c < node.ne[0]; ++c) {
      double sum = 0.0;
      for (int64_t j = 0; j < w.ne[0]; ++j) sum += w.at(j, c) * xs.at(c, t + j);
      out.at(c, t) = sum;
    }
  return out;
}

namespace {

// One token of the gated delta rule on S[ik][iv] (state of value head j):
// S = exp(g) S; u = S^T k; S += k (beta (v - u))^T; o = S^T q.
void delta_rule_step(std::vector<double>& st, int64_t dk, int64_t dv, const double* q, const double* k, const double* v,
                     double g, double beta, double* o) {
  const double decay = std::exp(g);
  for (double& e : st) e *= decay;
  std::vector<double> delta(static_cast<size_t>(dv));
  for (int64_t iv = 0; iv < dv; ++iv) {
    double u = 0.0;
    for (int64_t ik = 0; ik < dk; ++ik) u += st[static_cast<size_t>(ik * dv + iv)] * k[ik];
    delta[static_cast<size_t>(iv)] = beta * (v[iv] - u);
  }
  for (int64_t ik = 0; ik < dk; ++ik)
    for (int64_t iv = 0; iv < dv; ++iv) st[static_cast<size_t>(ik * dv + iv)] += k[ik] * delta[static_cast<size_t>(iv)];
  for (int64_t iv = 0; iv < dv; ++iv) {
    double acc = 0.0;
    for (int64_t ik = 0; ik < dk; ++ik) acc += st[static_cast<size_t>(ik * dv + iv)] * q[ik];
    o[iv] = acc;
  }
}

}  // namespace

// Flat result: o [Dv, Hv, T], then states [Dv, Dk, Hv, n_states] after each of
// the last n_states tokens. Value head j reads key head j % Hk.
RefArray gated_delta_rule(const Tensor& node, Srcs s) {
  const RefArray &q = s[0], &k = s[1], &v = s[2], &g = s[3], &beta = s[4], &state = s[5];
  const int64_t dk = q.ne[0], hk = q.ne[1], t_len = q.ne[2], dv = v.ne[0], hv = v.ne[1];
  const int64_t n_states = node.p<GdrParams>().n_states;
  const int64_t n_out = dv * hv * t_len, n_state = dv * dk * hv;
  RefArray out(node.ne);
  GL_ASSERT(out.size() == n_out + n_state * n_states, "ref::gated_delta_rule: unexpected result size");
  std::vector<double> st(static_cast<size_t>(dk * dv));  // st[ik * dv + iv] = S[ik][iv]
  for (int64_t j = 0; j < hv; ++j) {
    for (int64_t ik = 0; ik < dk; ++ik)
      for (int64_t iv = 0; iv < dv; ++iv) st[static_cast<size_t>(ik * dv + iv)] = state.at(iv, ik, j);
    for (int64_t t = 0; t < t_len; ++t) {
      const int64_t kh = j % hk;
      delta_rule_step(st, dk, dv, &q.v[q.index(0, kh, t)], &k.v[k.index(0, kh, t)], &v.v[v.index(0, j, t)],
                      g.v[static_cast<size_t>(j + hv * t)], beta.v[static_cast<size_t>(j + hv * t)],
                      &out.v[static_cast<size_t>(dv * (j + hv * t))]);
      const int64_t slot = t - (t_len - n_states);
      if (slot < 0) continue;
      for (int64_t ik = 0; ik < dk; ++ik)
        for (int64_t iv = 0; iv < dv; ++iv)
          out.v[static_cast<size_t>(n_out + iv + dv * (ik + dk * (j + hv * slot)))] =
              st[static_cast<size_t>(ik * dv + iv)];
    }
  }
  return out;
}

}  // namespace gl::test::ref
