// tokenizer_test.cpp - byte-level BPE against Hugging Face tokenizers (fixture probes), the Qwen
// pre-tokenizer splits, special tokens, streaming and metadata errors.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "fixture.h"
#include "ggml-lite/gguf.h"
#include "ggml-lite/models/tokenizer.h"
#include "gguf-tools/tokenizer_meta.h"

namespace gl::test {
namespace {

// ---------------------------------------------------------------- toy vocabularies in memory

// The byte-level spelling of raw bytes ("Ġt" for " t").
std::string bl(std::string_view raw) {
  std::string s;
  for (char c : raw) s += byte_to_unicode(static_cast<uint8_t>(c));
  return s;
}

struct ToySpecial {
  std::string text;
  TokenType type;
};

// 256 byte tokens (ids 0..255), then one token per merge result, then the specials.
// Merges are given as raw byte strings and ranked in order.
GgufFile toy_gguf(const std::vector<std::pair<std::string, std::string>>& merges,
                  const std::vector<ToySpecial>& specials = {}) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
  types.assign(256, static_cast<int32_t>(TokenType::NORMAL));
  std::vector<std::string> merge_strings;
  for (const auto& [a, b] : merges) {
    merge_strings.push_back(bl(a) + " " + bl(b));
    tokens.push_back(bl(a + b));
    types.push_back(static_cast<int32_t>(TokenType::NORMAL));
  }
  for (const ToySpecial& s : specials) {
    tokens.push_back(s.text);
    types.push_back(static_cast<int32_t>(s.type));
  }
  GgufFile f;
  f.set("tokenizer.ggml.model", "gpt2");
  f.set("tokenizer.ggml.pre", "qwen2");
  f.set("tokenizer.ggml.tokens", GgufArray::of(tokens));
  f.set("tokenizer.ggml.token_type", GgufArray::of(types));
  f.set("tokenizer.ggml.merges", GgufArray::of(merge_strings));
  f.set("tokenizer.ggml.eos_token_id", GgufValue(uint32_t{0}));  // a bare uint32_t{0} would pick set(key, const char*)
  return f;
}

Tokenizer make(const GgufFile& f) {
  Result<Tokenizer> t = Tokenizer::from_gguf(f);
  GL_ASSERT(t.ok(), t.ok() ? "" : t.error().c_str());
  return std::move(t).value();
}

std::vector<std::string> split(const PreTokenizer& pre, std::string_view text) {
  std::vector<std::string_view> pieces;
  pre.split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

// ---------------------------------------------------------------- fixtures from Hugging Face

class TokenizerFixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fx_ = &model_fixture(GetParam());
    Result<GgufFile> f = GgufFile::open(fx_->gguf);
    ASSERT_TRUE(f.ok()) << f.error();
    Result<Tokenizer> t = Tokenizer::from_gguf(*f);
    ASSERT_TRUE(t.ok()) << t.error();
    tok_ = std::make_unique<Tokenizer>(std::move(t).value());
  }
  const ModelFixture* fx_ = nullptr;
  std::unique_ptr<Tokenizer> tok_;
};

// Every probe tokenizes exactly as tokenizers' encode(text, add_special_tokens=False).
TEST_P(TokenizerFixtureTest, ProbesMatchHuggingFace) {
  const auto& probes = fx_->meta["tokenizer_probes"];
  ASSERT_FALSE(probes.empty());
  for (const auto& probe : probes) {
    const std::string text = probe["text"].get<std::string>();
    EXPECT_EQ(tok_->encode(text), probe["ids"].get<std::vector<int32_t>>()) << "text: " << text;
  }
}

TEST_P(TokenizerFixtureTest, PromptMatchesReference) {
  EXPECT_EQ(tok_->encode(fx_->meta["prompt"].get<std::string>()), fx_->prompt);
}

TEST_P(TokenizerFixtureTest, ProbesRoundTrip) {
  for (const auto& probe : fx_->meta["tokenizer_probes"]) {
    const std::string text = probe["text"].get<std::string>();
    EXPECT_EQ(tok_->decode(tok_->encode(text), /*include_control=*/true), text);
  }
}

