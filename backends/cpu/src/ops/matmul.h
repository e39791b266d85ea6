// matmul.h - internals of the CPU matrix products, shared by matmul.cpp and the tests.
//
//   gl::cpu::DotTileShape s = gl::cpu::dot_tile_shape();  // weight rows x activation rows per tile
//
// The entries (kernels.h) pick their per-type dot products and row conversions from
// dtype_kernels.h. The *_reference functions are plain
// double-accumulating loops used to test the entries.
#pragma once

#include <cstdint>

#include "ggml-lite/tensor.h"

namespace gl::cpu {

// Plain loops over ne/nb with double accumulation (test oracles, slow).
void mul_mat_reference(Tensor& dst);
void mul_mat_id_reference(Tensor& dst);

// The register tile of the dot products (dtype_kernels.h): weight rows x activation rows computed together. Row
// counts that are multiples of these waste no work.
struct DotTileShape {
  int w_rows, x_rows;
};
DotTileShape dot_tile_shape();
// The tile of products whose weight rows were converted to F32 first (blocks of more than
// dot_tile_shape().x_rows activation rows): weight tiles are best a multiple of its w_rows.
DotTileShape slab_tile_shape();

}  // namespace gl::cpu
