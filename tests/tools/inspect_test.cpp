// inspect_test.cpp - gguf-inspect's text and JSON output.
#include <gtest/gtest.h>

#include "gguf-tools/inspect.h"
#include "gguf-tools/synth.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

TEST(Inspect, TextSummarisesArraysAndListsTensors) {
  const std::string path = tmp_dir() + "/tiny.gguf";
  ASSERT_TRUE(synth_model({.preset = "tiny", .type = DType::Q8_0, .output = path}).ok());
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  const std::string text = inspect_text(*f, {});
  EXPECT_NE(text.find("qwen35.block_count"), std::string::npos) << text;
  EXPECT_NE(text.find("u32     5"), std::string::npos);
  EXPECT_NE(text.find("[string x 512]"), std::string::npos);
  EXPECT_NE(text.find("[i32 x 4]  2, 1, 1, 0"), std::string::npos);
  EXPECT_NE(text.find("tensors: 71"), std::string::npos);
  EXPECT_NE(text.find("blk.0.attn_qkv.weight"), std::string::npos);
  EXPECT_NE(text.find("{64, 128}"), std::string::npos);
  EXPECT_EQ(inspect_text(*f, {.tensors = false}).find("blk.0.attn_qkv.weight"), std::string::npos);
}

TEST(Inspect, JsonHasOrderedMetadataAndTensorTable) {
  const std::string path = tmp_dir() + "/tiny.gguf";
  ASSERT_TRUE(synth_model({.preset = "tiny", .type = DType::F16, .output = path}).ok());
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  const nlohmann::json j = nlohmann::json::parse(inspect_json(*f, {.array_head = 3}).dump());
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["metadata"][0]["key"], "general.architecture");
  EXPECT_EQ(j["metadata"][0]["value"], "qwen35");
  bool saw_tokens = false;
  for (const nlohmann::json& e : j["metadata"]) {
    if (e["key"] != "tokenizer.ggml.tokens") continue;
    saw_tokens = true;
    EXPECT_EQ(e["type"], "array");
    EXPECT_EQ(e["element_type"], "string");
    EXPECT_EQ(e["count"], 512);
    EXPECT_EQ(e["head"].size(), 3u);
  }
  EXPECT_TRUE(saw_tokens);
  ASSERT_EQ(j["tensors"].size(), 71u);
  EXPECT_EQ(j["tensors"][0]["name"], "token_embd.weight");
  EXPECT_EQ(j["tensors"][0]["type"], "f16");
  EXPECT_EQ(j["tensors"][0]["ne"], nlohmann::json({64, 512}));
}

TEST(Inspect, TypesWeCannotComputeAreShown) {
  const std::string path = tmp_dir() + "/q4k.gguf";
  std::vector<uint8_t> q4k(2 * 144, 0x5a);
  GgufFile f;
  f.set("general.architecture", "llama");
  f.set("general.note", std::string(200, 'x'));
  ASSERT_TRUE(f.add_tensor("blk.0.ffn_up.weight", 12u, std::vector<int64_t>{256, 2}, q4k.data()).ok());
  ASSERT_TRUE(f.write(path).ok());
  Result<GgufFile> g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.error();
  const std::string text = inspect_text(*g, {});
  EXPECT_NE(text.find("q4_K"), std::string::npos) << text;
  EXPECT_NE(text.find("{256, 2}"), std::string::npos);
  EXPECT_NE(text.find("(200 bytes)"), std::string::npos);
  EXPECT_EQ(inspect_json(*g, {})["tensors"][0]["type"], "q4_K");
}

TEST(Inspect, PerTypeSummaryOfAMix) {
  const std::string path = tmp_dir() + "/mix.gguf";
  std::vector<uint8_t> q4k(2 * 144, 0x5a), q6k(210, 0x11), f32(4 * 64, 0);
  GgufFile f;
  f.set("general.architecture", "llama");
  ASSERT_TRUE(f.add_tensor("blk.0.ffn_up.weight", 12u, std::vector<int64_t>{256, 2}, q4k.data()).ok());
  ASSERT_TRUE(f.add_tensor("blk.0.ffn_down.weight", 12u, std::vector<int64_t>{256, 2}, q4k.data()).ok());
  ASSERT_TRUE(f.add_tensor("output.weight", 14u, std::vector<int64_t>{256, 1}, q6k.data()).ok());
  ASSERT_TRUE(f.add_tensor("output_norm.weight", 0u, std::vector<int64_t>{64}, f32.data()).ok());
  ASSERT_TRUE(f.write(path).ok());
  Result<GgufFile> g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.error();
  const std::vector<TypeUsage> u = type_usage(*g);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].ggml_type, 12u);
  EXPECT_EQ(u[0].count, 2u);
  EXPECT_EQ(u[0].bytes, 576u);
  EXPECT_EQ(u[1].ggml_type, 0u);
  EXPECT_EQ(u[2].ggml_type, 14u);
  const std::string text = inspect_text(*g, {.tensors = false});
  EXPECT_NE(text.find("q4_K         2 tensors"), std::string::npos) << text;
  EXPECT_NE(text.find("55.3%"), std::string::npos) << text;  // 576 of 1042 bytes
  const nlohmann::ordered_json j = inspect_json(*g, {});
  ASSERT_EQ(j["types"].size(), 3u);
  EXPECT_EQ(j["types"][2]["type"], "q6_K");
  EXPECT_EQ(j["types"][2]["count"], 1);
}

}  // namespace
}  // namespace gl::tools::test
