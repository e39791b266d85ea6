// parallel.h - when a CPU kernel is worth an OpenMP team.
//
// Starting a team and its barriers costs microseconds, and far more when another process holds
// a core (threads spin waiting for a peer that is not running). Small ops run on one thread.
#pragma once

#include <cstdint>

namespace gl::cpu {

inline constexpr int64_t kParallelMinElems = int64_t{1} << 14;  // elementwise-like work
inline constexpr int64_t kParallelMinMacs = int64_t{1} << 18;   // multiply-accumulates (mul_mat, GDN)

}  // namespace gl::cpu
