// dump_test.cpp - golden text dump, DOT validity, JSON structure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fake_backend.h"
#include "ggml-lite/context.h"
#include "ggml-lite/diag.h"
#include "ggml-lite/dump.h"
#include "ggml-lite/scheduler.h"

namespace gl {
namespace {

// x (input) -> rms_norm -> mul by w -> add x -> reshape -> silu; some tensors unnamed.
Graph small_graph(Context& ctx) {
  Tensor* x = ctx.new_tensor(DType::F32, {64, 8}, "x");
  x->flags |= TENSOR_INPUT;
  Tensor* w = ctx.new_tensor(DType::F32, {64}, "attn_norm.weight");
  w->flags |= TENSOR_WEIGHT;
  Tensor* n = rms_norm(ctx, x, 1e-6f);  // unnamed: "#0"
  Tensor* y = set_name(mul(ctx, n, w), "attn_norm");
  Tensor* r = set_name(add(ctx, y, x), "residual");
  Tensor* flat = reshape(ctx, r, {512});  // unnamed view
  Tensor* out = set_name(silu(ctx, flat), "out");
  return Graph::build({out});
}

std::filesystem::path golden_path() {
  return std::filesystem::path(GL_SOURCE_DIR) / "tests" / "graph" / "golden" / "small_graph.txt";
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Dump, TextMatchesGolden) {
  Context ctx;
  Graph g = small_graph(ctx);
  DumpOptions opt;
  opt.show_offsets = false;
  std::ostringstream os;
  dump_text(g, os, opt);
  const std::string actual = os.str();

  // Diagnostic switch only: GL_UPDATE_GOLDEN=1 rewrites the golden from this run.
  if (diag_env(Diag::UPDATE_GOLDEN)) {
    std::filesystem::create_directories(golden_path().parent_path());
    std::ofstream(golden_path(), std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << golden_path();
  }
  ASSERT_TRUE(std::filesystem::exists(golden_path())) << "missing golden; actual dump:\n" << actual;
  EXPECT_EQ(actual, read_file(golden_path())) << "actual dump:\n"
                                              << actual << "(run with GL_UPDATE_GOLDEN=1 to accept it)";
}

TEST(Dump, TextShowsBackendsAndOffsets) {
  test::FakeBackend cpu("fakecpu");
  Scheduler sched({&cpu});
  Context ctx;
  Graph g = small_graph(ctx);
  sched.schedule(g);
  g.nodes()[0]->arena_offset = 128;
  std::vector<Backend*> bs = {&cpu};
  DumpOptions opt;
  opt.backends = bs;
  std::ostringstream os;
  dump_text(g, os, opt);
  EXPECT_NE(os.str().find("fakecpu"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find(" 128 "), std::string::npos) << os.str();
}

TEST(Dump, UnnamedTensorsGetStablePlaceholders) {
  Context c1, c2;
  std::ostringstream a, b;
  dump_text(small_graph(c1), a);
  dump_text(small_graph(c2), b);
  EXPECT_EQ(a.str(), b.str());
  EXPECT_NE(a.str().find("#0"), std::string::npos);
}

bool balanced_braces(const std::string& s) {
  int depth = 0;
  for (char c : s) {
    if (c == '{') ++depth;
    if (c == '}' && --depth < 0) return false;
  }
  return depth == 0;
}

TEST(Dump, DotIsWellFormed) {
  Context ctx;
  Graph g = small_graph(ctx);
  set_name(g.nodes()[0], "quote\"and\\backslash");
  std::ostringstream os;
  dump_dot(g, os);
  const std::string dot = os.str();
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_TRUE(balanced_braces(dot)) << dot;
  EXPECT_NE(dot.find("quote\\\"and\\\\backslash"), std::string::npos) << dot;
  EXPECT_EQ(static_cast<size_t>(std::count(dot.begin(), dot.end(), '>')), 7u) << "one edge per source:\n" << dot;

  if (!std::filesystem::exists("/usr/bin/dot")) GTEST_SKIP() << "/usr/bin/dot not installed; DOT not rendered";
  auto path = std::filesystem::temp_directory_path() / ("gl_dump_test_" + std::to_string(::getpid()) + ".dot");
  std::ofstream(path) << dot;
  std::string cmd = "/usr/bin/dot -Tsvg '" + path.string() + "' -o /dev/null";
  int rc = std::system(cmd.c_str());
  std::filesystem::remove(path);
  EXPECT_EQ(rc, 0) << "dot rejected:\n" << dot;
}

TEST(Dump, JsonListsNodesWithFields) {
  test::FakeBackend cpu("fakecpu");
  Scheduler sched({&cpu});
  Context ctx;
  Graph g = small_graph(ctx);
  sched.schedule(g);
  std::vector<Backend*> bs = {&cpu};
  DumpOptions opt;
  opt.backends = bs;
  std::ostringstream os;
  dump_json(g, os, opt);
  nlohmann::json j = nlohmann::json::parse(os.str());
  ASSERT_EQ(j["nodes"].size(), g.nodes().size());
  ASSERT_EQ(j["leafs"].size(), g.leafs().size());
  const auto& n0 = j["nodes"][0];
  EXPECT_EQ(n0["op"], "rms_norm");
  EXPECT_EQ(n0["name"], "#0");
  EXPECT_EQ(n0["shape"], nlohmann::json::array({64, 8}));
  EXPECT_EQ(n0["dtype"], "f32");
  EXPECT_EQ(n0["backend"], "fakecpu");
  EXPECT_TRUE(n0["offset"].is_null());
  EXPECT_EQ(n0["srcs"], nlohmann::json::array({"x"}));
  EXPECT_EQ(j["nodes"][3]["view_of"], "residual");
  EXPECT_EQ(j["leafs"][0]["flags"], nlohmann::json::array({"input"}));
  EXPECT_EQ(j["outputs"], nlohmann::json::array({"out"}));
}

}  // namespace
}  // namespace gl
