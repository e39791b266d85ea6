// tokenizer_meta.cpp - tokenizer.ggml.* from tokenizer.json, or a synthetic byte-level vocab.
#include "gguf-tools/tokenizer_meta.h"

#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ggml-lite/models/tokenizer.h"  // byte_to_unicode: the one GPT-2 byte map
#include "util.h"

namespace gl::tools {
namespace {

using nlohmann::json;

// Split regexes as tokenizer.json spells them, with llama.cpp's tokenizer.ggml.pre for each.
// Qwen3.5 (llama.cpp LLAMA_VOCAB_PRE_TYPE_QWEN35, "qwen35" in convert_hf_to_gguf's hash table)
// differs from Qwen2 only by [\p{L}\p{M}] (combining marks stay with their letters).
constexpr std::pair<std::string_view, std::string_view> kKnownPre[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "qwen35"},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "qwen2"},
};
constexpr std::string_view kDefaultPre = "qwen35";

// Qwen3.5's special token ids; a synthetic vocab large enough puts them at the same ids.
constexpr int64_t kQwen35EndOfText = 248044;

Result<json> parse_json(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error(fmt::format("{}: not valid JSON", name));
  if (!j.is_object()) return Error(fmt::format("{}: top level is not a JSON object", name));
  return j;
}

// The first Split regex inside pre_tokenizer (a Sequence or a single Split), or "".
std::string split_regex(const json& pre) {
  if (!pre.is_object()) return {};
  const std::string type = pre.value("type", "");
  if (type == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array()) {
    for (const json& p : pre["pretokenizers"])
      if (std::string r = split_regex(p); !r.empty()) return r;
    return {};
  }
  if (type != "Split" || !pre.contains("pattern") || !pre["pattern"].is_object()) return {};
  const json& pat = pre["pattern"];
  if (pat.contains("Regex") && pat["Regex"].is_string()) return pat["Regex"].get<std::string>();
  return {};
}

bool looks_special(std::string_view t) {
  return (starts_with(t, "<|") && ends_with(t, "|>")) || t == "<pad>" || t == "<mask>" ||
         (starts_with(t, "<unused") && ends_with(t, ">"));
}

// Fills tokens / token_types from model.vocab and added_tokens.
Status read_vocab(const json& tok, int64_t vocab_size, TokenizerMeta& m) {
  const json& model = tok["model"];
  m.tokens.assign(static_cast<size_t>(vocab_size), std::string());
  m.token_types.assign(static_cast<size_t>(vocab_size), static_cast<int32_t>(TokenType::UNUSED));
  std::vector<bool> set(static_cast<size_t>(vocab_size), false);
  auto put = [&](const std::string& text, const json& id, TokenType type) -> Status {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab_size)
      return Error(
          fmt::format("tokenizer.json: token '{}' has id {}, outside vocab_size {}", text, id.dump(), vocab_size));
    const auto i = static_cast<size_t>(id.get<int64_t>());
    m.tokens[i] = text;
    m.token_types[i] = static_cast<int32_t>(type);
    set[i] = true;
    return {};
  };
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return Error("tokenizer.json: model.vocab is missing or not an object");
  for (const auto& [text, id] : model["vocab"].items()) GL_TRY(put(text, id, TokenType::NORMAL));
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const json& a : tok["added_tokens"]) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id"))
        return Error("tokenizer.json: an added_tokens entry lacks id or content");
      const std::string text = a["content"].get<std::string>();
      const bool special = a.value("special", false) || looks_special(text);
      GL_TRY(put(text, a["id"], special ? TokenType::CONTROL : TokenType::USER_DEFINED));
    }
  }
  for (size_t i = 0; i < set.size(); ++i)
    if (!set[i]) m.tokens[i] = fmt::format("[PAD{}]", i);
  return {};
}

Status read_merges(const json& model, TokenizerMeta& m) {
  if (!model.contains("merges")) return {};
  if (!model["merges"].is_array()) return Error("tokenizer.json: model.merges is not a list");
  for (const json& e : model["merges"]) {
    if (e.is_string()) {
      m.merges.push_back(e.get<std::string>());
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      m.merges.push_back(e[0].get<std::string>() + " " + e[1].get<std::string>());
    } else {
      return Error(fmt::format("tokenizer.json: merge {} is neither \"a b\" nor [\"a\", \"b\"]", e.dump()));
    }
  }
  return {};
}

