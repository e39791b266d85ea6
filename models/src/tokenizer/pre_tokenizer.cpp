// pre_tokenizer.cpp - the Qwen split regexes, matched with PCRE2.
// PCRE2 because it has \p{L}/\p{N}/\p{M}, lookahead and a JIT; std::regex has none of them.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "ggml-lite/models/tokenizer.h"

namespace gl {
namespace {

// As tokenizer.json spells them. Qwen2: Qwen/Qwen2-* tokenizer.json and llama.cpp
// LLAMA_VOCAB_PRE_TYPE_QWEN2. Qwen3.5: llama.cpp LLAMA_VOCAB_PRE_TYPE_QWEN35 ("qwen35"), whose
// comment quotes this tokenizer.json regex; it adds \p{M} next to \p{L}.
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Unicode White_Space, the meaning of \s in Oniguruma (Hugging Face tokenizers) and llama.cpp.
constexpr std::string_view kWhiteSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Rewrites \s and \S as explicit White_Space classes (PCRE2's UCP \s also matches U+180E).
std::string with_unicode_whitespace(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S') {
        GL_ASSERT(!in_class, "\\S inside a character class is not supported");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += {c, e};
      }
      continue;
    }
    if (c == '[' && !in_class)
      in_class = true;
    else if (c == ']' && in_class)
      in_class = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

struct PreTokenizer::Impl {
  pcre2_code* code = nullptr;
  std::string_view pattern;
  ~Impl() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(std::string_view pre)
    : kind_(pre == "qwen35" ? "qwen35" : "qwen2"), impl_(std::make_unique<Impl>()) {
  impl_->pattern = kind_ == "qwen35" ? kQwen35Pattern : kQwen2Pattern;
  const std::string expanded = with_unicode_whitespace(impl_->pattern);
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(), PCRE2_UTF | PCRE2_UCP,
                              &err, &err_offset, nullptr);
  GL_ASSERT(impl_->code != nullptr, "the pre-tokenizer regex does not compile");
  // Without a JIT pcre2_match interprets the pattern: slower, same results.
  (void)pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::string_view PreTokenizer::pattern() const { return impl_->pattern; }

namespace {

// Splits valid UTF-8 text: each regex match is a piece, and so is each gap between matches.
void split_valid(const pcre2_code* code, std::string_view text, std::vector<std::string_view>& out) {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  GL_ASSERT(md != nullptr, "out of memory");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    // JIT stack exhausted: the interpreter keeps its backtracking state on the heap instead.
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
      rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    GL_ASSERT(rc >= 0 || rc == PCRE2_ERROR_NOMATCH, "pre-tokenizer regex failed to run");
    if (rc == PCRE2_ERROR_NOMATCH) {
      out.push_back(text.substr(pos));
      break;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[0] > pos) out.push_back(text.substr(pos, ov[0] - pos));
    if (ov[1] > ov[0]) {
      out.push_back(text.substr(ov[0], ov[1] - ov[0]));
      pos = ov[1];
    } else {  // an empty match (none of our patterns has one): step over one character
      const size_t n = utf8_sequence_length(text.substr(ov[0]));
      out.push_back(text.substr(ov[0], n));
      pos = ov[0] + n;
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = pos;
    while (end < text.size()) {
      const size_t n = utf8_sequence_length(text.substr(end));
      if (n == 0) break;
      end += n;
    }
    if (end > pos) split_valid(impl_->code, text.substr(pos, end - pos), out);
    if (end < text.size()) out.push_back(text.substr(end, 1));  // an invalid byte on its own
    pos = end + 1;
  }
}

}  // namespace gl
