// UTF-8 normalisation: valid text passes unchanged, each invalid subpart becomes one U+FFFD.

#include "linformer/data/utf8.h"

#include <gtest/gtest.h>

namespace linformer::data {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string clean(std::string_view in, int64_t* replaced = nullptr) {
  std::string out;
  const int64_t n = append_valid_utf8(in, out);
  if (replaced) *replaced = n;
  return out;
}

TEST(Utf8, ValidTextIsUnchanged) {
  for (const std::string s : {"", "plain ascii", "caf\xC3\xA9", "\xE2\x96\x81word", "\xF0\x9F\x98\x80 emoji",
                              "\xF4\x8F\xBF\xBF" /* U+10FFFF */}) {
    int64_t n = -1;
    EXPECT_EQ(clean(s, &n), s);
    EXPECT_EQ(n, 0);
    EXPECT_TRUE(is_valid_utf8(s)) << s;
  }
}

TEST(Utf8, InvalidBytesAreReplacedAndCounted) {
  struct Case {
    std::string in, out;
    int64_t replaced;
  };
  const Case cases[] = {
      {"caf\xE9!", "caf" + kFffd + "!", 1},                    // Latin-1 byte
      {"\x80\x80", kFffd + kFffd, 2},                          // stray continuation bytes
      {"\xC0\xAF", kFffd + kFffd, 2},                          // overlong '/' (C0 is never valid)
      {"\xE0\x80\xAF", kFffd + kFffd + kFffd, 3},              // overlong 3-byte form
      {"\xED\xA0\x80", kFffd + kFffd + kFffd, 3},              // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd, 4},  // above U+10FFFF
      {"a\xE2\x96", "a" + kFffd, 1},                           // truncated at the end: one maximal subpart
      {"\xE2\x96x", kFffd + "x", 1},                           // truncated before ASCII
      {"\xFF", kFffd, 1},
  };
  for (const auto& c : cases) {
    int64_t n = -1;
    EXPECT_EQ(clean(c.in, &n), c.out) << "input bytes: " << c.in.size();
    EXPECT_EQ(n, c.replaced) << "input bytes: " << c.in.size();
    EXPECT_FALSE(is_valid_utf8(c.in));
    EXPECT_TRUE(is_valid_utf8(c.out));
  }
}

}  // namespace
}  // namespace linformer::data
