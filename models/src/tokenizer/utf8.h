// utf8.h - UTF-8 and GPT-2 byte-level helpers shared by the tokenizer sources (not installed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gl::detail {

// True when s is a proper prefix of some valid UTF-8 sequence (a lead byte and continuation
// bytes that are still consistent with it, but too few of them).
bool utf8_incomplete(std::string_view s);

// The raw bytes a byte-level token string stands for: each character of the GPT-2 mapping
// becomes its byte; any other character (or invalid byte) is kept as it is.
std::string byte_level_decode(std::string_view token_text);

}  // namespace gl::detail
