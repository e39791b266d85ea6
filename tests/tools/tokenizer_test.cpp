// tokenizer_test.cpp - tokenizer.ggml.* from tokenizer.json and the synthetic vocab.
#include <gtest/gtest.h>

#include "gguf-tools/tokenizer_meta.h"
#include "tools_test_util.h"

namespace gl::tools::test {
namespace {

constexpr const char* kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

TEST(Tokenizer, FixtureVocab) {
  const std::string dir = fixture_dir("qwen35-dense-tiny");
  Result<HfConfig> cfg = load_hf_config(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.error();
  std::vector<std::string> warnings;
  Result<TokenizerMeta> t = load_hf_tokenizer(dir, *cfg, "", &warnings);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(warnings.empty());
  // The fixture's Split regex is Qwen2's (tests/reference/make_fixtures.py QWEN2_SPLIT).
  EXPECT_EQ(t->pre, "qwen2");
  EXPECT_EQ(t->model, "gpt2");
  ASSERT_EQ(t->tokens.size(), 384u);
  EXPECT_EQ(t->tokens[0], "<|endoftext|>");
  EXPECT_EQ(t->tokens[2], "<|im_end|>");
  EXPECT_EQ(t->token_types[0], 3);
  EXPECT_EQ(t->token_types[3], 1);
  nlohmann::json tok = read_json(dir + "/tokenizer.json");
  for (const auto& [text, id] : tok["model"]["vocab"].items()) ASSERT_EQ(t->tokens[id.get<size_t>()], text);
  ASSERT_EQ(t->merges.size(), tok["model"]["merges"].size());
  EXPECT_EQ(t->merges[0], "\xC4\xA0 t");  // "Ġ t" from the pair ["Ġ", "t"]
  EXPECT_EQ(t->eos, 0u);
  EXPECT_EQ(t->pad, 0u);
  EXPECT_FALSE(t->bos.has_value());
  EXPECT_FALSE(t->add_bos);
}

TEST(Tokenizer, PreTokenizerNames) {
  EXPECT_EQ(pre_tokenizer_name(kQwen35Regex), "qwen35");
  nlohmann::json tok = read_json(fixture_dir("qwen35-dense-tiny") + "/tokenizer.json");
  EXPECT_EQ(pre_tokenizer_name(tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>()),
            "qwen2");
  EXPECT_EQ(pre_tokenizer_name("\\w+"), "");
}

TEST(Tokenizer, StringMergesAddedTokensPaddingAndOverrides) {
  nlohmann::json tok = {
      {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}},
      {"added_tokens",
       {{{"id", 3}, {"content", "<|eot|>"}, {"special", true}},
        {{"id", 4}, {"content", "<think>"}, {"special", false}}}},
      {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", kQwen35Regex}}}}},
  };
  nlohmann::json tok_cfg = {
      {"eos_token", {{"content", "<|eot|>"}}}, {"add_bos_token", false}, {"chat_template", "{{x}}"}};
  std::vector<std::string> warnings;
  Result<TokenizerMeta> t =
      parse_hf_tokenizer(tok.dump(), tok_cfg.dump(), 8, ConfigTokenIds{.eos = 4, .bos = 1}, &warnings);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->pre, "qwen35");
  EXPECT_EQ(t->merges, std::vector<std::string>{"a b"});
  EXPECT_EQ(t->token_types, (std::vector<int32_t>{1, 1, 1, 3, 4, 5, 5, 5}));
  EXPECT_EQ(t->tokens[5], "[PAD5]");
  EXPECT_EQ(t->eos, 3u);  // tokenizer_config.json wins over config.json's eos_token_id
  EXPECT_EQ(t->bos, 1u);  // from config.json
  EXPECT_EQ(t->chat_template, "{{x}}");

  tok["pre_tokenizer"]["pattern"]["Regex"] = "\\w+";
  t = parse_hf_tokenizer(tok.dump(), "", 8, {}, &warnings);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->pre, "qwen35");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unknown pre-tokenizer"), std::string::npos);

  tok["model"]["vocab"]["zz"] = 9;
  t = parse_hf_tokenizer(tok.dump(), "", 8, {}, nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("'zz' has id 9"), std::string::npos) << t.error();
}

TEST(Tokenizer, SyntheticVocab) {
  const TokenizerMeta small = synth_tokenizer(512);
  ASSERT_EQ(small.tokens.size(), 512u);
  ASSERT_EQ(small.token_types.size(), 512u);
  EXPECT_EQ(small.tokens[0], "\xC4\x80");  // byte 0 -> U+0100
  EXPECT_EQ(small.tokens['A'], "A");
  EXPECT_EQ(small.tokens[' '], "\xC4\xA0");  // byte 0x20 -> U+0120 "Ġ"
  EXPECT_EQ(small.tokens[511], "<|im_end|>");
  EXPECT_EQ(small.eos, 511u);
  EXPECT_EQ(small.token_types[511], 3);
  std::set<std::string> unique(small.tokens.begin(), small.tokens.end());
  EXPECT_EQ(unique.size(), small.tokens.size());
  // Every merge joins two existing tokens into an existing token.
  for (const std::string& m : small.merges) {
    const size_t sp = m.find(' ');
    EXPECT_TRUE(unique.count(m.substr(0, sp)) && unique.count(m.substr(sp + 1)) &&
                unique.count(m.substr(0, sp) + m.substr(sp + 1)))
        << m;
  }
  const TokenizerMeta big = synth_tokenizer(248320);
  EXPECT_EQ(big.tokens[248044], "<|endoftext|>");
  EXPECT_EQ(big.tokens[248046], "<|im_end|>");
  EXPECT_EQ(big.eos, 248046u);
  EXPECT_EQ(big.pad, 248044u);
}

}  // namespace
}  // namespace gl::tools::test
