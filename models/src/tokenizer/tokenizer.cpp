// tokenizer.cpp - loading tokenizer.ggml.* metadata, special-token splitting, encode and decode.
#include "ggml-lite/models/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "utf8.h"

namespace gl {
namespace {

constexpr std::string_view kModel = "tokenizer.ggml.model";
constexpr std::string_view kPre = "tokenizer.ggml.pre";
constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kMerges = "tokenizer.ggml.merges";

Error tok_error(std::string message) { return Error("tokenizer: " + std::move(message)); }

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& f) {
  Tokenizer t;
  t.name_ = f.name();
  Result<std::string> model = f.get<std::string>(kModel);
  if (!model) return tok_error(model.error());
  if (*model != "gpt2")
    return tok_error(fmt::format("{}: {} is '{}'; only 'gpt2' (byte-level BPE) is supported", t.name_, kModel, *model));
  // Absent or unknown names use the Qwen2 split (see PreTokenizer).
  Result<std::string> pre = f.get_or<std::string>(kPre, "qwen2");
  if (!pre) return tok_error(pre.error());
  t.pre_ = PreTokenizer(*pre);
  GL_TRY(t.load_vocab(f));
  GL_TRY(t.load_merges(f));
  GL_TRY(t.load_special_ids(f));
  t.index_specials();
  return t;
}

Status Tokenizer::load_vocab(const GgufFile& f) {
  Result<std::vector<std::string>> tokens = f.get_array<std::string>(kTokens);
  if (!tokens) return tok_error(tokens.error());
  if (tokens->empty()) return tok_error(fmt::format("{}: {} is empty", name_, kTokens));
  if (tokens->size() > size_t(std::numeric_limits<int32_t>::max()))
    return tok_error(fmt::format("{}: {} has {} entries, more than int32 ids allow", name_, kTokens, tokens->size()));
  tokens_ = std::move(tokens).value();
  types_.assign(tokens_.size(), TokenType::NORMAL);  // llama.cpp's default when the key is absent
  if (f.has(kTokenType)) {
    Result<std::vector<int32_t>> types = f.get_array<int32_t>(kTokenType);
    if (!types) return tok_error(types.error());
    if (types->size() != tokens_.size())
      return tok_error(fmt::format("{}: {} has {} entries but {} has {}", name_, kTokenType, types->size(), kTokens,
                                   tokens_.size()));
    for (size_t i = 0; i < types->size(); ++i) {
      const int32_t v = (*types)[i];
      if (v < 0 || v > static_cast<int32_t>(TokenType::BYTE))
        return tok_error(fmt::format("{}: {}[{}] = {} is not a token type (0..6)", name_, kTokenType, i, v));
      types_[i] = static_cast<TokenType>(v);
    }
  }
  pieces_.resize(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    const TokenType type = types_[i];
    if (type == TokenType::NORMAL)
      pieces_[i] = detail::byte_level_decode(tokens_[i]);
    else if (type == TokenType::CONTROL || type == TokenType::USER_DEFINED)
      pieces_[i] = tokens_[i];
    auto [it, inserted] = ids_.try_emplace(tokens_[i], id);
    if (!inserted && type == TokenType::NORMAL && types_[size_t(it->second)] != TokenType::NORMAL) it->second = id;
  }
  for (int b = 0; b < 256; ++b) {
    const std::string text = byte_to_unicode(static_cast<uint8_t>(b));
    auto it = ids_.find(text);
    if (it == ids_.end() || types_[size_t(it->second)] != TokenType::NORMAL)
      return tok_error(fmt::format("{}: {} has no normal token '{}' for byte 0x{:02X} (not a byte-level vocabulary)",
                                   name_, kTokens, text, b));
    byte_ids_[size_t(b)] = it->second;
  }
  return {};
}

Status Tokenizer::load_merges(const GgufFile& f) {
  Result<std::vector<std::string>> merges = f.get_array<std::string>(kMerges);
  if (!merges) return tok_error(merges.error());
  merges_.reserve(merges->size());
  auto lookup = [&](std::string_view text) {
    auto it = ids_.find(text);
    return it == ids_.end() ? kNoToken : it->second;
  };
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string& m = (*merges)[i];
    auto fail = [&](std::string_view why) {
      return tok_error(fmt::format("{}: {}[{}] '{}': {}", name_, kMerges, i, m, why));
    };
    // Byte-level tokens never contain ' ' (it is "Ġ"), so the first space after the first
    // character separates the two parts.
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos || sp + 1 == m.size()) return fail("not two tokens separated by a space");
    const std::string_view left = std::string_view(m).substr(0, sp), right = std::string_view(m).substr(sp + 1);
    const int32_t l = lookup(left), r = lookup(right), merged = lookup(std::string(left) + std::string(right));
    if (l == kNoToken) return fail(fmt::format("'{}' is not in {}", left, kTokens));
    if (r == kNoToken) return fail(fmt::format("'{}' is not in {}", right, kTokens));
    if (merged == kNoToken) return fail(fmt::format("the merged token '{}{}' is not in {}", left, right, kTokens));
    // A repeated pair keeps its first (lowest) rank, as llama.cpp does.
    merges_.try_emplace(pair_key(l, r), Merge{static_cast<int32_t>(i), merged});
  }
  return {};
}

