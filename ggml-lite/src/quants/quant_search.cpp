// quant_search.cpp - scale searches shared by the reference quantizers.
#include "quant_search.h"

#include <algorithm>
#include <cmath>

namespace gl::quant {
namespace {

// The element of largest magnitude, with its sign (the scale's sign follows it).
float signed_absmax(int n, const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

float sym_weight(SymWeight weight, const float* qw, const float* x, int i) {
  if (qw) return qw[i];
  return weight == SymWeight::SQUARE ? x[i] * x[i] : 1.0f;
}

}  // namespace

float fit_symmetric(int n, int nmax, const float* x, int8_t* L, SymWeight weight, const float* qw) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < kGroupEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  // One pass of a candidate inverse scale: levels and the weighted sums of the fit.
  auto try_scale = [&](float iscale, float& sumlx, float& suml2, bool store) {
    sumlx = suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(round_even(iscale * x[i]), -nmax, nmax - 1);
      if (store) L[i] = static_cast<int8_t>(l + nmax);
      const float w = sym_weight(weight, qw, x, i);
      sumlx += w * x[i] * to_f(l);
      suml2 += w * to_f(l) * to_f(l);
    }
  };
  float sumlx, suml2;
  try_scale(-to_f(nmax) / max, sumlx, suml2, true);
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(to_f(nmax) + 0.1f * to_f(is)) / max;
    try_scale(iscale, sumlx, suml2, false);
    // Maximising sumlx^2 / suml2 minimises the weighted squared error at the optimal scale.
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      try_scale(iscale, sumlx, suml2, true);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_symmetric_refine(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < kGroupEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = -to_f(nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(round_even(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * to_f(l);
    suml2 += w * to_f(l) * to_f(l);
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      // Refit element i against the scale implied by all the others.
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * to_f(L[i]);
      if (slx <= 0.0f) continue;
      float sl2 = suml2 - w * to_f(L[i]) * to_f(L[i]);
      const int nl = clamp_int(round_even(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (nl == L[i]) continue;
      slx += w * x[i] * to_f(nl);
      sl2 += w * to_f(nl) * to_f(nl);
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(nl);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float& neg_min, AffineSearch search) {
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::fmin(min, x[i]);
    max = std::fmax(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    neg_min = -min;
    return 0.0f;
  }
  auto error_of = [&](float scale, float mn, const uint8_t* q) {
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * to_f(q[i]) + mn - x[i];
      err += w[i] * (search.use_mad ? std::fabs(diff) : diff * diff);
    }
    return err;
  };
  const float iscale0 = to_f(nmax) / (max - min);
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(clamp_int(round_even(iscale0 * (x[i] - min)), 0, nmax));
  float scale = 1.0f / iscale0;
  float best = error_of(scale, min, L);
  if (search.nstep < 1) {
    neg_min = -min;
    return scale;
  }
  uint8_t aux[256];
  for (int is = 0; is <= search.nstep; ++is) {
    const float iscale = (search.rmin + search.rdelta * to_f(is) + to_f(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(round_even(iscale * (x[i] - min)), 0, nmax);
      aux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * to_f(l);
      sum_l2 += w[i] * to_f(l) * to_f(l);
      sum_xl += w[i] * to_f(l) * x[i];
    }
    // Weighted least squares for (scale, min) given these levels; min is clipped to <= 0.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0.0f) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    const float err = error_of(this_scale, this_min, aux);
    if (err < best) {
      for (int i = 0; i < n; ++i) L[i] = aux[i];
      best = err;
      scale = this_scale;
      min = this_min;
    }
  }
  neg_min = -min;
  return scale;
}

namespace {

// Weighted squared error of x ~= scale * min(nmax, round(iscale * x)).
float positive_error(int n, int nmax, const float* x, const float* w, float iscale, float scale) {
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, round_even(iscale * x[i]));
    const float diff = x[i] - scale * to_f(l);
    err += w[i] * diff * diff;
  }
  return err;
}

}  // namespace

float fit_positive(int n, int nmax, const float* x, uint8_t* L, const float* w) {
  float max = 0.0f;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < kGroupEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = to_f(nmax) / max;
  float best = positive_error(n, nmax, x, w, iscale, 1.0f / iscale);
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * to_f(is) + to_f(nmax)) / max;
    const float err = positive_error(n, nmax, x, w, iscale_is, 1.0f / iscale_is);
    if (err < best) {
      best = err;
      iscale = iscale_is;
    }
  }
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, round_even(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    sumlx += w[i] * x[i] * to_f(l);
    suml2 += w[i] * to_f(l) * to_f(l);
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      // Refit element i against the scale implied by all the others.
      float slx = sumlx - w[i] * x[i] * to_f(L[i]);
      float sl2 = suml2 - w[i] * to_f(L[i]) * to_f(L[i]);
      if (!(slx > 0.0f && sl2 > 0.0f)) continue;
      const int nl = std::min(nmax, round_even(x[i] * sl2 / slx));
      if (nl == L[i]) continue;
      slx += w[i] * x[i] * to_f(nl);
      sl2 += w[i] * to_f(nl) * to_f(nl);
      if (slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<uint8_t>(nl);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

int nearest_level(const int8_t* levels, float v) {
  if (v <= to_f(levels[0])) return 0;
  if (v >= to_f(levels[15])) return 15;
  int hi = 1;
  while (!(v < to_f(levels[hi]))) ++hi;
  return v - to_f(levels[hi - 1]) < to_f(levels[hi]) - v ? hi - 1 : hi;
}

void pack_scale_min_k4(int j, int ls, int lm, uint8_t* scales) {
  if (j < 4) {
    scales[j] = static_cast<uint8_t>(scales[j] | ls);
    scales[j + 4] = static_cast<uint8_t>(scales[j + 4] | lm);
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls >> 4) << 6));
    scales[j] = static_cast<uint8_t>(scales[j] | ((lm >> 4) << 6));
  }
}

void unpack_scale_min_k4(int j, const uint8_t* scales, int& ls, int& lm) {
  if (j < 4) {
    ls = scales[j] & 63;
    lm = scales[j + 4] & 63;
  } else {
    ls = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    lm = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

}  // namespace gl::quant
