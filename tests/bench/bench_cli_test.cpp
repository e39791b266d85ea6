// bench_cli_test.cpp - smoke tests of the bench binary (examples/bench): a tiny in-memory
// synthetic model gives JSON with the expected rows, and bad input exits 1 with a message.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ggml-lite/gguf.h"
#include "gguf-tools/synth.h"

namespace gl::test {
namespace {

namespace fs = std::filesystem;

struct BenchRun {
  int rc = -1;
  std::string out, err;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path tmp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(GL_BINARY_DIR) / "bench-test-tmp" / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs the bench with args (shell words), stdout captured, stderr to a file.
BenchRun bench(const std::string& args) {
  const fs::path err = fs::path(GL_BINARY_DIR) / "bench-test-tmp" / "stderr.txt";
  fs::create_directories(err.parent_path());
  const std::string cmd = std::string(GL_BENCH_EXE) + " " + args + " 2>" + err.string();
  BenchRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_text(err);
  return r;
}

std::vector<std::string> tests_of(const nlohmann::json& j) {
  std::vector<std::string> names;
  for (const auto& row : j["results"]) names.push_back(row["test"].get<std::string>());
  return names;
}

TEST(BenchCli, SynthTinyJsonHasTheRows) {
  const fs::path out = tmp_dir() / "tiny.json";
  const BenchRun r = bench(
      "--synth tiny:q8_0 --backend cpu -t 2 -p 16,24 -n 8 --spec 1,2 --force-accept -r 2 --warmup 0 "
      "--json -o " +
      out.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(tests_of(j), (std::vector<std::string>{"pp 16", "pp 24", "tg 8", "spec 1 (forced)", "spec 2 (forced)"}));
  EXPECT_EQ(nlohmann::json::parse(read_text(out)), j) << "-o writes the same JSON";
  EXPECT_EQ(j["model"]["name"], "tiny");
  EXPECT_EQ(j["model"]["type"], "q8_0");
  EXPECT_EQ(j["backend"]["name"], "cpu");
  EXPECT_EQ(j["params"]["precision"], "fast");  // --precision auto on a quantized model
  EXPECT_GT(j["model"]["weight_bytes_per_token"].get<double>(), 0);
  EXPECT_LT(j["model"]["weight_bytes_per_token"].get<double>(), j["model"]["model_bytes"].get<double>());
  EXPECT_GT(j["bandwidth_gbs"].get<double>(), 0);
  for (const auto& row : j["results"]) {
    EXPECT_GT(row["tok_s"].get<double>(), 0) << row["test"];
    EXPECT_EQ(row["samples"].size(), 2u) << row["test"];
    EXPECT_EQ(row["floor_pct"].is_null(), row["kind"] == "pp") << row["test"];
  }
  for (int k : {1, 2}) {
    const auto& spec = j["results"][2 + k]["spec"];
    EXPECT_EQ(spec["k"], k);
    EXPECT_TRUE(spec["forced"].get<bool>());
    EXPECT_DOUBLE_EQ(spec["acceptance"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(spec["mean_accepted_len"].get<double>(), k + 1.0);
    EXPECT_EQ(spec["acceptance_at"].size(), static_cast<size_t>(k));
    EXPECT_GT(spec["verify_cost"].get<double>(), 0);
    EXPECT_EQ(spec["draft_cost"].is_null(), k == 1) << "K = 1 has no chained draft step";
    EXPECT_TRUE(spec["same_tokens_as_tg"].is_null()) << "forced drafts are not the model's output";
  }
}

// -d lists context depths, as llama-bench's: every row runs again with that many tokens in the
// context first (untimed), labelled " @ dN"; the default context grows to fit, and a -c that
// cannot hold a deep row is an error naming it.
TEST(BenchCli, DepthRowsRunAfterTheirContext) {
  const BenchRun r = bench("--synth tiny --backend cpu -t 2 -p 16 -n 8 -d 0,300 -r 1 --warmup 0 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(tests_of(j), (std::vector<std::string>{"pp 16", "tg 8", "pp 16 @ d300", "tg 8 @ d300"}));
  EXPECT_EQ(j["params"]["depth"], nlohmann::json::array({0, 300}));
  EXPECT_GE(j["params"]["n_ctx"].get<int>(), 300 + 8);
  for (const auto& row : j["results"]) {
    const bool deep = row["test"].get<std::string>().ends_with("@ d300");
    EXPECT_EQ(row["depth"].get<int>(), deep ? 300 : 0) << row["test"];
    EXPECT_GT(row["tok_s"].get<double>(), 0) << row["test"];
  }
  EXPECT_EQ(j["results"][3]["n_prompt"].get<int>(), 300) << "a deep tg row's prompt is its context";
  const BenchRun small = bench("--synth tiny --backend cpu -p 16 -n 0 -d 300 -c 256 -r 1");
  EXPECT_EQ(small.rc, 1);
  EXPECT_NE(small.err.find("pp 16 @ d300 needs a context of 316 positions, more than -c 256"), std::string::npos)
      << small.err;
}

// The K sweep on the embedded trained model (what qwen35 --bench-mtp used to print): real
// acceptance, and every K emits the greedy tokens of the tg row.
TEST(BenchCli, SpecSweepKeepsGreedyParity) {
  const std::string model = std::string(GL_SOURCE_DIR) + "/models/default/tiny-shakespeare-f16.gguf";
  const BenchRun r = bench("-m " + model + " --backend cpu -t 2 -p 8 -n 32 --spec 1,2,3 -r 1 --warmup 0 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(tests_of(j), (std::vector<std::string>{"pp 8", "tg 32", "spec 1", "spec 2", "spec 3"}));
  for (int k : {1, 2, 3}) {
    const auto& spec = j["results"][1 + k]["spec"];
    EXPECT_FALSE(spec["forced"].get<bool>());
    EXPECT_TRUE(spec["same_tokens_as_tg"].get<bool>()) << "K = " << k;
    EXPECT_GT(spec["acceptance"].get<double>(), 0.0) << "K = " << k;
  }
}

// A GGUF quantized by llama.cpp (q4_K and q6_K weights, computed exactly on the CPU) runs.
TEST(BenchCli, LlamaCppQ4KMFileRuns) {
  const fs::path model =
      fs::path(GL_SOURCE_DIR).parent_path() / "shared" / "fixtures" / "llama-quants" / "dense-Q4_K_M.gguf";
  if (!fs::exists(model)) GTEST_SKIP() << "llama.cpp-quantized fixture not found: " << model;
  const BenchRun r = bench("-m " + model.string() + " --backend cpu -t 1 -p 16 -n 4 -r 1 --warmup 0 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(tests_of(j), (std::vector<std::string>{"pp 16", "tg 4"}));
  EXPECT_EQ(j["model"]["type"], "q4_k_m");  // the mix (general.file_type), not its largest tensors' type
  for (const auto& row : j["results"]) EXPECT_GT(row["tok_s"].get<double>(), 0) << row["test"];
}

TEST(BenchCli, MarkdownTableAndGivenBandwidth) {
  const BenchRun r =
      bench("--synth tiny-moe --backend cpu -t 1 -p 8 -n 4 -r 1 --warmup 0 --bandwidth 10 --precision fast");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("| model | type | backend | precision | test | t/s | ± | % floor | notes |"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| tiny-moe | bf16 | cpu | fast | pp 8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| tiny-moe | bf16 | cpu | fast | tg 4 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at 10.0 GB/s (given)"), std::string::npos) << r.out;
}

// --precision auto (the default) is fast for a quantized model and exact for a 16-bit one; a
// precision given by name is kept whatever the weights.
// --precision auto and --kv-type auto: fast with an F16 cache for quantized weights (a pooled
// q4_k_m mix too), exact with an F32 cache for float ones; a choice given by name is kept.
TEST(BenchCli, PrecisionAutoFollowsTheWeights) {
  struct Case {
    std::string args, precision, kv;
  };
  const std::vector<Case> cases = {
      {"--synth tiny:bf16", "exact", "f32"},
      {"--synth tiny:q8_0 --precision auto", "fast", "f16"},
      {"--synth tiny-moe:q4_k_m", "fast", "f16"},
      {"--synth tiny:q8_0 --precision exact", "exact", "f32"},
      {"--synth tiny:q8_0 --kv-type f32", "fast", "f32"},
      {"--synth tiny:bf16 --precision fast --kv-type auto", "fast", "f16"},
  };
  for (const Case& c : cases) {
    const BenchRun r = bench(c.args + " --backend cpu -t 1 -p 8 -n 0 -r 1 --warmup 0 --bandwidth 10 --json");
    ASSERT_EQ(r.rc, 0) << c.args << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["params"]["precision"], c.precision) << c.args;
    EXPECT_EQ(j["params"]["kv_type"], c.kv) << c.args;
  }
}

// A copy of the tiny synthetic model without its MTP layer.
std::string write_no_mtp_model(const fs::path& dir) {
  const std::string full = (dir / "tiny.gguf").string(), path = (dir / "tiny-nomtp.gguf").string();
  EXPECT_TRUE(tools::synth_model({.preset = "tiny", .type = DType::F32, .output = full}).ok());
  Result<GgufFile> f = GgufFile::open(full);
  EXPECT_TRUE(f.ok());
  GgufFile out;
  for (const GgufKV& kv : f->kvs()) out.set(kv.key, kv.value);
  out.set("qwen35.block_count", GgufValue(uint32_t{4}));
  out.set("qwen35.nextn_predict_layers", GgufValue(uint32_t{0}));
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.name.starts_with("blk.4.")) continue;
    EXPECT_TRUE(out.add_tensor(t.name, t.ggml_type, std::span(t.ne).first(t.n_dims), t.data).ok());
  }
  EXPECT_TRUE(out.write(path).ok());
  return path;
}

TEST(BenchCli, BadInputExitsOneWithAMessage) {
  const std::string no_mtp = write_no_mtp_model(tmp_dir());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--synth tiny --no-such-flag", "no-such-flag"},
      {"-p 8", "give a model"},
      {"--synth nope", "unknown preset 'nope'"},
      {"--synth tiny:q4_k", "unknown type 'q4_k'"},
      {"-m /nonexistent/model.gguf", "model file '/nonexistent/model.gguf' not found"},
      {"--synth tiny --backend cpu -c 16 -p 32 -n 0", "pp 32 needs a context of 32 positions, more than -c 16"},
      {"--synth tiny --backend cpu -p 0 -n 8 --spec 0", "--spec"},
      {"--synth tiny --backend cpu --force-accept", "--force-accept needs --spec"},
      {"--synth tiny --precision medium", "--precision"},
      {"-m " + no_mtp + " --backend cpu -p 8 -n 4 --spec 2", "has no MTP layer"},
      {"--synth tiny -o /nonexistent/folder/out.json", "folder '/nonexistent/folder' does not exist"},
  };
  for (const auto& [args, message] : cases) {
    const BenchRun r = bench(args + " --bandwidth 1");
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << "\nstdout: " << r.out;
  }
}

}  // namespace
}  // namespace gl::test