// tokenizer_config.json's "<kind>_token": a string or {"content": ...}; resolved to an id.
std::optional<uint32_t> config_token(const json& cfg, const std::string& key, const TokenizerMeta& m) {
  if (!cfg.is_object() || !cfg.contains(key)) return std::nullopt;
  const json& v = cfg[key];
  std::string text;
  if (v.is_string())
    text = v.get<std::string>();
  else if (v.is_object() && v.contains("content") && v["content"].is_string())
    text = v["content"].get<std::string>();
  else
    return std::nullopt;
  for (size_t i = 0; i < m.tokens.size(); ++i)
    if (m.tokens[i] == text) return static_cast<uint32_t>(i);
  return std::nullopt;
}

std::optional<uint32_t> in_vocab(std::optional<int64_t> id, int64_t vocab_size) {
  if (!id || *id < 0 || *id >= vocab_size) return std::nullopt;
  return static_cast<uint32_t>(*id);
}

void read_special_ids(const json& cfg, const ConfigTokenIds& ids, int64_t vocab_size, TokenizerMeta& m) {
  m.eos = config_token(cfg, "eos_token", m);
  m.pad = config_token(cfg, "pad_token", m);
  m.bos = config_token(cfg, "bos_token", m);
  if (!m.eos) m.eos = in_vocab(ids.eos, vocab_size);
  if (!m.pad) m.pad = in_vocab(ids.pad, vocab_size);
  if (!m.bos) m.bos = in_vocab(ids.bos, vocab_size);
  if (cfg.is_object() && cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean())
    m.add_bos = cfg["add_bos_token"].get<bool>();
  if (cfg.is_object() && cfg.contains("chat_template") && cfg["chat_template"].is_string())
    m.chat_template = cfg["chat_template"].get<std::string>();
}

// pad_token_id from config.json (top level or text_config).
std::optional<int64_t> config_pad_id(const std::string& config_path) {
  Result<std::string> text = read_text_file(config_path);
  if (!text) return std::nullopt;
  json j = json::parse(*text, nullptr, false);
  for (const json* o : {&j, j.is_object() && j.contains("text_config") ? &j["text_config"] : nullptr}) {
    if (o && o->is_object() && o->contains("pad_token_id") && (*o)["pad_token_id"].is_number_integer())
      return (*o)["pad_token_id"].get<int64_t>();
  }
  return std::nullopt;
}

}  // namespace

std::string pre_tokenizer_name(std::string_view split_regex) {
  for (const auto& [re, name] : kKnownPre)
    if (re == split_regex) return std::string(name);
  return {};
}

Result<TokenizerMeta> parse_hf_tokenizer(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                                         int64_t vocab_size, const ConfigTokenIds& ids,
                                         std::vector<std::string>* warnings) {
  Result<json> tok = parse_json(tokenizer_json, "tokenizer.json");
  if (!tok) return Error(tok.error());
  json cfg = json::object();
  if (!tokenizer_config_json.empty()) {
    Result<json> c = parse_json(tokenizer_config_json, "tokenizer_config.json");
    if (!c) return Error(c.error());
    cfg = std::move(c).value();
  }
  if (!tok->contains("model") || !(*tok)["model"].is_object() || (*tok)["model"].value("type", "") != "BPE")
    return Error("tokenizer.json: model.type is not \"BPE\" (only byte-level BPE tokenizers are supported)");
  TokenizerMeta m;
  GLT_TRY(read_vocab(*tok, vocab_size, m));
  GLT_TRY(read_merges((*tok)["model"], m));
  const std::string re = split_regex(tok->value("pre_tokenizer", json()));
  m.pre = pre_tokenizer_name(re);
  if (m.pre.empty()) {
    m.pre = kDefaultPre;
    if (warnings)
      warnings->push_back(
          fmt::format("tokenizer.json: unknown pre-tokenizer regex '{}'; writing "
                      "tokenizer.ggml.pre = \"{}\" (override with --tokenizer-pre)",
                      re, m.pre));
  }
  read_special_ids(cfg, ids, vocab_size, m);
  return m;
}

