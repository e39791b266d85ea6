// gemm_fetch.glsl - what gemm.comp and gemm_coop.comp share: the product push constants (as
// gemv.comp's) and the read of one k slab of both operands into registers. The includer defines
// kTileN, kTileK, kThreads and kLoads (= kTileN * kTileK / kThreads; the x tile has as many rows).

TENSOR(0, w)
TENSOR(1, x)
TENSOR(2, d)

layout(push_constant) uniform Push {
  uvec4 x_nb;  // elements
  uvec4 d_nb;
  uvec4 w_nb;  // elements, or 16-bit words for Q8_0 (w_nb.x unused)
  uint K, N, M, B2;
  uint r2, r3;  // x batches per weight batch
  uint w_off, x_off, d_off;
  uint types;  // w | x << 4 | d << 8
  uint x_vec;  // gemv.comp's (one push layout for the product shaders)
  uint n_groups;
} pc;

float weight(uint tw, uint base, uint k) {
  if (tw != TYPE_Q8_0) return load_w(tw, base + k * pc.w_nb.x);
  return Q8_0_AT(w16, base + (k >> 5) * 17u, k & 31u);
}

// Element i of this invocation's share of the slab at k0 (element e = invocation + i * kThreads is
// row e / kTileK, k0 + e % kTileK: a warp reads kTileK consecutive k of a row). Zero past the end
// of K, N or M.
void fetch(uint tw, uint tx, uint wrow0, uint xrow0, uint n0, uint m0, uint k0, out float wv[kLoads],
           out float xv[kLoads]) {
  for (uint i = 0u; i < kLoads; ++i) {
    uint e = gl_LocalInvocationID.x + i * kThreads, row = e / kTileK, k = k0 + e % kTileK;
    bool kin = k < pc.K;
    wv[i] = kin && n0 + row < pc.N ? weight(tw, wrow0 + row * pc.w_nb.y, k) : 0.0;
    xv[i] = kin && m0 + row < pc.M ? load_x(tx, xrow0 + row * pc.x_nb.y + k * pc.x_nb.x) : 0.0;
  }
}
