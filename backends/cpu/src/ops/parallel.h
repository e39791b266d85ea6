// parallel.h - when a CPU kernel is worth splitting over the backend's threads (team.h).
//
// Handing chunks to a spinning worker costs well under a microsecond; an elementwise row of a
// few thousand floats or a matrix product of a few ten thousand multiply-accumulates takes longer
// than that. Smaller ops run on the calling thread.
#pragma once

#include <cstdint>

namespace gl::cpu {

inline constexpr int64_t kParallelMinElems = int64_t{1} << 14;  // elementwise-like work
inline constexpr int64_t kParallelMinMacs = int64_t{1} << 15;   // multiply-accumulates (mul_mat, GDN)

}  // namespace gl::cpu
