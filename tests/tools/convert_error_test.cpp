// convert_error_test.cpp - gguf-convert's error messages on bad input: each names the problem
// (the directory, the model_type, the tensor, the expected and actual shape).
#include <gtest/gtest.h>

#include "gguf-tools/convert.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

// Converts dir (dry run) and returns the error, failing if conversion succeeds.
std::string convert_error(const std::string& dir) {
  ConvertOptions o;
  o.model_dir = dir;
  o.dry_run = true;
  Result<ConvertReport> r = convert_checkpoint(o);
  EXPECT_FALSE(r.ok()) << "conversion of " << dir << " should fail";
  return r.ok() ? std::string() : r.error();
}

// A copy of the MoE fixture whose config is edited by f and whose tensors by g.
template <class F, class G>
std::string edited_moe(const std::string& dir, F edit_config, G edit_tensors) {
  const std::string src = fixture_dir("qwen35-moe-tiny");
  copy_fixture_meta(src, dir);
  nlohmann::json cfg = read_json(dir + "/config.json");
  edit_config(cfg);
  write_text(dir + "/config.json", cfg.dump(1));
  Result<SafetensorsModel> m = SafetensorsModel::open(src);
  EXPECT_TRUE(m.ok());
  std::vector<StTensor> ts = copy_tensors(*m);
  edit_tensors(ts);
  write_safetensors(dir + "/model.safetensors", ts);
  return dir;
}

void no_change(nlohmann::json&) {}
void no_tensor_change(std::vector<StTensor>&) {}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(ConvertErrors, MissingDirectory) {
  const std::string e = convert_error("/nonexistent/model-dir");
  EXPECT_HAS(e, "/nonexistent/model-dir");
  EXPECT_HAS(e, "no such directory");
}

TEST(ConvertErrors, MissingConfig) {
  const std::string dir = tmp_dir();
  const std::string e = convert_error(dir);
  EXPECT_HAS(e, "no config.json");
}

TEST(ConvertErrors, UnknownModelTypeIsNamed) {
  const std::string dir = edited_moe(
      tmp_dir(), [](nlohmann::json& c) { c["model_type"] = "llama"; }, no_tensor_change);
  EXPECT_HAS(convert_error(dir), "'llama'");
}

TEST(ConvertErrors, Qwen3NextIsNotAQwen35Model) {
  const std::string dir = edited_moe(
      tmp_dir(), [](nlohmann::json& c) { c["model_type"] = "qwen3_next"; }, no_tensor_change);
  const std::string e = convert_error(dir);
  EXPECT_HAS(e, "unsupported model_type 'qwen3_next'");
}

TEST(ConvertErrors, UnknownArchitectureIsNamed) {
  const std::string dir = edited_moe(
      tmp_dir(), [](nlohmann::json& c) { c["architectures"] = {"LlamaForCausalLM"}; }, no_tensor_change);
  EXPECT_HAS(convert_error(dir), "unsupported architecture 'LlamaForCausalLM'");
}

TEST(ConvertErrors, MissingTensorIsNamed) {
  const std::string dir = edited_moe(tmp_dir(), no_change, [](std::vector<StTensor>& ts) {
    std::erase_if(ts, [](const StTensor& t) { return t.name == "model.layers.2.linear_attn.in_proj_z.weight"; });
  });
  const std::string e = convert_error(dir);
  EXPECT_HAS(e, "missing tensor 'model.layers.2.linear_attn.in_proj_z.weight'");
  EXPECT_HAS(e, "blk.2.attn_gate.weight");
}

TEST(ConvertErrors, MissingMtpTensorIsNamed) {
  const std::string dir = edited_moe(tmp_dir(), no_change, [](std::vector<StTensor>& ts) {
    std::erase_if(ts, [](const StTensor& t) { return t.name == "mtp.fc.weight"; });
  });
  EXPECT_HAS(convert_error(dir), "missing tensor 'mtp.fc.weight'");
}

TEST(ConvertErrors, UnexpectedShapeNamesTensorExpectedAndGot) {
  const std::string dir = edited_moe(tmp_dir(), no_change, [](std::vector<StTensor>& ts) {
    for (StTensor& t : ts)
      if (t.name == "model.layers.1.linear_attn.A_log") t.shape = {2, 2};
  });
  EXPECT_HAS(convert_error(dir), "tensor 'model.layers.1.linear_attn.A_log': expected shape [4], got [2, 2]");
}

TEST(ConvertErrors, UnmappedTensorIsNamed) {
  const std::string dir = edited_moe(tmp_dir(), no_change, [](std::vector<StTensor>& ts) {
    ts.push_back({"model.layers.0.mystery.weight", "F32", {4}, std::vector<uint8_t>(16, 0)});
  });
  const std::string e = convert_error(dir);
  EXPECT_HAS(e, "no GGUF mapping");
  EXPECT_HAS(e, "model.layers.0.mystery.weight");
}

TEST(ConvertErrors, MissingTokenizer) {
  const std::string dir = edited_moe(tmp_dir(), no_change, no_tensor_change);
  fs::remove(dir + "/tokenizer.json");
  EXPECT_HAS(convert_error(dir), "tokenizer.json: no such file");
}

TEST(ConvertErrors, LayerPatternThatGgufCannotStore) {
  const std::string dir = edited_moe(
      tmp_dir(),
      [](nlohmann::json& c) {
        c["layer_types"] = {"full_attention", "linear_attention", "linear_attention", "full_attention"};
      },
      no_tensor_change);
  EXPECT_HAS(convert_error(dir), "layer_types[0]");
}

TEST(ConvertErrors, NoMtpIgnoresMtpTensors) {
  const std::string dir = edited_moe(tmp_dir(), no_change, [](std::vector<StTensor>& ts) {
    std::erase_if(ts, [](const StTensor& t) { return t.name == "mtp.fc.weight"; });
  });
  ConvertOptions o;
  o.model_dir = dir;
  o.dry_run = true;
  o.include_mtp = false;
  Result<ConvertReport> r = convert_checkpoint(o);
  EXPECT_TRUE(r.ok()) << r.error();
}

}  // namespace
}  // namespace gl::tools::test
