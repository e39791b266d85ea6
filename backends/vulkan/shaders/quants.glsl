// quants.glsl - element decoders of the llama.cpp quant family (ggml-lite/quants/*.h block
// layouts), for shaders that read quantized weights element by element (matmul.comp, rows.comp).
//
//   #define QARR w16            // the binding's 16-bit word view (TENSOR's NAME##16)
//   #include "quants.glsl"
//   float v = quant_at(TYPE_Q4_K, row_word + (k / quant_elems(t)) * quant_words(t), k % quant_elems(t));
//
// Blocks are read as bytes of the word view (every block is a whole number of 16-bit words, and
// rows start on a word), little-endian, and computed as the reference dequantizers compute them
// in float (d * scale first, then times the level, minus the offset). MXFP4 (17-byte blocks) is
// not here: its blocks do not fall on words.

#define TYPE_Q4_0 5u
#define TYPE_Q4_1 6u
#define TYPE_Q5_0 7u
#define TYPE_Q5_1 8u
#define TYPE_Q2_K 9u
#define TYPE_Q3_K 10u
#define TYPE_Q4_K 11u
#define TYPE_Q5_K 12u
#define TYPE_Q6_K 13u
#define TYPE_IQ4_NL 14u
#define TYPE_IQ4_XS 15u

bool is_quant(uint t) { return t >= TYPE_Q8_0; }

uint quant_elems(uint t) { return t >= TYPE_Q2_K && t != TYPE_IQ4_NL ? 256u : 32u; }

// 16-bit words per block.
uint quant_words(uint t) {
  switch (t) {
    case TYPE_Q8_0: return 17u;
    case TYPE_Q4_0: return 9u;
    case TYPE_Q4_1: return 10u;
    case TYPE_Q5_0: return 11u;
    case TYPE_Q5_1: return 12u;
    case TYPE_Q2_K: return 42u;
    case TYPE_Q3_K: return 55u;
    case TYPE_Q4_K: return 72u;
    case TYPE_Q5_K: return 88u;
    case TYPE_Q6_K: return 105u;
    case TYPE_IQ4_NL: return 9u;
    default: return 68u;  // TYPE_IQ4_XS
  }
}

// Byte `off` of the block at word `blk`; the f16 at an even byte offset.
uint qb(uint blk, uint off) {
  uint w = uint(QARR[blk + (off >> 1)]);
  return (off & 1u) == 1u ? w >> 8 : w & 0xffu;
}
float qh16(uint blk, uint off) { return f16_to_f32(uint(QARR[blk + (off >> 1)])); }

// Nibble j (< 32) of 16 bytes of quants at byte qs: bytes' low nibbles are elements 0..15, high 16..31.
uint nibble32(uint blk, uint qs, uint j) { return (qb(blk, qs + (j & 15u)) >> ((j >> 4) * 4u)) & 15u; }

// Bit j (< 32) of the four bytes at byte off.
uint bit32(uint blk, uint off, uint j) { return (qb(blk, off + (j >> 3)) >> (j & 7u)) & 1u; }

float iq4_value(uint q) {
  const int kv[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
  return float(kv[q]);
}

// Q4_K / Q5_K: the 6-bit scale and min of sub-block s (< 8) from the 12 bytes at byte 4.
uvec2 scale_min_k4(uint blk, uint s) {
  if (s < 4u) return uvec2(qb(blk, 4u + s) & 63u, qb(blk, 8u + s) & 63u);
  uint a = qb(blk, 8u + s), lo = qb(blk, s), mid = qb(blk, s + 4u);
  return uvec2((a & 15u) | ((lo >> 6) << 4), (a >> 4) | ((mid >> 6) << 4));
}

// The K-quants (256-element blocks).
float k_quant_at(uint t, uint blk, uint j) {
  uint g = j >> 6, w = j & 63u, hi = w >> 5, l = w & 31u;  // Q4_K / Q5_K: 64-element groups
  if (t == TYPE_Q4_K || t == TYPE_Q5_K) {
    uvec2 sm = scale_min_k4(blk, 2u * g + hi);
    uint qs = t == TYPE_Q4_K ? 16u : 48u;
    uint q = (qb(blk, qs + 32u * g + l) >> (4u * hi)) & 15u;
    if (t == TYPE_Q5_K) q += ((qb(blk, 16u + l) >> (2u * g + hi)) & 1u) << 4;
    float d = qh16(blk, 0u) * float(sm.x), m = qh16(blk, 2u) * float(sm.y);
    return d * float(q) - m;
  }
  uint n = j >> 7, r = j & 127u, quarter = r >> 5;  // 128-element halves of 4 x 32
  l = r & 31u;
  if (t == TYPE_Q6_K) {
    uint lo = (qb(blk, 64u * n + l + 32u * (quarter & 1u)) >> (4u * (quarter >> 1))) & 15u;
    uint h = (qb(blk, 128u + 32u * n + l) >> (2u * quarter)) & 3u;
    int sc = int(qb(blk, 192u + 8u * n + (l >> 4) + 2u * quarter) << 24) >> 24;
    return qh16(blk, 208u) * float(sc) * float(int(lo | (h << 4)) - 32);
  }
  uint q = (qb(blk, (t == TYPE_Q2_K ? 16u : 32u) + 32u * n + l) >> (2u * quarter)) & 3u;
  uint is = 8u * n + 2u * quarter + (l >> 4);
  if (t == TYPE_Q2_K) {
    uint sc = qb(blk, is);
    return qh16(blk, 80u) * float(sc & 15u) * float(q) - qh16(blk, 82u) * float(sc >> 4);
  }
  // Q3_K: hmask bit (4n + quarter) of byte l, scales from the 12 bytes at byte 96.
  uint low = is < 8u ? qb(blk, 96u + is) & 15u : qb(blk, 96u + is - 8u) >> 4;
  uint high = (qb(blk, 104u + (is & 3u)) >> (2u * (is >> 2))) & 3u;
  int sc = int(low | (high << 4)) - 32;
  int level = int(q) - (((qb(blk, l) >> (4u * n + quarter)) & 1u) == 1u ? 0 : 4);
  return qh16(blk, 108u) * float(sc) * float(level);
}

// Element j of the block at word blk of type t (a quantized shader code).
float quant_at(uint t, uint blk, uint j) {
  switch (t) {
    case TYPE_Q8_0: return qh16(blk, 0u) * float(int(qb(blk, 2u + j) << 24) >> 24);
    case TYPE_Q4_0: return qh16(blk, 0u) * float(int(nibble32(blk, 2u, j)) - 8);
    case TYPE_Q4_1: return qh16(blk, 0u) * float(nibble32(blk, 4u, j)) + qh16(blk, 2u);
    case TYPE_Q5_0: return qh16(blk, 0u) * float(int(nibble32(blk, 6u, j) | (bit32(blk, 2u, j) << 4)) - 16);
    case TYPE_Q5_1: return qh16(blk, 0u) * float(nibble32(blk, 8u, j) | (bit32(blk, 4u, j) << 4)) + qh16(blk, 2u);
    case TYPE_IQ4_NL: return qh16(blk, 0u) * iq4_value(nibble32(blk, 2u, j));
    case TYPE_IQ4_XS: {
      uint ib = j >> 5;
      uint ls = ((qb(blk, 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u) | (((qb(blk, 2u + (ib >> 2)) >> (2u * (ib & 3u))) & 3u) << 4);
      return qh16(blk, 0u) * float(int(ls) - 32) * iq4_value(nibble32(blk, 8u + 16u * ib, j & 31u));
    }
    default: return k_quant_at(t, blk, j);
  }
}