TEST_P(TokenizerFixtureTest, ExtraStringsRoundTrip) {
  const std::vector<std::string> extra = {
      "Ünïcödé: ﬁancé, Ελληνικά, русский, עברית, العربية, हिन्दी, 日本語のテキスト, 한국어",
      "emoji: 👍🏽 👨‍👩‍👧‍👦 🇯🇵 ❤️ 😀😀",
      "crlf\r\nline\r\n\r\nend\r",
      std::string(200, ' ') + "x" + std::string(77, ' '),
      "\t\t  \n \n\n   \t",
      "combining: e\u0301 a\u0308 n\u0303",
      "mixed 12,345.678e-9 $%^&*()_+ {}[] <|not special|> <|im_end|",
      std::string("nul\0byte", 8),
      "invalid \xff\xfe utf-8 \xc0\x80 \xed\xa0\x80 \xe2\x82",
  };
  for (const std::string& s : extra) {
    EXPECT_EQ(tok_->decode(tok_->encode(s)), s) << s;
    // Control-token text typed as text (parse_special = false) is plain text too.
    EXPECT_EQ(tok_->decode(tok_->encode(s, false)), s) << s;
  }
}

TEST_P(TokenizerFixtureTest, MetadataFromConverter) {
  EXPECT_EQ(tok_->pre_tokenizer().kind(), "qwen2");  // the fixture's tokenizer.json uses Qwen2's regex
  EXPECT_EQ(tok_->eos_id(), tok_->find_token("<|endoftext|>"));
  EXPECT_EQ(tok_->bos_id(), kNoToken);
  EXPECT_FALSE(tok_->add_bos());
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    const int32_t id = tok_->find_token(s);
    ASSERT_NE(id, kNoToken) << s;
    EXPECT_TRUE(tok_->is_control(id)) << s;
    EXPECT_EQ(tok_->token_piece(id), "") << s;
    EXPECT_EQ(tok_->token_piece(id, true), s) << s;
  }
  EXPECT_EQ(tok_->token_text(tok_->encode(" ")[0]), "Ġ");
  EXPECT_EQ(tok_->n_vocab(), 384);  // config.json vocab_size
}

// parse_special = false: control-token text is ordinary text, split and merged like any other.
TEST_P(TokenizerFixtureTest, ParseSpecialOff) {
  const std::vector<int32_t> ids = tok_->encode("<|im_start|>user", false);
  for (int32_t id : ids) EXPECT_FALSE(tok_->is_control(id));
  EXPECT_EQ(tok_->decode(ids), "<|im_start|>user");
}

// Streaming token by token through Utf8Stream gives the same text as decode, and never emits a
// partial character.
TEST_P(TokenizerFixtureTest, StreamingMatchesDecode) {
  const std::string text = "unicode: café naïve über 你好 😀 👨‍👩‍👧";
  const std::vector<int32_t> ids = tok_->encode(text);
  Utf8Stream stream;
  std::string out;
  for (int32_t id : ids) {
    const std::string chunk = stream.push(tok_->token_piece(id));
    for (size_t i = 0; i < chunk.size();) {
      const size_t n = utf8_sequence_length(std::string_view(chunk).substr(i));
      ASSERT_GT(n, 0u) << "partial or invalid UTF-8 emitted";
      i += n;
    }
    out += chunk;
  }
  out += stream.flush();
  EXPECT_EQ(out, text);
  EXPECT_EQ(out, tok_->decode(ids));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerFixtureTest, ::testing::Values("qwen35-dense-tiny", "qwen35-moe-tiny"));

// ---------------------------------------------------------------- pre-tokenizer

