// utf8.cpp - UTF-8 validation, the GPT-2 byte-to-unicode table and Utf8Stream.
#include "utf8.h"

#include <array>
#include <cstdint>

#include "ggml-lite/models/tokenizer.h"

namespace gl {
namespace {

// What a lead byte promises (RFC 3629): sequence length and the allowed range of the second
// byte, which is where overlong forms, surrogates and code points above U+10FFFF are excluded.
struct Lead {
  uint8_t len;  // 0: not a lead byte
  uint8_t lo, hi;
};

constexpr Lead lead_of(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many leading bytes of s (at most the lead's length) are consistent with its lead byte.
size_t consistent_prefix(std::string_view s, const Lead& lead) {
  size_t i = 1;
  for (; i < lead.len && i < s.size(); ++i) {
    const auto c = static_cast<uint8_t>(s[i]);
    const uint8_t lo = i == 1 ? lead.lo : 0x80, hi = i == 1 ? lead.hi : 0xBF;
    if (c < lo || c > hi) break;
  }
  return i;
}

// Printable Latin-1 bytes stand for themselves; the 68 others take U+0100.. in byte order.
constexpr bool self_printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

constexpr std::array<uint16_t, 256> kByteToCodepoint = [] {
  std::array<uint16_t, 256> t{};
  uint16_t next = 256;
  for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = self_printable(b) ? static_cast<uint16_t>(b) : next++;
  return t;
}();

constexpr size_t kMappedCodepoints = 256 + 68;
constexpr std::array<int16_t, kMappedCodepoints> kCodepointToByte = [] {
  std::array<int16_t, kMappedCodepoints> t{};
  for (auto& v : t) v = -1;
  for (int b = 0; b < 256; ++b) t[kByteToCodepoint[static_cast<size_t>(b)]] = static_cast<int16_t>(b);
  return t;
}();

uint32_t decode_codepoint(std::string_view seq) {
  const auto b0 = static_cast<uint8_t>(seq[0]);
  if (seq.size() == 1) return b0;
  uint32_t cp = b0 & (0x7Fu >> seq.size());
  for (size_t i = 1; i < seq.size(); ++i) cp = (cp << 6) | (static_cast<uint8_t>(seq[i]) & 0x3Fu);
  return cp;
}

}  // namespace

size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const Lead lead = lead_of(static_cast<uint8_t>(s[0]));
  if (lead.len == 0 || s.size() < lead.len) return 0;
  return consistent_prefix(s, lead) == lead.len ? lead.len : 0;
}

std::string byte_to_unicode(uint8_t b) {
  const uint16_t cp = kByteToCodepoint[b];
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

namespace detail {

bool utf8_incomplete(std::string_view s) {
  if (s.empty()) return false;
  const Lead lead = lead_of(static_cast<uint8_t>(s[0]));
  return lead.len > s.size() && consistent_prefix(s, lead) == s.size();
}

std::string byte_level_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text.substr(i));
    if (n == 0) {  // not UTF-8: keep the byte
      out.push_back(text[i++]);
      continue;
    }
    const uint32_t cp = decode_codepoint(text.substr(i, n));
    if (cp < kMappedCodepoints && kCodepointToByte[cp] >= 0) {
      out.push_back(static_cast<char>(kCodepointToByte[cp]));
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace detail

std::string Utf8Stream::push(std::string_view bytes) {
  tail_.append(bytes);
  size_t i = 0;
  while (i < tail_.size()) {
    const std::string_view rest = std::string_view(tail_).substr(i);
    if (const size_t n = utf8_sequence_length(rest); n > 0) {
      i += n;
    } else if (detail::utf8_incomplete(rest)) {
      break;  // may complete with the next push
    } else {
      ++i;  // can never become valid: pass it through
    }
  }
  std::string out = tail_.substr(0, i);
  tail_.erase(0, i);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(tail_);
  return out;
}

}  // namespace gl
