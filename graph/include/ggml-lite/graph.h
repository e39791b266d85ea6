// graph.h - a computation graph built from requested outputs.
//
//   gl::Graph g = gl::Graph::build({logits, h_pre_norm});
//   if (auto s = g.verify(); !s) fmt::print("{}\n", s.error());
//   for (gl::Tensor* n : g.nodes()) ...   // topological order
//
// build() walks sources depth-first; tensors with op NONE become leafs
// (weights, inputs, caches), everything else a node. The requested outputs are
// flagged TENSOR_OUTPUT.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "ggml-lite/status.h"
#include "ggml-lite/tensor.h"

namespace gl {

class Graph {
 public:
  static Graph build(std::span<Tensor* const> outputs);
  static Graph build(std::initializer_list<Tensor*> outputs) {
    return build(std::span<Tensor* const>(outputs.begin(), outputs.size()));
  }

  const std::vector<Tensor*>& nodes() const { return nodes_; }
  const std::vector<Tensor*>& leafs() const { return leafs_; }
  const std::vector<Tensor*>& outputs() const { return outputs_; }
  // Number of nodes that read t as a source (0 for unknown tensors).
  int n_consumers(const Tensor* t) const;

  // Checks every node: arity, source order, view bounds, data-less leafs that
  // are not inputs. Returns the first problem, naming the node and the op.
  Status verify() const;
  // Hash of ops, params, shapes, dtypes, strides, flags, view offsets, wiring
  // (by graph position) and whether leafs hold data of their own; never names
  // or pointers, so equal graphs from the same builder code in different
  // Contexts have equal fingerprints. Computed on the first call and kept: a graph's
  // structure is fixed once built (executors call this every step).
  uint64_t fingerprint() const;
  // Unique per build() (copies share it: they hold the same tensors). Plan caches use it to skip
  // re-pointing a cached plan at the graph it already points at.
  uint64_t id() const { return id_; }

 private:
  std::vector<Tensor*> nodes_;
  std::vector<Tensor*> leafs_;
  std::vector<Tensor*> outputs_;
  std::vector<std::pair<const Tensor*, int>> consumers_;  // sorted by pointer
  uint64_t id_ = 0;
  mutable uint64_t fingerprint_ = 0;
  mutable bool has_fingerprint_ = false;
};

}  // namespace gl
