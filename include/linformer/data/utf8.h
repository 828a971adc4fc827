#pragma once
// Text normalisation to valid UTF-8.
//
// Corpora in the wild contain Latin-1 bytes, truncated sequences and stray
// surrogates. They are replaced, never fatal: each maximal invalid subpart
// (Unicode §3.9, "U+FFFD substitution of maximal subparts") becomes one U+FFFD,
// and the caller counts the replacements for the summary.

#include <cstdint>
#include <string>
#include <string_view>

namespace linformer::data {

// Appends `in` to `out` with every invalid sequence replaced by U+FFFD;
// returns the number of replacements.
int64_t append_valid_utf8(std::string_view in, std::string& out);

// True if `in` is entirely valid UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view in);

}  // namespace linformer::data
