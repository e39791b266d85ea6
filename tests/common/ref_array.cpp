// ref_array.cpp - exact decoding of tensor memory into float64 arrays.
#include "common/ref_array.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ggml-lite/status.h"

namespace gl::test {

double half_to_double(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0x1f) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);  // subnormal: mant * 2^-24
  } else {
    v = std::ldexp(static_cast<double>(1024 + mant), exp - 25);  // (1 + mant/1024) * 2^(exp-15)
  }
  return (h & 0x8000) ? -v : v;
}

double bf16_to_double(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;  // bf16 is the top half of an IEEE binary32
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

double round_to_format(double x, int precision, int emin, double max_finite) {
  if (x == 0.0) return x;
  const double a = std::fabs(x);
  int e2;
  std::frexp(a, &e2);                    // a = f * 2^e2, f in [0.5, 1)
  const int e = std::max(e2 - 1, emin);  // exponent of a's binade (subnormals share emin's)
  const double ulp = std::ldexp(1.0, e - (precision - 1));
  const double r = std::nearbyint(a / ulp) * ulp;  // default rounding mode: nearest, ties to even
  const double out = r > max_finite ? std::numeric_limits<double>::infinity() : r;
  return x < 0 ? -out : out;
}

double round_to_half(double x) { return round_to_format(x, 11, -14, 65504.0); }
double round_to_bf16(double x) { return round_to_format(x, 8, -126, std::ldexp(255.0, 120)); }

double decode_element(const Tensor& t, std::span<const uint8_t> root_bytes, int64_t i0, int64_t i1, int64_t i2,
                      int64_t i3) {
  const DTypeTraits& tr = dtype_traits(t.type);
  const size_t base = (t.view_src ? t.view_offs : 0) + static_cast<size_t>(i1) * t.nb[1] +
                      static_cast<size_t>(i2) * t.nb[2] + static_cast<size_t>(i3) * t.nb[3];
  const size_t off = base + static_cast<size_t>(i0 / tr.block_size) * t.nb[0];
  GL_ASSERT(off + tr.block_bytes <= root_bytes.size(), "decode: element lies outside the root's bytes");
  const uint8_t* p = root_bytes.data() + off;
  switch (t.type) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, sizeof f);
      return static_cast<double>(f);
    }
    case DType::F16:
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p, sizeof h);
      return t.type == DType::F16 ? half_to_double(h) : bf16_to_double(h);
    }
    case DType::I32: {
      int32_t i;
      std::memcpy(&i, p, sizeof i);
      return static_cast<double>(i);
    }
    case DType::Q8_0: {
      uint16_t d;
      std::memcpy(&d, p, sizeof d);  // block: fp16 scale, then 32 int8
      const auto q = static_cast<int8_t>(p[2 + i0 % tr.block_size]);
      return half_to_double(d) * static_cast<double>(q);
    }
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: {
      // The llama.cpp family: the reference dequantizer defines the values (it rounds in float).
      float blk[256];
      tr.to_float(p, blk, tr.block_size);
      return static_cast<double>(blk[i0 % tr.block_size]);
    }
  }
  return 0.0;
}

RefArray decode(const Tensor& t, std::span<const uint8_t> root_bytes) {
  RefArray a(t.ne);
  size_t k = 0;
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) a.v[k++] = decode_element(t, root_bytes, i0, i1, i2, i3);
  return a;
}

}  // namespace gl::test