// Expected splits from Python's `regex` with the tokenizer.json patterns (\s as White_Space).
TEST(TokenizerPre, Qwen2AndQwen35DifferOnCombiningMarks) {
  const PreTokenizer q2("qwen2"), q35("qwen35");
  EXPECT_EQ(q2.kind(), "qwen2");
  EXPECT_EQ(q35.kind(), "qwen35");
  using V = std::vector<std::string>;
  EXPECT_EQ(split(q2, "cafe\u0301 na\u0308ive"), (V{"cafe", "\u0301", " na", "\u0308ive"}));
  EXPECT_EQ(split(q35, "cafe\u0301 na\u0308ive"), (V{"cafe\u0301", " na\u0308ive"}));
  EXPECT_EQ(split(q2, "\u0915\u093f\u0924\u093e\u092c"), (V{"\u0915", "\u093f\u0924", "\u093e\u092c"}));
  EXPECT_EQ(split(q35, "\u0915\u093f\u0924\u093e\u092c"), (V{"\u0915\u093f\u0924\u093e\u092c"}));
}

TEST(TokenizerPre, SplitsLikeTheReference) {
  using V = std::vector<std::string>;
  for (const char* kind : {"qwen2", "qwen35"}) {
    const PreTokenizer pre(kind);
    EXPECT_EQ(split(pre, "Hello  world\r\n\n  x"), (V{"Hello", " ", " world", "\r\n\n", " ", " x"})) << kind;
    EXPECT_EQ(split(pre, "I'LL DON'T it's"), (V{"I", "'LL", " DON", "'T", " it", "'s"})) << kind;
    EXPECT_EQ(split(pre, "12abc!!?\n\nz"), (V{"1", "2", "abc", "!!?\n\n", "z"})) << kind;
    EXPECT_EQ(split(pre, "x\u3000\u3000y"), (V{"x", "\u3000", "\u3000y"})) << kind;
    EXPECT_EQ(split(pre, ""), V{}) << kind;
  }
}

// \s is Unicode White_Space, which excludes U+180E (PCRE2's own \s would include it and give
// {"\u180e", "\u180ex"}).
TEST(TokenizerPre, WhiteSpaceExcludesMongolianVowelSeparator) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split(PreTokenizer("qwen2"), "\u180e\u180ex"), (V{"\u180e\u180e", "x"}));
}

TEST(TokenizerPre, UnknownNamesUseQwen2) {
  EXPECT_EQ(PreTokenizer("gpt-4o").kind(), "qwen2");
  EXPECT_EQ(PreTokenizer("").kind(), "qwen2");
  EXPECT_NE(PreTokenizer("qwen35").pattern(), PreTokenizer("qwen2").pattern());
}

TEST(TokenizerPre, InvalidUtf8BytesArePiecesOfTheirOwn) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split(PreTokenizer("qwen2"),
                  "ab\xff"
                  "cd \xc3"),
            (V{"ab", "\xff", "cd", " ", "\xc3"}));
}

// ---------------------------------------------------------------- BPE on toy vocabularies