Result<TokenizerMeta> load_hf_tokenizer(const std::string& dir, const HfConfig& cfg, const std::string& pre_override,
                                        std::vector<std::string>* warnings) {
  Result<std::string> tok = read_text_file(dir + "/tokenizer.json");
  if (!tok) return Error(tok.error() + " (the tokenizer is needed for tokenizer.ggml.* metadata)");
  std::string tok_cfg;
  if (is_file(dir + "/tokenizer_config.json")) {
    Result<std::string> t = read_text_file(dir + "/tokenizer_config.json");
    if (!t) return Error(t.error());
    tok_cfg = std::move(t).value();
  }
  ConfigTokenIds ids;
  if (!cfg.eos_token_ids.empty()) ids.eos = cfg.eos_token_ids.front();
  ids.bos = cfg.bos_token_id;
  ids.pad = config_pad_id(dir + "/config.json");
  Result<TokenizerMeta> m = parse_hf_tokenizer(*tok, tok_cfg, cfg.vocab_size, ids, warnings);
  if (!m) return Error(fmt::format("{}/{}", dir, m.error()));
  if (m->chat_template.empty() && is_file(dir + "/chat_template.jinja")) {
    Result<std::string> t = read_text_file(dir + "/chat_template.jinja");
    if (!t) return Error(t.error());
    m->chat_template = std::move(t).value();
  }
  if (!pre_override.empty()) m->pre = pre_override;
  return m;
}

TokenizerMeta synth_tokenizer(int64_t vocab_size) {
  GL_ASSERT(vocab_size >= 256 + 16, "synth_tokenizer: vocab_size too small");
  TokenizerMeta m;
  m.pre = kDefaultPre;
  for (int b = 0; b < 256; ++b) m.tokens.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
  const std::string sp = byte_to_unicode(' ');
  const std::pair<std::string, std::string> merges[] = {{sp, "t"},  {"h", "e"}, {"i", "n"}, {sp + "t", "he"},
                                                        {"e", "r"}, {"a", "n"}, {"o", "n"}, {sp, "a"}};
  for (const auto& [a, b] : merges) {
    m.merges.push_back(a + " " + b);
    m.tokens.push_back(a + b);
  }
  m.token_types.assign(m.tokens.size(), static_cast<int32_t>(TokenType::NORMAL));
  for (auto i = static_cast<int64_t>(m.tokens.size()); i < vocab_size; ++i) {
    m.tokens.push_back(fmt::format("[PAD{}]", i));
    m.token_types.push_back(static_cast<int32_t>(TokenType::UNUSED));
  }
  const int64_t base = vocab_size > kQwen35EndOfText + 2 ? kQwen35EndOfText : vocab_size - 3;
  const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (int k = 0; k < 3; ++k) {
    m.tokens[static_cast<size_t>(base + k)] = specials[k];
    m.token_types[static_cast<size_t>(base + k)] = static_cast<int32_t>(TokenType::CONTROL);
  }
  m.pad = static_cast<uint32_t>(base);
  m.eos = static_cast<uint32_t>(base + 2);
  return m;
}

void write_tokenizer_keys(GgufFile& meta, const TokenizerMeta& t) {
  meta.set("tokenizer.ggml.model", t.model);
  meta.set("tokenizer.ggml.pre", t.pre);
  meta.set("tokenizer.ggml.tokens", GgufArray::of(t.tokens));
  meta.set("tokenizer.ggml.token_type", GgufArray::of(t.token_types));
  meta.set("tokenizer.ggml.merges", GgufArray::of(t.merges));
  if (t.eos) meta.set("tokenizer.ggml.eos_token_id", *t.eos);
  if (t.pad) meta.set("tokenizer.ggml.padding_token_id", *t.pad);
  if (t.bos) meta.set("tokenizer.ggml.bos_token_id", *t.bos);
  meta.set("tokenizer.ggml.add_bos_token", t.add_bos);
  if (!t.chat_template.empty()) meta.set("tokenizer.chat_template", t.chat_template);
}

}  // namespace gl::tools
