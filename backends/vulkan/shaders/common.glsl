// common.glsl - what every shader includes: 16-bit storage, dtype codes and conversions, and the
// binding macro. A tensor binding is declared as aliasing views of the same buffer (f32 words,
// i32 words and 16-bit words); the push constants say which dtype each operand holds.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

#define TYPE_F32 0u
#define TYPE_F16 1u
#define TYPE_BF16 2u
#define TYPE_I32 3u

// IEEE half bits -> float (exact).
float f16_to_f32(uint h) { return unpackHalf2x16(h).x; }

// float -> IEEE half bits, round to nearest even (the CPU reference's rounding), NaN stays NaN.
uint f32_to_f16(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;
  if (ax >= 0x47800000u) return sign | 0x7c00u;
  if (ax < 0x38800000u) return sign | uint(roundEven(uintBitsToFloat(ax) * 16777216.0));
  uint h = (((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3ffu);
  uint rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) h += 1u;
  return sign | h;
}

float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }

// float -> bf16 bits, round to nearest even; NaN quiet (as fp32_to_bf16 in dtype.cpp).
uint f32_to_bf16(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

#define TYPE_Q8_0 4u

// Element j (< 32) of the Q8_0 block at 16-bit word `blk` of array ARR16 (a uint16_t[] view):
// 17 words per block, the f16 scale then 32 int8 (ggml-lite/quants/q8_0.h), little-endian.
#define Q8_0_AT(ARR16, blk, j)                                                                        \
  (f16_to_f32(uint(ARR16[blk])) *                                                                    \
   float(int((((j) & 1u) == 1u ? uint(ARR16[(blk) + 1u + ((j) >> 1)]) >> 8 : uint(ARR16[(blk) + 1u + ((j) >> 1)])) << 24) >> 24))

// Declares binding B as tensor NAME with load_NAME(type, index) and store_NAME(type, index, v);
// index counts elements of the tensor's own dtype.
#define TENSOR(B, NAME)                                                                   \
  layout(binding = B) buffer NAME##_f32 { float NAME##32[]; };                            \
  layout(binding = B) buffer NAME##_i32 { int NAME##i[]; };                               \
  layout(binding = B) buffer NAME##_u16 { uint16_t NAME##16[]; };                         \
  float load_##NAME(uint t, uint i) {                                                     \
    if (t == TYPE_F32) return NAME##32[i];                                                \
    if (t == TYPE_I32) return float(NAME##i[i]);                                          \
    uint h = uint(NAME##16[i]);                                                           \
    return t == TYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);                                \
  }                                                                                       \
  void store_##NAME(uint t, uint i, float v) {                                            \
    if (t == TYPE_F32) NAME##32[i] = v;                                                   \
    else if (t == TYPE_I32) NAME##i[i] = int(v);                                          \
    else NAME##16[i] = uint16_t(t == TYPE_F16 ? f32_to_f16(v) : f32_to_bf16(v));          \
  }

// The linear work-group index of a dispatch split over x and y (Recorder::dispatch).
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Offset of element i with strides nb (both in elements).
uint idot(uvec4 i, uvec4 nb) { return i.x * nb.x + i.y * nb.y + i.z * nb.z + i.w * nb.w; }

// log(1 + u), accurate for small u (the (1 + u) - 1 correction of Goldberg / Kahan).
float log1p_f(float u) {
  float w = 1.0 + u;
  return w == 1.0 ? u : log(w) * u / (w - 1.0);
}

// Element (i0, i1, i2, i3) of index n of a shape ne (dim 0 innermost).
uvec4 unravel(uint n, uvec4 ne) {
  uvec4 i;
  i.x = n % ne.x; n /= ne.x;
  i.y = n % ne.y; n /= ne.y;
  i.z = n % ne.z;
  i.w = n / ne.z;
  return i;
}