Status Tokenizer::load_special_ids(const GgufFile& f) {
  const std::pair<std::string_view, int32_t*> keys[] = {
      {"tokenizer.ggml.eos_token_id", &eos_},
      {"tokenizer.ggml.bos_token_id", &bos_},
      {"tokenizer.ggml.padding_token_id", &pad_},
  };
  for (const auto& [key, dst] : keys) {
    if (!f.has(key)) continue;
    Result<int64_t> v = f.get_int(key);
    if (!v) return tok_error(v.error());
    if (*v < 0 || *v >= n_vocab())
      return tok_error(fmt::format("{}: {} = {} is outside the vocabulary (n_vocab {})", name_, key, *v, n_vocab()));
    *dst = static_cast<int32_t>(*v);
  }
  Result<bool> add_bos = f.get_or<bool>("tokenizer.ggml.add_bos_token", false);
  if (!add_bos) return tok_error(add_bos.error());
  add_bos_ = *add_bos;
  return {};
}

void Tokenizer::index_specials() {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].empty() || (types_[i] != TokenType::CONTROL && types_[i] != TokenType::USER_DEFINED)) continue;
    specials_[static_cast<uint8_t>(tokens_[i][0])].push_back({static_cast<int32_t>(i), tokens_[i].size()});
  }
  for (auto& bucket : specials_)
    std::stable_sort(bucket.begin(), bucket.end(), [](const Special& a, const Special& b) { return a.len > b.len; });
}

Tokenizer::Special Tokenizer::match_special(std::string_view text, size_t pos, bool parse_special) const {
  const std::string_view rest = text.substr(pos);
  for (const Special& s : specials_[static_cast<uint8_t>(text[pos])]) {
    if (!parse_special && types_[size_t(s.id)] == TokenType::CONTROL) continue;
    if (rest.starts_with(tokens_[size_t(s.id)])) return s;
  }
  return {kNoToken, 0};
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> out;
  size_t start = 0;  // of the fragment not yet encoded
  for (size_t i = 0; i < text.size();) {
    const Special s = match_special(text, i, parse_special);
    if (s.id == kNoToken) {
      ++i;
      continue;
    }
    encode_fragment(text.substr(start, i - start), out);
    out.push_back(s.id);
    i += s.len;
    start = i;
  }
  encode_fragment(text.substr(start), out);
  return out;
}

void Tokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<std::string_view> pieces;
  pre_.split(text, pieces);
  for (std::string_view p : pieces) encode_piece(p, out);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool include_control) const {
  std::string out;
  for (int32_t id : ids) out += token_piece(id, include_control);
  return out;
}

std::string_view Tokenizer::token_piece(int32_t id, bool include_control) const {
  GL_ASSERT(id >= 0 && id < n_vocab(), "token id out of range");
  if (!include_control && types_[size_t(id)] == TokenType::CONTROL) return {};
  return pieces_[size_t(id)];
}

const std::string& Tokenizer::token_text(int32_t id) const {
  GL_ASSERT(id >= 0 && id < n_vocab(), "token id out of range");
  return tokens_[size_t(id)];
}

int32_t Tokenizer::find_token(std::string_view text) const {
  auto it = ids_.find(text);
  return it == ids_.end() ? kNoToken : it->second;
}

TokenType Tokenizer::token_type(int32_t id) const {
  GL_ASSERT(id >= 0 && id < n_vocab(), "token id out of range");
  return types_[size_t(id)];
}

}  // namespace gl
