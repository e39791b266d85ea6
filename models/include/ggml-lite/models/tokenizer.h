// tokenizer.h - byte-level BPE (GPT-2 style, as Qwen ships it) from GGUF tokenizer.ggml.* keys.
//
//   gl::Result<gl::GgufFile> f = gl::GgufFile::open("model.gguf");
//   gl::Result<gl::Tokenizer> tok = gl::Tokenizer::from_gguf(*f);
//   if (!tok) { fmt::print(stderr, "{}\n", tok.error()); return 1; }
//   std::vector<int32_t> ids = tok->encode("<|im_start|>user\nhi<|im_end|>");
//   std::string text = tok->decode(ids, /*include_control=*/true);
//
//   gl::Utf8Stream out;                                   // streaming: whole characters only
//   for (int32_t id : generated) fmt::print("{}", out.push(tok->token_piece(id)));
//   fmt::print("{}", out.flush());
//
// encode(text) does what Hugging Face `tokenizers` does with add_special_tokens=False:
//   1. control (token_type 3) and user-defined (4) tokens are cut out of the text first,
//      leftmost-longest, and map to their ids (control tokens only when parse_special);
//   2. each remaining fragment is split by the pre-tokenizer regex chosen by tokenizer.ggml.pre;
//   3. each piece's bytes become GPT-2 byte-level symbols and are merged by merge rank (lowest
//      rank first, leftmost first among equal ranks); the symbols left are the token ids.
// Text that is not valid UTF-8 is still encoded: each invalid byte is a piece of its own, so
// decode(encode(s)) == s for any bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ggml-lite/gguf.h"
#include "ggml-lite/status.h"

namespace gl {

inline constexpr int32_t kNoToken = -1;  // eos_id()/bos_id()/find_token() when there is none

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
};

// The GPT-2 byte-to-unicode mapping: the UTF-8 text of the character that stands for byte b in
// byte-level vocabularies ("Ġ" for ' ', "Ċ" for '\n', "a" for 'a').
std::string byte_to_unicode(uint8_t b);

// The regex split that runs before BPE, chosen by tokenizer.ggml.pre:
//   "qwen2"  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//            \s*[\r\n]+|\s+(?!\S)|\s+
//   "qwen35" the same with [\p{L}\p{M}]+ for letters and \p{M} excluded from the punctuation
//            run, so combining marks stay with their letters (llama.cpp LLAMA_VOCAB_PRE_TYPE_QWEN35)
// Any other name (or none) uses "qwen2": the Qwen family's base split, a documented fallback.
// Matching is PCRE2 with UTF + UCP (JIT when available); \s and \S mean Unicode White_Space,
// as in Hugging Face tokenizers and llama.cpp (PCRE2's own \s would add U+180E).
class PreTokenizer {
 public:
  explicit PreTokenizer(std::string_view pre = "qwen2");
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  const std::string& kind() const { return kind_; }  // "qwen2" or "qwen35"
  std::string_view pattern() const;                  // as tokenizer.json spells it
  // Appends the pieces of text (views into it) to out. Gaps the regex does not match become
  // pieces too, and bytes that are not valid UTF-8 are pieces of one byte each.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Impl;
  std::string kind_;
  std::unique_ptr<Impl> impl_;
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.{model,pre,tokens,token_type,merges,eos_token_id,bos_token_id,
  // padding_token_id,add_bos_token}. Errors name the file and the key or entry, e.g.
  // "tokenizer: m.gguf: tokenizer.ggml.merges[17] 'a bc': 'bc' is not in tokenizer.ggml.tokens".
  static Result<Tokenizer> from_gguf(const GgufFile& f);

  // Token ids for text, no BOS added (see add_bos()).
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // UTF-8 bytes of ids; control tokens are dropped unless include_control.
  std::string decode(std::span<const int32_t> ids, bool include_control = false) const;
  // The raw bytes of one token, possibly a partial UTF-8 sequence (see Utf8Stream). Normal tokens
  // are byte-decoded; user-defined tokens are their text; control tokens are their text when
  // include_control, else empty; unused/unknown tokens are empty. 0 <= id < n_vocab() (asserted).
  std::string_view token_piece(int32_t id, bool include_control = false) const;
  // The token's string as stored in tokenizer.ggml.tokens ("Ġthe", "<|im_end|>").
  const std::string& token_text(int32_t id) const;
  // The id whose stored string is text (a NORMAL token when several share it), or kNoToken.
  int32_t find_token(std::string_view text) const;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t eos_id() const { return eos_; }
  int32_t bos_id() const { return bos_; }
  int32_t pad_id() const { return pad_; }
  bool add_bos() const { return add_bos_; }
  TokenType token_type(int32_t id) const;
  bool is_control(int32_t id) const { return token_type(id) == TokenType::CONTROL; }
  const PreTokenizer& pre_tokenizer() const { return pre_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  struct Special {
    int32_t id;  // kNoToken: no match
    size_t len;  // bytes of its text
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Tokenizer() = default;
  Status load_vocab(const GgufFile& f);
  Status load_merges(const GgufFile& f);
  Status load_special_ids(const GgufFile& f);
  void index_specials();
  // Longest special token starting at text[pos]; {.., kNoToken} when none.
  Special match_special(std::string_view text, size_t pos, bool parse_special) const;
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  std::string name_;  // the GGUF file, for messages
  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  std::vector<std::string> pieces_;  // decoded bytes of each token
  // Stored string -> id; when strings repeat, a NORMAL token wins, then the lowest id.
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
  std::array<int32_t, 256> byte_ids_{};             // the NORMAL token of each byte
  std::unordered_map<uint64_t, Merge> merges_;      // (left id << 32 | right id) -> merge
  std::array<std::vector<Special>, 256> specials_;  // by first byte, longest first
  PreTokenizer pre_;
  int32_t eos_ = kNoToken, bos_ = kNoToken, pad_ = kNoToken;
  bool add_bos_ = false;
};

// Buffers the incomplete UTF-8 tail of a byte stream so that only whole characters are
// printed. Bytes that can never complete a valid sequence are passed through as they are.
class Utf8Stream {
 public:
  // The longest prefix of (pending + bytes) that does not end inside a UTF-8 sequence.
  std::string push(std::string_view bytes);
  // Whatever is pending (an incomplete sequence at end of stream), and resets.
  std::string flush();
  size_t pending() const { return tail_.size(); }

 private:
  std::string tail_;
};

// Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 if s does not start with one
// (an invalid byte, an overlong form, a surrogate, > U+10FFFF, or a sequence cut short).
size_t utf8_sequence_length(std::string_view s);

}  // namespace gl
