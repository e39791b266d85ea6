// tokenizer_meta.h - tokenizer.ggml.* metadata: read from a Hugging Face tokenizer.json
// (byte-level BPE, as Qwen ships it) or made up for synthetic models.
//
//   std::vector<std::string> warnings;
//   gl::Result<gl::tools::TokenizerMeta> t = gl::tools::load_hf_tokenizer(dir, *hf_config, &warnings);
//   gl::tools::write_tokenizer_keys(meta, *t);
//
// What is written matches llama.cpp's converter (_set_vocab_gpt2 + SpecialVocab):
//   tokenizer.ggml.model       "gpt2"
//   tokenizer.ggml.pre         the llama.cpp pre-tokenizer whose regex equals the tokenizer.json
//                              Split regex: "qwen35" (Qwen3.5's regex, which adds \p{M}) or
//                              "qwen2"; an unknown regex falls back to "qwen35" with a warning
//   tokenizer.ggml.tokens      vocab_size strings by id; ids with no token are "[PAD{id}]"
//   tokenizer.ggml.token_type  1 normal, 3 control (special added tokens, or "<|...|>"),
//                              4 user-defined (other added tokens), 5 unused (padding)
//   tokenizer.ggml.merges      "a b" strings (tokenizer.json may store strings or pairs)
//   tokenizer.ggml.eos_token_id / padding_token_id / bos_token_id (u32): tokenizer_config.json's
//                              token strings first, then config.json's *_token_id
//   tokenizer.ggml.add_bos_token  tokenizer_config.json's add_bos_token, default false
//   tokenizer.chat_template    tokenizer_config.json's chat_template or chat_template.jinja
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"
#include "gguf-tools/hf_config.h"

namespace gl::tools {

enum class TokenType : int32_t { NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6 };

struct TokenizerMeta {
  std::string model = "gpt2";
  std::string pre;
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;
  std::vector<std::string> merges;
  std::optional<uint32_t> eos, pad, bos;
  bool add_bos = false;
  std::string chat_template;  // empty: not written
};

// llama.cpp's pre-tokenizer name for a Split regex; empty if it is not one we know.
std::string pre_tokenizer_name(std::string_view split_regex);

// ids from config.json (eos_token_id: first of a list), used where tokenizer_config.json has none.
struct ConfigTokenIds {
  std::optional<int64_t> eos, bos, pad;
};

// dir holds tokenizer.json and optionally tokenizer_config.json / chat_template.jinja; config.json
// is read for pad_token_id. tokens has cfg.vocab_size entries. pre_override, when non-empty,
// replaces the detected pre-tokenizer name.
Result<TokenizerMeta> load_hf_tokenizer(const std::string& dir, const HfConfig& cfg, const std::string& pre_override,
                                        std::vector<std::string>* warnings);
// The parsing part of load_hf_tokenizer; tokenizer_config_json may be empty.
Result<TokenizerMeta> parse_hf_tokenizer(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                                         int64_t vocab_size, const ConfigTokenIds& ids,
                                         std::vector<std::string>* warnings);

// A minimal valid byte-level BPE vocab of vocab_size tokens: the 256 byte tokens, a few merges,
// <|endoftext|> / <|im_start|> / <|im_end|> (at Qwen3.5's ids 248044..248046 when they fit,
// else at the end), and "[PAD{id}]" placeholders. eos = <|im_end|>, pad = <|endoftext|>.
TokenizerMeta synth_tokenizer(int64_t vocab_size);

void write_tokenizer_keys(GgufFile& meta, const TokenizerMeta& t);

}  // namespace gl::tools
