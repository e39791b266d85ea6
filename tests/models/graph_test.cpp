// graph_test.cpp - structure of the Qwen3.5 step graphs: output-row slicing and golden dumps.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixture.h"
#include "ggml-lite/cpu.h"
#include "ggml-lite/diag.h"
#include "ggml-lite/dump.h"

namespace gl::test {
namespace {

struct MetaModel {
  std::unique_ptr<qwen35::Model> model;
  std::unique_ptr<Backend> cpu = cpu::make_backend({.n_threads = 1});
  std::unique_ptr<qwen35::Cache> cache;
  MetaModel() {
    auto m = qwen35::Model::load_meta(model_fixture("qwen35-dense-tiny").gguf);
    GL_ASSERT(m.ok(), "load_meta");
    model = std::move(*m);
    cache = std::make_unique<qwen35::Cache>(*model, 128, *cpu);
  }
};

int rows_of(const qwen35::StepGraph& g, const std::string& name) {
  Tensor* t = g.ctx->find(name);
  GL_ASSERT(t != nullptr, "tensor not found");
  return static_cast<int>(t->ne[1]);
}

// The LM head and the last layer's FFN run on the output rows only, never on all 64 prompt rows.
TEST(Qwen35Graph, PrefillSlicesOutputRowsBeforeTheHead) {
  MetaModel mm;
  const int last = mm.model->hparams().n_layer - 1;
  qwen35::StepGraph g = qwen35::build_step(*mm.model, *mm.cache, {.n_tokens = 64, .n_kv = 128, .n_outputs = 1});
  EXPECT_EQ(g.logits->ne[0], mm.model->hparams().n_vocab);
  EXPECT_EQ(g.logits->ne[1], 1) << "LM head rows";
  EXPECT_EQ(rows_of(g, "result_norm"), 1);
  EXPECT_EQ(rows_of(g, "ffn_out-" + std::to_string(last)), 1) << "last FFN rows";
  EXPECT_EQ(rows_of(g, "l_out-" + std::to_string(last - 1)), 64) << "earlier layers see every row";
  for (const Tensor* n : g.graph.nodes()) {
    if (n->op == Op::MUL_MAT && n->src[0] == mm.model->output) {
      EXPECT_EQ(n->ne[1], 1) << n->name;
    }
  }
}

// With the MTP tap, every row's pre-norm hidden state survives but the head still sees one row.
TEST(Qwen35Graph, HiddenAllKeepsRowsForMtpButHeadIsSliced) {
  MetaModel mm;
  qwen35::StepGraph g =
      qwen35::build_step(*mm.model, *mm.cache, {.n_tokens = 64, .n_kv = 128, .n_outputs = 1, .hidden_all = true});
  EXPECT_EQ(g.hidden->ne[1], 64);
  EXPECT_EQ(g.logits->ne[1], 1);
  EXPECT_EQ(rows_of(g, "result_norm"), 1);
}

std::string dump(const qwen35::StepGraph& g) {
  std::ostringstream os;
  DumpOptions opt;
  opt.show_offsets = false;
  dump_text(g.graph, os, opt);
  return os.str();
}

void check_golden(const std::string& name, const std::string& actual) {
  const auto path = std::filesystem::path(GL_SOURCE_DIR) / "tests" / "models" / "golden" / (name + ".txt");
  // Diagnostic switch only: GL_UPDATE_GOLDEN=1 rewrites the goldens from this run.
  if (diag_env(Diag::UPDATE_GOLDEN)) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f.good()) << "missing golden " << path << "; actual:\n" << actual;
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(actual, want.str()) << "graph changed: " << path << " (GL_UPDATE_GOLDEN=1 accepts it)";
}

TEST(Qwen35Graph, GoldenPrefillDump) {
  MetaModel mm;
  check_golden("prefill", dump(qwen35::build_step(*mm.model, *mm.cache, {.n_tokens = 8, .n_kv = 64})));
}

TEST(Qwen35Graph, GoldenDecodeDump) {
  MetaModel mm;
  check_golden("decode", dump(qwen35::build_step(*mm.model, *mm.cache, {.n_tokens = 1, .n_kv = 64})));
}

TEST(Qwen35Graph, GoldenVerifyDump) {
  MetaModel mm;
  check_golden("verify", dump(qwen35::build_step(*mm.model, *mm.cache,
                                                 {.n_tokens = 4, .n_kv = 64, .n_outputs = 4, .n_states = 4})));
}

}  // namespace
}  // namespace gl::test
