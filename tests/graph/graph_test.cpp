// graph_test.cpp - Graph::build order and counts, verify() errors, fingerprints.
#include <gtest/gtest.h>

#include <algorithm>

#include "ggml-lite/context.h"
#include "ggml-lite/graph.h"

namespace gl {
namespace {

Tensor* input(Context& ctx, std::initializer_list<int64_t> ne, const char* name) {
  Tensor* t = ctx.new_tensor(DType::F32, ne, name);
  t->flags |= TENSOR_INPUT;
  return t;
}

int index_in(const std::vector<Tensor*>& v, const Tensor* t) {
  auto it = std::find(v.begin(), v.end(), t);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

TEST(GraphBuild, TopologicalOrderLeafsAndConsumers) {
  Context ctx;
  Tensor* x = input(ctx, {64, 8}, "x");
  Tensor* w = ctx.new_tensor(DType::F32, {64}, "w");
  Tensor* n = rms_norm(ctx, x, 1e-6f);
  Tensor* y = mul(ctx, n, w);
  Tensor* out = add(ctx, y, x);
  Graph g = Graph::build({out});

  ASSERT_EQ(g.leafs().size(), 2u);
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(index_in(g.leafs(), x), 0);
  EXPECT_EQ(index_in(g.leafs(), w), 1);
  EXPECT_LT(index_in(g.nodes(), n), index_in(g.nodes(), y));
  EXPECT_LT(index_in(g.nodes(), y), index_in(g.nodes(), out));
  EXPECT_TRUE(out->has_flag(TENSOR_OUTPUT));
  EXPECT_FALSE(y->has_flag(TENSOR_OUTPUT));
  EXPECT_EQ(g.outputs(), std::vector<Tensor*>{out});
  EXPECT_EQ(g.n_consumers(x), 2);
  EXPECT_EQ(g.n_consumers(n), 1);
  EXPECT_EQ(g.n_consumers(out), 0);
  EXPECT_EQ(g.n_consumers(nullptr), 0);
}

TEST(GraphBuild, SameSourceTwiceIsOneConsumer) {
  Context ctx;
  Tensor* x = input(ctx, {16}, "x");
  Graph g = Graph::build({mul(ctx, x, x)});
  EXPECT_EQ(g.n_consumers(x), 1);
}

TEST(GraphBuild, ViewOpsAreNodesAndRootsAreVisited) {
  Context ctx;
  Tensor* x = input(ctx, {64, 8}, "x");
  Tensor* s = silu(ctx, x);
  Tensor* v = view_1d(ctx, s, 64, 64 * sizeof(float));
  Tensor* out = exp(ctx, v);
  Graph g = Graph::build({out});
  EXPECT_EQ(g.nodes().size(), 3u);
  EXPECT_GE(index_in(g.nodes(), v), 0);
  EXPECT_LT(index_in(g.nodes(), s), index_in(g.nodes(), v));
  EXPECT_TRUE(g.verify().ok()) << g.verify().error();
}

TEST(GraphBuild, SharedSubgraphVisitedOnce) {
  Context ctx;
  Tensor* x = input(ctx, {32}, "x");
  Tensor* a = silu(ctx, x);
  Tensor* b = exp(ctx, a);
  Tensor* c = sigmoid(ctx, a);
  Graph g = Graph::build({b, c, b});
  EXPECT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.n_consumers(a), 2);
}

TEST(GraphVerify, AcceptsBuiltGraph) {
  Context ctx;
  Tensor* x = input(ctx, {64, 8}, "x");
  Graph g = Graph::build({scale(ctx, silu(ctx, x), 2.0f)});
  Status s = g.verify();
  EXPECT_TRUE(s.ok()) << s.error();
}

TEST(GraphVerify, BadArityBuiltByHand) {
  Context ctx;
  Tensor* x = input(ctx, {16}, "x");
  Tensor* bad = ctx.new_tensor(DType::F32, {16}, "bad_add");
  bad->op = Op::ADD;
  bad->src[0] = x;  // add needs two sources
  Status s = Graph::build({bad}).verify();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("bad_add"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("add"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("1 sources"), std::string::npos) << s.error();
}

TEST(GraphVerify, ViewOutOfRange) {
  Context ctx;
  Tensor* x = input(ctx, {16}, "x");
  Tensor* v = view_1d(ctx, x, 8, 0);
  v->view_offs = 12 * sizeof(float);  // [12, 20) of a 16-element root
  set_name(v, "too_far");
  Status s = Graph::build({exp(ctx, v)}).verify();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("too_far"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("outside"), std::string::npos) << s.error();
}

TEST(GraphVerify, LeafWithoutDataNotInput) {
  Context ctx;
  Tensor* x = input(ctx, {16}, "x");
  Tensor* w = ctx.new_tensor(DType::F32, {16}, "w");
  Status s = Graph::build({add(ctx, x, w)}).verify();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "leaf 'w' has no data and is not an input");

  float data[16] = {};
  w->data = data;
  EXPECT_TRUE(Graph::build({add(ctx, x, w)}).verify().ok());
}

TEST(GraphVerify, SourceAfterNode) {
  Context ctx;
  Tensor* x = input(ctx, {16}, "x");
  Tensor* a = silu(ctx, x);
  Tensor* b = exp(ctx, a);
  Graph g = Graph::build({b});
  b->src[0] = sigmoid(ctx, x);  // rewired after build: not in the graph
  Status s = g.verify();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("does not appear before"), std::string::npos) << s.error();
}

// The same builder code, run in two contexts.
Graph build_block(Context& ctx, int64_t n) {
  Tensor* x = input(ctx, {64, n}, "x");
  Tensor* pos = ctx.new_tensor(DType::I32, {n}, "pos");
  pos->flags |= TENSOR_INPUT;
  Tensor* r = rope(ctx, reshape(ctx, x, {16, 4, n}), pos, 16, 10000.0f, RopeMode::NEOX);
  Tensor* y = mul(ctx, rms_norm(ctx, reshape(ctx, r, {64, n}), 1e-5f), x);
  return Graph::build({scale(ctx, y, 0.5f)});
}

TEST(GraphFingerprint, EqualAcrossContexts) {
  Context c1, c2;
  Graph g1 = build_block(c1, 8);
  Graph g2 = build_block(c2, 8);
  EXPECT_EQ(g1.fingerprint(), g2.fingerprint());
  EXPECT_EQ(g1.fingerprint(), g1.fingerprint());
}

TEST(GraphFingerprint, DiffersOnShapeParamsAndWiring) {
  Context c1, c2, c3, c4;
  uint64_t base = build_block(c1, 8).fingerprint();
  EXPECT_NE(base, build_block(c2, 9).fingerprint());

  Tensor* x = input(c3, {64, 8}, "x");
  Tensor* y = input(c4, {64, 8}, "x");
  EXPECT_NE(Graph::build({scale(c3, x, 0.5f)}).fingerprint(), Graph::build({scale(c4, y, 0.25f)}).fingerprint());

  // Same ops and shapes, different wiring.
  Context c5, c6;
  Tensor* a5 = input(c5, {8}, "a");
  Tensor* b5 = input(c5, {8}, "b");
  Tensor* a6 = input(c6, {8}, "a");
  Tensor* b6 = input(c6, {8}, "b");
  EXPECT_NE(Graph::build({sub(c5, a5, silu(c5, b5))}).fingerprint(),
            Graph::build({sub(c6, silu(c6, a6), b6)}).fingerprint());
}

TEST(GraphFingerprint, IgnoresNames) {
  Context c1, c2;
  Tensor* x1 = input(c1, {8}, "x");
  Tensor* x2 = input(c2, {8}, "other");
  EXPECT_EQ(Graph::build({silu(c1, x1)}).fingerprint(), Graph::build({silu(c2, x2)}).fingerprint());
}

}  // namespace
}  // namespace gl
