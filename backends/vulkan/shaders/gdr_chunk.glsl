// gdr_chunk.glsl - the workspace layout gdr_prep.comp writes and gdr_scan.comp reads (ops/ssm.cpp
// sizes it): per (value head j, chunk c), hc = j * n_chunks + c, one block of gdr_block() floats:
//   W^T [Dk][kC], (diag(P) Q)^T [Dk][kC], diag(D[last]) K [kC][Dk], M^T [kC][kC], U [kC][Dv], P_last.
#define kC 64u  // tokens per chunk

uint gdr_block(uint dk, uint dv) { return 3u * dk * kC + kC * kC + kC * dv + 4u; }
uint gdr_wt(uint off, uint hc, uint dk, uint dv) { return off + hc * gdr_block(dk, dv); }
uint gdr_qt(uint off, uint hc, uint dk, uint dv) { return gdr_wt(off, hc, dk, dv) + dk * kC; }
uint gdr_kd(uint off, uint hc, uint dk, uint dv) { return gdr_wt(off, hc, dk, dv) + 2u * dk * kC; }
uint gdr_mt(uint off, uint hc, uint dk, uint dv) { return gdr_wt(off, hc, dk, dv) + 3u * dk * kC; }
uint gdr_u(uint off, uint hc, uint dk, uint dv) { return gdr_mt(off, hc, dk, dv) + kC * kC; }
uint gdr_plast(uint off, uint hc, uint dk, uint dv) { return gdr_u(off, hc, dk, dv) + kC * dv; }