TEST(TokenizerBpe, LowerRankMergesFirst) {
  const Tokenizer bc_first = make(toy_gguf({{"b", "c"}, {"a", "b"}}));
  EXPECT_EQ(bc_first.encode("abc"), (std::vector<int32_t>{'a', 256}));
  const Tokenizer ab_first = make(toy_gguf({{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(ab_first.encode("abc"), (std::vector<int32_t>{256, 'c'}));
}

TEST(TokenizerBpe, EqualRanksMergeLeftmostFirst) {
  const Tokenizer t = make(toy_gguf({{"a", "a"}, {"aa", "aa"}}));
  EXPECT_EQ(t.encode("aaa"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(t.encode("aaaaa"), (std::vector<int32_t>{257, 'a'}));
  EXPECT_EQ(t.decode(t.encode("aaaaa")), "aaaaa");
}

// A long word stays fast: the merge queue is O(n log n), not O(n^2).
TEST(TokenizerBpe, LongInputsAreFast) {
  const Tokenizer t = make(toy_gguf({{"a", "a"}, {"aa", "aa"}, {" ", " "}}));
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& s :
       {std::string(1 << 20, 'a'), std::string(1 << 20, ' '), std::string(1 << 19, '\n'), std::string(1 << 18, '!')}) {
    const std::vector<int32_t> ids = t.encode(s);
    EXPECT_EQ(t.decode(ids), s);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 20.0);
}

TEST(TokenizerSpecial, LongestMatchWins) {
  const Tokenizer t = make(toy_gguf(
      {}, {{"<|x|>", TokenType::CONTROL}, {"<|x|>!", TokenType::USER_DEFINED}, {"<tool>", TokenType::USER_DEFINED}}));
  const int32_t x = 256, x_bang = 257, tool = 258;
  EXPECT_EQ(t.encode("a<|x|>!<|x|>b<tool>"), (std::vector<int32_t>{'a', x_bang, x, 'b', tool}));
  // Without parse_special only control tokens lose their meaning.
  std::vector<int32_t> ids = t.encode("<|x|>?<tool>", false);
  EXPECT_EQ(ids.back(), tool);
  EXPECT_EQ(ids.size(), 7u);  // '<' '|' 'x' '|' '>' '?' then <tool>
  EXPECT_EQ(t.decode(t.encode("<|x|>hi")), "hi");
  EXPECT_EQ(t.decode(t.encode("<|x|>hi"), true), "<|x|>hi");
  EXPECT_EQ(t.decode(t.encode("<tool>")), "<tool>");  // user-defined text always decodes
}

TEST(TokenizerSpecial, Qwen35PreFromMetadata) {
  GgufFile f = toy_gguf({});
  f.set("tokenizer.ggml.pre", "qwen35");
  EXPECT_EQ(make(f).pre_tokenizer().kind(), "qwen35");
  f.remove("tokenizer.ggml.pre");
  EXPECT_EQ(make(f).pre_tokenizer().kind(), "qwen2");
}

TEST(TokenizerBytes, Gpt2Mapping) {
  EXPECT_EQ(byte_to_unicode(0x00), "Ā");  // the 68 unprintable bytes go to U+0100.. in byte order
  EXPECT_EQ(byte_to_unicode(0x7F), "ġ");
  EXPECT_EQ(byte_to_unicode(0xAD), "Ń");
  EXPECT_EQ(byte_to_unicode(0xFF), "ÿ");
  EXPECT_EQ(byte_to_unicode(' '), "Ġ");
  EXPECT_EQ(byte_to_unicode('\n'), "Ċ");
  EXPECT_EQ(byte_to_unicode('a'), "a");
}

// ---------------------------------------------------------------- metadata errors

void expect_error(const GgufFile& f, std::initializer_list<std::string_view> parts) {
  Result<Tokenizer> t = Tokenizer::from_gguf(f);
  ASSERT_FALSE(t.ok());
  for (std::string_view p : parts) EXPECT_NE(t.error().find(p), std::string::npos) << t.error() << " lacks " << p;
}

TEST(TokenizerErrors, MissingKeys) {
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
    GgufFile f = toy_gguf({{"a", "b"}});
    f.remove(key);
    expect_error(f, {"tokenizer: ", key, "not found"});
  }
}

TEST(TokenizerErrors, WrongModel) {
  GgufFile f = toy_gguf({});
  f.set("tokenizer.ggml.model", "llama");
  expect_error(f, {"tokenizer.ggml.model is 'llama'", "gpt2"});
}

TEST(TokenizerErrors, BadMerges) {
  GgufFile f = toy_gguf({{"a", "b"}});
  f.set("tokenizer.ggml.merges", GgufArray::of<std::string>({"a b", "a zz"}));
  expect_error(f, {"tokenizer.ggml.merges[1] 'a zz'", "'zz' is not in tokenizer.ggml.tokens"});
  f.set("tokenizer.ggml.merges", GgufArray::of<std::string>({"ab"}));
  expect_error(f, {"tokenizer.ggml.merges[0] 'ab'", "not two tokens"});
  f.set("tokenizer.ggml.merges", GgufArray::of<std::string>({"a b", "b c"}));
  expect_error(f, {"tokenizer.ggml.merges[1] 'b c'", "merged token 'bc'"});
}

TEST(TokenizerErrors, BadTokenTypes) {
  GgufFile f = toy_gguf({});
  f.set("tokenizer.ggml.token_type", GgufArray::of<int32_t>({1, 1}));
  expect_error(f, {"tokenizer.ggml.token_type has 2 entries", "tokenizer.ggml.tokens has 256"});
  std::vector<int32_t> types(256, 1);
  types[5] = 9;
  f.set("tokenizer.ggml.token_type", GgufArray::of(types));
  expect_error(f, {"tokenizer.ggml.token_type[5] = 9"});
  f.set("tokenizer.ggml.token_type", GgufArray::of(std::vector<uint32_t>(256, 1)));
  expect_error(f, {"tokenizer.ggml.token_type"});
}

TEST(TokenizerErrors, SpecialIdsOutOfRange) {
  GgufFile f = toy_gguf({});
  f.set("tokenizer.ggml.eos_token_id", uint32_t{1000});
  expect_error(f, {"tokenizer.ggml.eos_token_id = 1000", "n_vocab 256"});
  f = toy_gguf({});
  f.set("tokenizer.ggml.bos_token_id", int32_t{-1});
  expect_error(f, {"tokenizer.ggml.bos_token_id = -1"});
}

TEST(TokenizerErrors, NotByteLevel) {
  GgufFile f = toy_gguf({});
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(b == 'A' ? "[PAD65]" : byte_to_unicode(static_cast<uint8_t>(b)));
  f.set("tokenizer.ggml.tokens", GgufArray::of(tokens));
  expect_error(f, {"no normal token 'A' for byte 0x41"});
  f.set("tokenizer.ggml.tokens", GgufArray::of(std::vector<std::string>{}));
  expect_error(f, {"tokenizer.ggml.tokens is empty"});
}

// ---------------------------------------------------------------- UTF-8 helpers

TEST(TokenizerUtf8, SequenceLengthRejectsInvalidForms) {
  EXPECT_EQ(utf8_sequence_length("a"), 1u);
  EXPECT_EQ(utf8_sequence_length("\xc3\xa9"), 2u);
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac"), 3u);
  EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x98\x80"), 4u);
  EXPECT_EQ(utf8_sequence_length("\xc0\x80"), 0u);          // overlong
  EXPECT_EQ(utf8_sequence_length("\xed\xa0\x80"), 0u);      // surrogate
  EXPECT_EQ(utf8_sequence_length("\xf4\x90\x80\x80"), 0u);  // > U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xe2\x82"), 0u);          // cut short
  EXPECT_EQ(utf8_sequence_length("\x80"), 0u);
}

TEST(TokenizerUtf8, StreamHoldsIncompleteTails) {
  Utf8Stream s;
  const std::string text = "a\xe2\x82\xac\xf0\x9f\x98\x80";  // "a€😀"
  std::string out;
  std::vector<size_t> emitted;
  for (char c : text) {
    const std::string chunk = s.push(std::string(1, c));
    emitted.push_back(chunk.size());
    out += chunk;
  }
  EXPECT_EQ(out, text);
  EXPECT_EQ(emitted, (std::vector<size_t>{1, 0, 0, 3, 0, 0, 0, 4}));
  EXPECT_EQ(s.pending(), 0u);

  EXPECT_EQ(s.push("\xff"), "\xff");  // never valid: passed through at once
  EXPECT_EQ(s.push("\xe2\x82"), "");  // may still complete
  EXPECT_EQ(s.push("A"),
            "\xe2\x82"
            "A");  // cannot complete any more
  EXPECT_EQ(s.push("x\xf0\x9f"), "x");
  EXPECT_EQ(s.flush(), "\xf0\x9f");  // end of stream: the partial tail as it is
  EXPECT_EQ(s.pending(), 0u);
}

}  // namespace
}  // namespace gl::test
